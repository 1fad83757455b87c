"""Erasure that holds in an immutable log (crypto-shredding, issue 26): an administrator erases a memory block or a
session's free text; one event says who, when, why and which keys, the data keys are destroyed, derived copies
purged.

The ciphertext the chain and the tree hash stays and verifies but can no longer be read
(:meth:`ledger.core.data_keys.DataKeys.destroy`). Derived copies purged: the search index's rows (FTS5 segments
merged), the embedding vectors (overwritten), every projection snapshot (read models fold again from the log, where
the text now reads as erased); on SQLite every delete zeroed what it removed (``secure_delete`` on every connection)
and the WAL is checkpointed and truncated.

A block or session written before encryption keeps its text in the log's bytes: the result says so
(``plaintext_in_log`` / ``plaintext_events``) and the documented way out is ``compliance-ledger carry``
(:mod:`ledger.audit.carry`): the live memory moved to a new, encrypted ledger, the move signed by this one's key.
"""

from __future__ import annotations

from ledger.audit.report import ErasureResult
from ledger.core import access, free_text
from ledger.core.errors import Erased, InvalidInput, NotFound
from ledger.core.events import MemoryErased, MemoryRemembered, RecordedEvent, SessionErased, SessionStarted
from ledger.kernel import Actor, Kernel
from ledger.memory import decisions as memory
from ledger.memory.handlers import MemoryCommands

LEGACY_NOTE = (
    "written before encryption: its text stays in the log's bytes (the chain covers them); derived copies were "
    "purged. To remove it from the log too, move the ledger to a new, encrypted one with `compliance-ledger carry` "
    "(run on a new ledger: `compliance-ledger --home NEW_HOME carry --from-home OLD_HOME --yes`; erased blocks and "
    "every session stay behind, and a checkpoint note signed by this ledger's key records the move), then destroy "
    "this database once its retention ends (README 'Erasure')."
)
_ERASED_HINT = "the text was erased and cannot be read again; nothing is left to show"


def erased_error(what: str, rec: RecordedEvent) -> Erased:
    """The refusal for erasing again what ``rec`` (a ``MemoryErased`` / ``SessionErased``) erased: by, when,
    why."""
    e = rec.event
    assert isinstance(e, MemoryErased | SessionErased)
    at = rec.recorded_at.isoformat().replace("+00:00", "Z")
    by = rec.agent or "?"
    return Erased(f"{what} was erased by {by} at {at}: {e.reason}", _ERASED_HINT, by=by, at=at, reason=e.reason)


class ErasureCommands:
    """``erase_block`` and ``erase_session``, administrators only."""

    def __init__(self, kernel: Kernel, memory_commands: MemoryCommands) -> None:
        self.kernel = kernel
        self.memory = memory_commands

    def erase_block(self, actor: Actor, block_id: str, reason: str) -> ErasureResult:
        """Erase a memory block: its text can never be read again, and no read model, index or snapshot keeps it."""
        access.require_admin(actor, "erase memory blocks")
        reason = self._reason(reason)
        if not isinstance(block_id, str) or not block_id.strip():
            raise InvalidInput("block_id is empty", "send a block id, e.g. from `compliance-ledger memory list`")
        stream = memory.stream_for(block_id.strip())

        def attempt() -> ErasureResult:
            state = self.kernel.store.load_stream(stream)
            first = state.events[0] if state.events else None
            if first is None or not isinstance(first.event, MemoryRemembered):
                raise NotFound(f"block {block_id} does not exist", "send an id from `compliance-ledger memory list`")
            done = next((r for r in state.events if isinstance(r.event, MemoryErased)), None)
            if done is not None:
                raise erased_error(f"block {block_id}", done)
            plaintext = "enc" not in first.meta
            kids = self.kernel.keys.key_ids(stream)
            event = MemoryErased(block_id=block_id, reason=reason, key_ids=kids, plaintext_in_log=plaintext)
            [rec] = self.kernel.append(actor, stream, state.version, [event], self.kernel.meta(actor))
            return self._result(rec, block_id=block_id, kids=kids, plaintext=1 if plaintext else 0)

        result = self.kernel.retrying(attempt)
        self._shred(stream)
        return result

    def erase_session(self, actor: Actor, session_id: str, reason: str) -> ErasureResult:
        """Erase a session's free text (focus, search and recall queries, proofs): the session and its facts stay
        (tokens, stamps, counts), their text reads as erased."""
        access.require_admin(actor, "erase sessions")
        reason = self._reason(reason)
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInput("session_id is empty", "send a session id, e.g. from `compliance-ledger report`")
        stream = f"session:{session_id.strip()}"

        def attempt() -> ErasureResult:
            state = self.kernel.store.load_stream(stream)
            if not state.events or not isinstance(state.events[0].event, SessionStarted):
                raise NotFound(f"session {session_id} does not exist", "send a session id from the reports")
            kids = self.kernel.keys.key_ids(stream)
            done = next((r for r in reversed(state.events) if isinstance(r.event, SessionErased)), None)
            if done is not None and not kids:
                raise erased_error(f"session {session_id}", done)
            plaintext = sum(1 for r in state.events if "enc" not in r.meta and _has_free_text(r))
            event = SessionErased(session_id=session_id, reason=reason, key_ids=kids, plaintext_events=plaintext)
            [rec] = self.kernel.append(actor, stream, state.version, [event], self.kernel.meta(actor))
            return self._result(rec, session_id=session_id, kids=kids, plaintext=plaintext)

        result = self.kernel.retrying(attempt)
        self._shred(stream)
        return result

    # --- helpers --------------------------------------------------------------------------------------------

    def _reason(self, reason: str) -> str:
        return memory.check_text(
            reason,
            "reason",
            empty_hint="say why, e.g. 'erasure request #12 (GDPR art. 17)' (no personal data: it stays readable)",
            too_long_hint="send a shorter reason",
            limit=memory.MAX_REASON_CHARS,
        )

    def _shred(self, subject: str) -> None:
        """Destroy the subject's keys, then purge every derived copy and scrub the WAL (SQLite) or vacuum the derived
        tables (PostgreSQL)."""
        self.kernel.keys.destroy(subject)
        self.kernel.index.catch_up()  # the index drops the block's rows (FTS5 segments merged)
        if self.kernel.index.semantic is not None:
            self.kernel.index.semantic.catch_up()  # the vector overwritten
        self.kernel.snapshots.drop()  # read models fold again from the log, where the text reads as erased
        self.kernel.keys.scrub()

    def _result(
        self,
        rec: RecordedEvent,
        *,
        kids: list[str],
        plaintext: int,
        block_id: str | None = None,
        session_id: str | None = None,
    ) -> ErasureResult:
        e = rec.event
        assert isinstance(e, MemoryErased | SessionErased)
        return ErasureResult(
            block_id=block_id,
            session_id=session_id,
            erased_by=rec.agent or "?",
            erased_at=rec.recorded_at,
            reason=e.reason,
            position=rec.position,
            key_ids=kids,
            plaintext_in_log=plaintext > 0,
            plaintext_events=plaintext,
            note=LEGACY_NOTE if plaintext else None,
        )


def _has_free_text(rec: RecordedEvent) -> bool:
    return any(text for _, text in free_text.texts(rec.event, ("free",)))
