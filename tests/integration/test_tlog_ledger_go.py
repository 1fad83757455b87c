"""A real ledger's transparency log checked by the Go team's sumdb code (tests/go_support.py), on SQLite and
PostgreSQL: its checkpoint opens with ``note.Open`` under its own vkey, every inclusion proof passes
``tlog.CheckRecord``, the consistency proof between two of its checkpoints passes ``tlog.CheckTree``, and the bundles
``tlog prove`` writes verify in Go."""

from __future__ import annotations

from ledger.core.tlog import note
from ledger.service import Ledger
from tests.go_support import GoChecker, b64
from tests.integration.test_tlog_ledger import grow


def test_go_opens_the_ledgers_notes_and_checks_its_proofs(ledger: Ledger, go_checker: GoChecker) -> None:
    grow(ledger, 6)
    first = ledger.sign_tlog_checkpoint()
    grow(ledger, 11, "more")
    second = ledger.sign_tlog_checkpoint()
    vkey = ledger.tlog_vkey()
    log = note.parse_vkey(vkey)
    a = note.open_checkpoint(first.note, log).checkpoint
    b = note.open_checkpoint(second.note, log).checkpoint

    opened = go_checker.check("note", vkeys=[vkey], note=second.note)
    assert opened["ok"] and opened["signers"] == [ledger.tlog_origin()]
    assert opened["text"] == b.text.decode()

    checks = []
    for position in range(1, b.size + 1):
        leaf, proof = ledger.tlog_inclusion(position - 1, b.size)
        checks.append(
            {
                "kind": "record",
                "size": b.size,
                "root": b64(b.root),
                "index": position - 1,
                "data": b64(leaf),
                "proof": [b64(h) for h in proof],
            }
        )
    checks.append(
        {
            "kind": "tree",
            "old_size": a.size,
            "old_root": b64(a.root),
            "size": b.size,
            "root": b64(b.root),
            "proof": [b64(h) for h in ledger.tlog_consistency(a.size, b.size)],
        }
    )
    for position in (1, a.size, b.size):
        checks.append(
            {
                "kind": "bundle",
                "bundle": ledger.tlog_bundle(position),
                "vkey": vkey,
                "data_hex": ledger.store.leaf_data(position).hex(),
            }
        )
    answers = go_checker.check_many(checks)
    assert [x["ok"] for x in answers] == [True] * len(checks), [x for x in answers if not x["ok"]][:3]
    # and Go refuses a proof of the wrong event
    wrong = dict(checks[0], data=b64(ledger.store.leaf_data(2)))
    assert not go_checker.check_many([wrong])[0]["ok"]
