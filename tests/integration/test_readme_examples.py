"""What README.md shows matches what the ledger does: the gate example's receipt has the scheme a PASS carries now,
and the stop hook's input fields the README says are ignored are ignored (recorded as no problem)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ledger.hooks.decisions import STOP, read_input
from ledger.service import Actor
from tests.conftest import LedgerFactory

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
WHO = Actor("alice", "mcp")


def test_the_gate_examples_receipt_has_the_scheme_of_a_receipt_issued_now(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger()
    sid = ledger.clock_in(WHO, "dev").session_id
    ledger.search(WHO, sid, "anything")
    issued = ledger.assert_compliance(WHO, sid).receipt
    assert issued is not None

    shown = re.findall(r'"receipt": "(clr\d+)\.', README)

    assert shown and set(shown) == {issued.split(".")[0]}


def test_the_stop_hook_fields_the_readme_calls_ignored_are_ignored() -> None:
    section = README[README.index("### Stop hooks") : README.index("## The search-token compliance gate")]
    start = section.index("Fields the ledger does not use")
    sentence = section[start : section.index("recorded as nothing", start)]
    named = re.findall(r"`([a-z_]+)`", sentence)
    assert named, sentence
    documented = {"session_id": "abc-123", "hook_event_name": STOP, "stop_hook_active": False}

    for field in named:
        given = read_input(json.dumps({**documented, field: "/somewhere"}), STOP)
        assert given.problem is None and given.client_session == "abc-123", field
    assert "extra fields" not in section
