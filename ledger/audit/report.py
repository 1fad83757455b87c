"""What the audit commands return: a checkpoint checked against the log, and projection states replayed to a
moment."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, Field

from ledger.audit import checkpoints

# The signed checkpoint kept outside the database, and a checkpoint read from a file or URL.
from ledger.audit.checkpoints import Checkpoint as Checkpoint
from ledger.audit.checkpoints import Source as Source
from ledger.core.errors import NotFound
from ledger.memory.reads import BlockSource, score_one, stats_of
from ledger.memory.report import BlockOut, MemoryStats
from ledger.sessions.report import AgentReport, SessionState
from projections.active_hours import IDLE_TIMEOUT, ActiveClock
from projections.memory import BlockView
from projections.runner import COMPLIANCE, SESSIONS, ProjectionRunner


class ErasureResult(BaseModel):
    """A block or a session's free text erased (``MemoryErased`` / ``SessionErased`` at ``position``): who, when,
    why, and the data keys destroyed. ``plaintext_in_log``: some of it was written before encryption, so its text
    stays in the log's bytes (``note`` says what to do)."""

    block_id: str | None = None
    session_id: str | None = None
    erased_by: str
    erased_at: _dt.datetime
    reason: str
    position: int
    key_ids: list[str] = Field(description="the data keys destroyed")
    plaintext_in_log: bool
    plaintext_events: int = Field(description="events of it written before encryption (their text stays in the log)")
    note: str | None = None


@dataclass(frozen=True)
class CarryResult:
    """An older ledger's live memory carried into this one (``LedgerCarried`` at ``position``): the old ledger's
    origin, the checkpoint note of its head its key signed (``vkey`` opens it), the blocks carried (``archived``
    of them archived here, as they were there) and the old block ids left out, by why (``without``, ``erased``,
    ``forgotten``, ``present``: this ledger already held the text)."""

    origin: str
    checkpoint: str
    vkey: str
    head_position: int
    head_hash: str
    position: int
    carried: int
    archived: int
    left_out: dict[str, list[str]]
    resumed: int = 0  # blocks an earlier, interrupted carry from the same ledger had already carried

    @property
    def left_out_count(self) -> int:
        return sum(len(ids) for ids in self.left_out.values())


@dataclass(frozen=True)
class CheckpointFinding:
    """One checkpoint checked against the log: ``problem`` is None when the log still holds it."""

    where: str
    checkpoint: checkpoints.Checkpoint | None
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class Replay:
    """Projection states as of a moment, and the last position folded."""

    runner: ProjectionRunner
    moment: _dt.datetime
    position: int
    sources: Callable[[Sequence[BlockView]], Mapping[str, BlockSource]]  # blocks' texts and provenance, from the log
    idle_timeout: _dt.timedelta = IDLE_TIMEOUT
    unreadable: int = 0  # events folded whose free text could not be decrypted (erased): their text was skipped

    def sessions(self) -> list[SessionState]:
        views = self.runner.state(SESSIONS.name).values()
        return [SessionState.at(v, self.moment, self.position) for v in views if v is not None]

    def compliance(self) -> list[AgentReport]:
        return [AgentReport.of(a) for _, a in sorted(self.runner.state(COMPLIANCE.name).items())]

    def active_clock(self) -> ActiveClock:
        return self.runner.active_clock(self.moment, self.idle_timeout)

    def memory(self) -> MemoryStats:
        """Blocks, archive, edges, curates and active hours as of the replayed moment."""
        return stats_of(self.runner.memory(), self.active_clock())

    def block(self, block_id: str) -> BlockOut:
        """One block's state and score breakdown as of the replayed moment."""
        graph = self.runner.memory()
        block = graph.blocks.get(block_id)
        if block is None:
            raise NotFound(f"block {block_id} does not exist at that point", "check the id and the time")
        return BlockOut.of(score_one(graph, self.active_clock(), block), *self.sources([block])[block_id])
