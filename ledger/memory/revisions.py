"""Memory revisions: supersede a block with a newer text, or (administrators) forget one.

Superseding keeps history: the new text is remembered as a new block (with the old block's tags and category),
then ``MemorySuperseded`` on the old block's stream points search and recall at it. Forgetting appends
``MemoryForgotten``: the block leaves search, recall and the read models, and the event stays in the log.
"""

from __future__ import annotations

from ledger.core.errors import InvalidInput, NotFound
from ledger.core.events import MemoryForgotten, MemoryRemembered, MemorySuperseded
from ledger.kernel import Actor, Kernel
from ledger.keys import access
from ledger.memory import decisions as memory
from ledger.memory.reads import MemoryReads
from ledger.memory.report import ForgetResult, SupersedeResult
from ledger.sessions.grants import SessionGrants
from projections.memory import BlockView


class MemoryRevisions(MemoryReads):
    """Supersede and forget, on the live memory graph of :class:`~ledger.memory.reads.MemoryReads`."""

    grants: SessionGrants

    def __init__(self, kernel: Kernel) -> None:
        super().__init__(kernel)

    def supersede(self, actor: Actor, block_id: str, content: str, session_id: str | None = None) -> SupersedeResult:
        """Replace a live block by ``content``: a new block with the same tags and category that search and
        recall find instead; the old block and its history stay readable."""
        content = memory.check_content(content)
        new_id = memory.block_id_for(content)
        if new_id == block_id:
            raise InvalidInput(
                f"the content is the text of block {block_id} already", "send the corrected or updated text"
            )
        old = self._revisable(block_id)
        session = self.grants.open_if(actor, session_id)
        new_stream = self.kernel.store.load_stream(memory.stream_for(new_id))
        if new_stream.version:
            raise InvalidInput(
                f"block {new_id} already holds this content",
                f"send different content, or forget {block_id} if {new_id} replaces it",
            )
        remembered = MemoryRemembered(
            block_id=new_id, content=content, tags=list(old.tags), category=old.category, session_id=session_id
        )
        self.kernel.append(actor, new_stream.stream, 0, [remembered], self.grants.meta(actor, session))

        def attempt() -> SupersedeResult:
            self._revisable(block_id)
            stream = self.kernel.store.load_stream(memory.stream_for(block_id))
            event = MemorySuperseded(block_id=block_id, by_block_id=new_id, session_id=session_id)
            [rec] = self.kernel.append(actor, stream.stream, stream.version, [event], self.grants.meta(actor, session))
            return SupersedeResult(block_id=block_id, new_block_id=new_id, tags=list(old.tags), position=rec.position)

        return self.kernel.retrying(attempt)

    def forget(self, actor: Actor, block_id: str, reason: str) -> ForgetResult:
        """Administrators only: take a block out of search, recall and the read models, saying why."""
        access.require_admin(actor, "forget memory blocks")
        reason = memory.check_text(
            reason,
            "reason",
            empty_hint="say why the block is forgotten, e.g. 'personal data, erasure request 2026-11-03'",
            too_long_hint="send a shorter reason",
            limit=memory.MAX_REASON_CHARS,
        )

        def attempt() -> ForgetResult:
            with self._memory_lock:
                graph, _ = self._live()
                if block_id not in graph.blocks:
                    raise NotFound(
                        f"block {block_id} does not exist (or was forgotten already)",
                        "send an id from `compliance-ledger memory list` or memory_search",
                    )
            stream = self.kernel.store.load_stream(memory.stream_for(block_id))
            event = MemoryForgotten(block_id=block_id, reason=reason)
            [rec] = self.kernel.append(actor, stream.stream, stream.version, [event], self.kernel.meta(actor))
            return ForgetResult(block_id=block_id, reason=reason, position=rec.position)

        return self.kernel.retrying(attempt)

    def _revisable(self, block_id: str) -> BlockView:
        with self._memory_lock:
            graph, _ = self._live()
            block = graph.blocks.get(block_id) if isinstance(block_id, str) else None
        if block is None:
            raise NotFound(
                f"block {block_id} does not exist", "send an id from memory_search, memory_recall or memory list"
            )
        if block.superseded_by is not None:
            raise InvalidInput(
                f"block {block_id} was superseded by {block.superseded_by}", f"supersede {block.superseded_by}"
            )
        if block.archived:
            raise InvalidInput(
                f"block {block_id} was archived by curate", "remember the new text with memory_remember instead"
            )
        return block
