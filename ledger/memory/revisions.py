"""Memory revisions: supersede a block with a newer text; administrators archive, restore and forget blocks and
regenerate the constitution.

Superseding keeps history: the new text is remembered as a new block (with the old block's tags and category),
then ``MemorySuperseded`` on the old block's stream points search and recall at it. Forgetting appends
``MemoryForgotten``: the block leaves search, recall and the read models, and the event stays in the log.
Archiving (``MemoryArchived``) takes a block out of search and recall with a reason, restorably; restoring
(``MemoryRestored``) brings an archived or superseded block back. The constitution (blocks tagged
``self/constitutional``) changes only by a person's hand (seed 002: "constitutional amendment requires explicit
human action"): superseding, archiving or restoring one needs an administrator, and
:meth:`MemoryRevisions.regenerate_constitution` (``init --force``) makes the live constitution the shipped ten
blocks again.
"""

from __future__ import annotations

import contextlib

from ledger.core import access
from ledger.core.errors import ConcurrencyError, InvalidInput, NotFound
from ledger.core.events import MemoryArchived, MemoryForgotten, MemoryRemembered, MemoryRestored, MemorySuperseded
from ledger.kernel import Actor
from ledger.memory import constitution
from ledger.memory import decisions as memory
from ledger.memory.reads import MemoryReads
from ledger.memory.report import ArchiveResult, ConstitutionResult, ForgetResult, RestoreResult, SupersedeResult
from ledger.sessions.grants import SessionGrants
from projections.memory import BlockView


class MemoryRevisions(MemoryReads):
    """Supersede and forget, on the live memory graph of :class:`~ledger.memory.reads.MemoryReads`."""

    grants: SessionGrants

    def supersede(self, actor: Actor, block_id: str, content: str, session_id: str | None = None) -> SupersedeResult:
        """Replace a live block by ``content``: a new block with the same tags and category that search and
        recall find instead; the old block and its history stay readable."""
        content = self.kernel.screen({"content": memory.check_content(content)})["content"]  # before the new id
        new_id = self.new_block_id(content)
        if new_id == block_id:
            raise InvalidInput(
                f"the content is the text of block {block_id} already", "send the corrected or updated text"
            )
        old = self._revisable(block_id)
        if old.constitutional:
            access.require_admin(actor, "amend the constitution (supersede a self/constitutional block)")
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
            with self._live() as (graph, _):
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

    def archive(self, actor: Actor, block_id: str, reason: str) -> ArchiveResult:
        """Administrators only: take a live block out of search and recall, saying why; it can be restored."""
        access.require_admin(actor, "archive memory blocks")
        reason = self._reason(reason, "e.g. 'amended: replaced by a clearer principle'")

        def attempt() -> ArchiveResult:
            self._revisable(block_id)
            stream = self.kernel.store.load_stream(memory.stream_for(block_id))
            event = MemoryArchived(block_id=block_id, reason=reason)
            [rec] = self.kernel.append(actor, stream.stream, stream.version, [event], self.kernel.meta(actor))
            return ArchiveResult(block_id=block_id, reason=reason, position=rec.position)

        return self.kernel.retrying(attempt)

    def restore(self, actor: Actor, block_id: str, reason: str) -> RestoreResult:
        """Administrators only: bring an archived or superseded block back into search and recall (a block that
        replaced it stays; archive it too if it should go). A forgotten block was erased and stays so."""
        access.require_admin(actor, "restore memory blocks")
        reason = self._reason(reason, "e.g. 'the amendment was wrong; back to the shipped principle'")

        def attempt() -> RestoreResult:
            with self._live() as (graph, _):
                block = graph.blocks.get(block_id) if isinstance(block_id, str) else None
            if block is None:
                raise NotFound(
                    f"block {block_id} does not exist (a forgotten block was erased and cannot be restored)",
                    "send an id from `compliance-ledger memory list --all`",
                )
            if block.live:
                raise InvalidInput(f"block {block_id} is not archived or superseded", "there is nothing to restore")
            stream = self.kernel.store.load_stream(memory.stream_for(block_id))
            event = MemoryRestored(block_id=block_id, reason=reason)
            [rec] = self.kernel.append(actor, stream.stream, stream.version, [event], self.kernel.meta(actor))
            return RestoreResult(block_id=block_id, reason=reason, position=rec.position)

        return self.kernel.retrying(attempt)

    def regenerate_constitution(self, actor: Actor) -> ConstitutionResult:
        """Administrators only (``init --force``): make the live constitution the shipped ten blocks again.

        A shipped block never stored is remembered; one superseded or archived is restored; a live
        ``self/constitutional`` block that is not shipped (an amendment, an addition) is archived. Each change is
        its own event, so running it again changes nothing. A shipped block an administrator forgot stays erased.
        """
        access.require_admin(actor, "regenerate the constitution")
        why = "init --force: the constitution regenerated to the shipped blocks"
        shipped = {memory.block_id_for(b.content): b for b in constitution.CONSTITUTION}
        result = ConstitutionResult(
            created=[], restored=[], archived=[], unchanged=[], forgotten=[], constitutional_blocks=0
        )
        with self._live() as (graph, _):
            views = {block_id: graph.blocks.get(block_id) for block_id in shipped}
            extras = [
                b.block_id for b in graph.live_blocks(constitution.CONSTITUTIONAL_TAG) if b.block_id not in shipped
            ]
        for block_id, block in shipped.items():
            view = views[block_id]
            if view is not None:
                if view.live:
                    result.unchanged.append(block_id)
                else:
                    self.restore(actor, block_id, why)
                    result.restored.append(block_id)
                continue
            stream = self.kernel.store.load_stream(memory.stream_for(block_id))
            if stream.version:
                result.forgotten.append(block_id)
                continue
            event = memory.decide_remember(
                stream_version=0, block_id=block_id, content=block.content, tags=list(block.tags), session_id=None
            )
            with contextlib.suppress(ConcurrencyError):  # another process stored it at the same moment
                self.kernel.append(actor, stream.stream, 0, [event], self.kernel.meta(actor))
            result.created.append(block_id)
        for block_id in extras:
            self.archive(actor, block_id, why)
            result.archived.append(block_id)
        with self._live() as (graph, _):
            result.constitutional_blocks = sum(1 for _ in graph.live_blocks(constitution.CONSTITUTIONAL_TAG))
        return result

    def _reason(self, reason: str, example: str) -> str:
        return memory.check_text(
            reason,
            "reason",
            empty_hint=f"say why, {example}",
            too_long_hint="send a shorter reason",
            limit=memory.MAX_REASON_CHARS,
        )

    def _revisable(self, block_id: str) -> BlockView:
        with self._live() as (graph, _):
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
                f"block {block_id} is archived", "remember the new text with memory_remember instead, or restore it"
            )
        return block
