"""The search-token compliance gate (seed 000): a search issues a one-time token; a stamp consumes it."""

from __future__ import annotations

import datetime as _dt

from ledger.core.events import ComplianceRefused, ComplianceStamped, MemorySearched
from ledger.core.request_ids import check_request_id as check_request_id
from ledger.sessions.locks import locked_message
from projections.sessions import SessionView

STAMP_FOUND = "[COMPLIANCE] YES I HAVE SEARCHED, FOUND {n} RELEVANT MEMORIES, BROUGHT THEM TO AGENT."
STAMP_ZERO = "[COMPLIANCE] YES I HAVE SEARCHED, I HAVE FOUND ZERO RELEVANT MEMORIES, NOTHING WAS BROUGHT TO AGENT."

GATE_CLOSED = "⛔ GATE CLOSED."
MSG_NO_SEARCH = (
    f"{GATE_CLOSED} You have not searched memory in this turn. "
    "You MUST call 'memory_search' before I can issue the Compliance Stamp."
)
MSG_CONSUMED = (
    f"{GATE_CLOSED} Your last memory search has already earned its stamp; each search earns one. "
    "You MUST call 'memory_search' again before I can issue the Compliance Stamp."
)
MSG_EXPIRED = (
    f"{GATE_CLOSED} Your last memory search expired at {{expired}}. "
    "You MUST call 'memory_search' again before I can issue the Compliance Stamp."
)
MSG_ANCHOR_REQUIRED = (
    f"{GATE_CLOSED} This session holds no validated Odyssean Anchor. "
    "You MUST call 'odyssean_anchor' with a valid proof before I can issue the Compliance Stamp."
)
MSG_STORE_DOWN = (
    f"{GATE_CLOSED} The ledger store is unreachable, so no stamp can be issued. "
    "Retry when the ledger is back; the gate stays closed until then."
)

MSG_STORE_BUSY = (
    f"{GATE_CLOSED} The ledger is busy (its write lock was held too long), so nothing was recorded and your "
    "token is unused. Send the same assert_compliance again (with the same request_id, if you sent one)."
)

# Seed 000, Phase 2: the grounding instruction.
GROUNDING_INSTRUCTION = (
    "You are REQUIRED to include the official Compliance Stamp at the end of your response. "
    "You cannot write this stamp yourself; you must obtain it by calling `assert_compliance`. "
    "If the tool rejects you, you must perform the search it demands."
)


def msg_anchor_locked(session_id: str) -> str:
    return f"{GATE_CLOSED} {locked_message(session_id)} No Compliance Stamp can be issued in this session until then."


def stamp_text(count: int) -> str:
    """The exact stamp for a search that found ``count`` memories."""
    return STAMP_FOUND.format(n=count) if count > 0 else STAMP_ZERO


def decide_search(
    view: SessionView,
    *,
    query: str,
    limit: int,
    result_ids: list[str],
    now: _dt.datetime,
    ttl: _dt.timedelta | None,
) -> list[MemorySearched]:
    """Record the search; it replaces any unused token with a new one."""
    return [
        MemorySearched(
            session_id=view.session_id,
            query=query,
            limit=limit,
            result_ids=result_ids,
            count=len(result_ids),
            token_expires_at=(now + ttl) if ttl else None,
        )
    ]


def decide_assert(
    view: SessionView, now: _dt.datetime, *, require_anchor: bool = False, request_id: str | None = None
) -> ComplianceStamped | ComplianceRefused:
    """PASS consumes a valid token; anything else is a recorded refusal with guidance.

    A session whose anchor is locked gets no stamp, whatever ``require_anchor`` says (seed 001: "After 2 retries,
    block further action"). With ``require_anchor`` the session must also hold a validated anchor. Both are
    checked first, so such a refusal leaves the token unused. ``request_id`` is recorded in the decision (the
    handler answers a request id it already answered from the ledger, without deciding again).
    """
    decision = _decide_assert(view, now, require_anchor=require_anchor)
    return decision.model_copy(update={"request_id": request_id}) if request_id is not None else decision


def _decide_assert(
    view: SessionView, now: _dt.datetime, *, require_anchor: bool
) -> ComplianceStamped | ComplianceRefused:
    if view.anchor_locked:
        return ComplianceRefused(
            session_id=view.session_id, reason="anchor_locked", message=msg_anchor_locked(view.session_id)
        )
    if require_anchor and not view.anchor_validated:
        return ComplianceRefused(session_id=view.session_id, reason="anchor_required", message=MSG_ANCHOR_REQUIRED)
    token = view.token
    status = view.token_status(now)
    if token is None or status == "none":
        return ComplianceRefused(session_id=view.session_id, reason="no_search", message=MSG_NO_SEARCH)
    if status == "consumed":
        return ComplianceRefused(session_id=view.session_id, reason="token_consumed", message=MSG_CONSUMED)
    if status == "expired":
        assert token.expires_at is not None
        expired = token.expires_at.strftime("%Y-%m-%d %H:%M:%S UTC")
        return ComplianceRefused(
            session_id=view.session_id, reason="token_expired", message=MSG_EXPIRED.format(expired=expired)
        )
    return ComplianceStamped(
        session_id=view.session_id,
        search_position=token.search_position,
        count=token.count,
        stamp=stamp_text(token.count),
    )
