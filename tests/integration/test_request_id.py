"""``assert_compliance(request_id=...)``: a retry of a request the ledger answered gets that answer again, read
from the ledger (so from any process), and records nothing new; a malformed id is refused and changes nothing."""

from __future__ import annotations

import pytest

from ledger.core.errors import InvalidInput
from ledger.core.events import ComplianceRefused, ComplianceStamped
from ledger.service import Actor
from tests.conftest import LedgerFactory

ALICE = Actor(agent="alice", source="mcp")
BOB = Actor(agent="bob", source="mcp")


def test_a_pass_is_answered_again_from_the_ledger_by_another_process_with_the_same_receipt(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    first = make_ledger(db_url)
    sid = first.clock_in(ALICE, "dev").session_id
    first.search(ALICE, sid, "anything")
    passed = first.assert_compliance(ALICE, sid, request_id="0f6c2b1e-5d1a-4c3b-9a57-3f1d2e4b5c6d")
    head = first.store.head()
    other_process = make_ledger(db_url)  # a fresh service: no session cache, nothing in memory
    again = other_process.assert_compliance(ALICE, sid, request_id="0f6c2b1e-5d1a-4c3b-9a57-3f1d2e4b5c6d")
    assert again.status == "PASS" and again.repeated and not passed.repeated
    assert (again.receipt, again.position, again.stamp) == (passed.receipt, passed.position, passed.stamp)
    assert other_process.store.head() == head
    recorded = first.store.get(passed.position)
    assert recorded is not None and recorded.type == "ComplianceStamped" and recorded.schema_version == 2
    assert '"request_id":"0f6c2b1e-5d1a-4c3b-9a57-3f1d2e4b5c6d"' in recorded.data_json
    assert other_process.verify_stamp(again.receipt or "").valid


def test_a_refusal_is_answered_again_unchanged_and_a_new_id_is_decided_afresh(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    ledger = make_ledger(db_url)
    sid = ledger.clock_in(ALICE, "dev").session_id
    refused = ledger.assert_compliance(ALICE, sid, request_id="r-1")
    assert refused.status == "FAIL" and refused.reason == "no_search"
    ledger.search(ALICE, sid, "anything")
    again = ledger.assert_compliance(ALICE, sid, request_id="r-1")  # the same request: the same answer
    assert again.status == "FAIL" and again.position == refused.position and again.repeated
    assert ledger.assert_compliance(ALICE, sid, request_id="r-2").status == "PASS"
    assert ledger.session_state(sid).refusals == 1


def test_the_same_request_id_in_another_session_is_another_request(make_ledger: LedgerFactory, db_url: str) -> None:
    ledger = make_ledger(db_url)
    first = ledger.clock_in(ALICE, "dev").session_id
    second = ledger.clock_in(BOB, "dev").session_id
    ledger.search(ALICE, first, "anything")
    ledger.search(BOB, second, "anything")
    a = ledger.assert_compliance(ALICE, first, request_id="same")
    b = ledger.assert_compliance(BOB, second, request_id="same")
    assert a.status == b.status == "PASS" and a.receipt != b.receipt and not b.repeated


@pytest.mark.parametrize(
    "bad", ["", " ", "has space", "x" * 129, "-leading", "nul\x00", "\ud800", "é", "a/b"], ids=repr
)
def test_a_malformed_request_id_is_refused_naming_the_field_and_records_nothing(
    make_ledger: LedgerFactory, sqlite_url: str, bad: str
) -> None:
    ledger = make_ledger(sqlite_url)
    sid = ledger.clock_in(ALICE, "dev").session_id
    ledger.search(ALICE, sid, "anything")
    head = ledger.store.head()
    with pytest.raises(InvalidInput) as caught:
        ledger.assert_compliance(ALICE, sid, request_id=bad)
    assert "request_id" in caught.value.message and "128" in caught.value.hint
    assert ledger.store.head() == head


def test_stamps_and_refusals_stored_before_request_ids_are_read_as_v2_without_one() -> None:
    from ledger.core.events import from_payload

    stamped = from_payload(
        "ComplianceStamped", 1, {"session_id": "s", "search_position": 3, "count": 1, "stamp": "[COMPLIANCE] x"}
    )
    refused = from_payload("ComplianceRefused", 1, {"session_id": "s", "reason": "no_search", "message": "m"})
    assert isinstance(stamped, ComplianceStamped) and stamped.request_id is None
    assert isinstance(refused, ComplianceRefused) and refused.request_id is None
