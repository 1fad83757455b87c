"""Each process caches session views; what other processes appended must still decide the gate."""

from __future__ import annotations

from ledger.service import Actor
from tests.conftest import LedgerFactory

WHO = Actor("alice", "mcp")


def test_a_cached_session_view_sees_a_search_and_a_stamp_made_by_another_process(
    make_ledger: LedgerFactory, db_url: str
) -> None:
    here, there = make_ledger(db_url), make_ledger(db_url)
    sid = here.clock_in(WHO, "dev").session_id
    assert here.assert_compliance(WHO, sid).status == "FAIL"  # `here` now caches the session
    there.search(WHO, sid, "anything")
    assert here.assert_compliance(WHO, sid).status == "PASS"
    there_again = there.assert_compliance(WHO, sid)
    assert there_again.status == "FAIL" and there_again.reason == "token_consumed"
    there.clock_out(WHO, sid)
    assert here.session_state(sid).ended_at is not None
    refused = here.search
    try:
        refused(WHO, sid, "anything")
    except Exception as exc:  # the closed session is seen through the cache too
        assert "clocked out" in str(exc)
    else:
        raise AssertionError("a clocked-out session accepted a search")
