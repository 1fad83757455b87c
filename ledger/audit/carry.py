"""Carrying a ledger into a new, encrypted one (issue 26, point 5): the documented, signed way out for a ledger whose
blocks were written before encryption, whose text an erasure cannot remove from the log's bytes.

``carry`` runs on a new ledger (one holding nothing but what ``init`` writes) and reads the old one, changing
nothing in it: it verifies the old log (chain, authenticators, tree, its newest kept checkpoint) and refuses one
that does not verify; the old ledger's signing key signs a C2SP checkpoint note of its head, kept nowhere in the
old database; every live block of the old ledger is remembered here, encrypted under this ledger's data keys, under
a keyed id, with its tags, category and context, its provenance in the event's metadata (``carried_from``: the old
origin; ``carried_position``, ``carried_block_id``); last, one ``LedgerCarried`` event records the note, the old
ledger's verifier key, the counts and the old block ids left out (named by ``without``, erased or forgotten there,
or whose text this ledger already holds). No session, stamp, anchor, task or key is carried: the note proves the
old history, which stays in the old database until its retention ends.

An interrupted carry is run again as it was: the blocks it carried (their ``carried_from`` names the same old
ledger) are found and skipped, the rest carried.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ledger.audit.handlers import AuditCommands, ProgressBars
from ledger.audit.report import CarryResult
from ledger.audit.transparency import TransparencyCommands
from ledger.core import access
from ledger.core.errors import Conflict, IntegrityViolation, InvalidInput, SecretInText
from ledger.core.events import (
    LedgerCarried,
    LedgerInitialised,
    MemoryArchived,
    MemoryErased,
    MemoryForgotten,
    MemoryRemembered,
    MemoryRestored,
    MemorySuperseded,
    RowKeyBound,
    SettingsApplied,
    SigningKeyBound,
)
from ledger.core.tlog import note
from ledger.kernel import Actor, Kernel
from ledger.memory import constitution
from ledger.memory import decisions as memory
from ledger.memory.handlers import MemoryCommands

CARRY_STREAM = "carried"  # the stream of the one LedgerCarried a ledger may hold
_INIT_TYPES = {cls.type_name for cls in (LedgerInitialised, SigningKeyBound, RowKeyBound, SettingsApplied)}
_BLOCK_TYPES = [
    cls.type_name
    for cls in (MemoryRemembered, MemoryForgotten, MemoryErased, MemoryArchived, MemoryRestored, MemorySuperseded)
]
NEW_LEDGER_HINT = (
    "carry into a new ledger: `compliance-ledger --home NEW_HOME [--db NEW_URL] init` on an empty database, then "
    "`compliance-ledger --home NEW_HOME [--db NEW_URL] carry --from-home OLD_HOME [--from-db OLD_URL]`"
)


@dataclass(frozen=True)
class OldLedger:
    """The parts of the ledger carried from that ``carry`` reads: its kernel (store and keys), its verify and its
    transparency log (origin, note signing)."""

    kernel: Kernel
    audit: AuditCommands
    transparency: TransparencyCommands


@dataclass
class _Block:
    old_id: str
    position: int
    event: MemoryRemembered
    state: str = "live"  # live | archived | superseded | forgotten | erased


def _bar(progress: ProgressBars | None, label: str, total: int) -> contextlib.AbstractContextManager[Any]:
    return progress(label, total) if progress is not None else contextlib.nullcontext(None)


class CarryCommands:
    """``carry``: this (new) ledger takes the live memory of an old one, anchored by the old key's signed note."""

    def __init__(self, kernel: Kernel, memory_commands: MemoryCommands, transparency: TransparencyCommands) -> None:
        self.kernel = kernel
        self.memory = memory_commands
        self.transparency = transparency

    def carry(
        self,
        actor: Actor,
        old: OldLedger,
        without: Sequence[str] = (),
        progress: ProgressBars | None = None,
        *,
        dry_run: bool = False,
    ) -> CarryResult:
        """Carry ``old``'s live blocks here (see the module); refuse, changing nothing, when this ledger is not new,
        ``old`` does not verify, is this ledger, its signing key is not the one it binds, a ``without`` id is none
        of its blocks, or a block holds a credential (the door's scan). ``dry_run``: every check, and what would be
        carried and left out, with nothing written (``position`` 0)."""
        access.require_admin(actor, "carry a ledger into this one")
        origin = old.transparency.origin
        if origin == self.transparency.origin:
            raise InvalidInput(
                "the ledger to carry from is this ledger (the same origin)",
                "name the old ledger's database and home with --from-db / --from-home, and run carry on the new one",
            )
        self._require_new(origin)
        head_position = self._require_verified(old, progress)
        bound, signer = old.audit.bound_signing_key(), old.kernel.require_signer()
        if bound is not None and bound.key_id != signer.key_id:
            raise Conflict(
                f"the old ledger's signing key file is key {signer.key_id}, not the key {bound.key_id} it binds; "
                "nothing was carried",
                "give --from-home the old ledger's own home (its signing.key), or copy that key there",
            )
        vkey = old.transparency.vkey()
        head = old.kernel.store.get(head_position)  # the head verified; an append to the old log since is not carried
        head_hash = head.hash if head is not None else ""
        checkpoint = old.transparency.sign_head(head_position)
        blocks = self._blocks(old, head_position)
        skip = self._without(without, blocks)
        left_out: dict[str, list[str]] = {"without": [], "erased": [], "forgotten": [], "present": []}
        todo: list[_Block] = []
        for b in blocks.values():
            if b.old_id in skip:
                left_out["without"].append(b.old_id)
            elif b.state in ("erased", "forgotten"):
                left_out[b.state].append(b.old_id)
            else:
                todo.append(b)
        screened = [(b, self._screen(b)) for b in todo]  # a credential refused before anything is written
        carried = archived = resumed = 0
        seen: set[str] = set()
        with _bar(progress, "carrying blocks", len(screened)) as tick:
            for n, (b, event) in enumerate(screened, 1):
                outcome = self._carry_one(actor, origin, b, event, seen, dry_run)
                if outcome == "present":
                    left_out["present"].append(b.old_id)
                else:
                    carried += 1
                    archived += b.state != "live"
                    resumed += outcome == "resumed"
                if tick is not None:
                    tick(n)
        recorded = LedgerCarried(
            origin=origin,
            checkpoint=checkpoint,
            vkey=vkey,
            head_position=head_position,
            head_hash=head_hash,
            blocks_carried=carried,
            blocks_archived=archived,
            blocks_left_out=sum(len(ids) for ids in left_out.values()),
            left_out=left_out,
        )
        position = 0
        if not dry_run:
            [rec] = self.kernel.append(actor, CARRY_STREAM, 0, [recorded], self.kernel.meta(actor))
            position = rec.position
            self.kernel.index.catch_up()
        return CarryResult(
            origin=origin,
            checkpoint=checkpoint,
            vkey=vkey,
            head_position=head_position,
            head_hash=head_hash,
            position=position,
            carried=carried,
            archived=archived,
            left_out=left_out,
            resumed=resumed,
        )

    # --- the checks made before anything is written ------------------------------------------------------------

    def _require_new(self, origin: str) -> None:
        """This ledger holds nothing but what ``init`` writes (and the blocks an interrupted carry from ``origin``
        wrote), or a Conflict naming the first event that is more."""
        for rec in self.kernel.store.iter_records():
            if rec.type in _INIT_TYPES:
                continue
            if "carried_from" in rec.meta_json and json.loads(rec.meta_json).get("carried_from") == origin:
                continue  # an interrupted carry of the same ledger: run again, it goes on
            if rec.type == MemoryRemembered.type_name and self._constitutional(rec.position):
                continue
            what = "a carry already ran" if rec.type == LedgerCarried.type_name else "it is in use"
            raise Conflict(
                f"this ledger is not new ({what}): position {rec.position} holds a {rec.type} event on stream "
                f"{rec.stream}, beyond what `init` writes; nothing was carried",
                NEW_LEDGER_HINT,
            )

    def _constitutional(self, position: int) -> bool:
        rec = self.kernel.store.iter_events(position - 1, position)
        event = next(iter(rec)).event
        return (
            isinstance(event, MemoryRemembered)
            and constitution.CONSTITUTIONAL_TAG in event.tags
            and event.session_id is None
        )

    def _require_verified(self, old: OldLedger, progress: ProgressBars | None) -> int:
        """The old log's head position, once its chain, authenticators and tree verified up to it and its newest
        kept checkpoint holds; else an IntegrityViolation naming what broke."""
        head, _ = old.kernel.store.head()
        with _bar(progress, "verifying the old ledger", head) as tick:
            report = old.audit.verify(tick)
        if not report.ok:
            where = f" at position {report.first_bad_position}" if report.first_bad_position is not None else ""
            raise IntegrityViolation(
                f"the old ledger does not verify{where}: {report.reason}; nothing was carried",
                "see it with `compliance-ledger --home OLD_HOME [--db OLD_URL] verify`; carry only a ledger that "
                "verifies (restore the database from a backup that does)",
                position=report.first_bad_position,
            )
        kept = old.transparency.latest()
        if kept is not None:
            [finding] = old.transparency.check_notes([("its newest kept checkpoint", kept.note)])
            if not finding.ok:
                raise IntegrityViolation(
                    f"the old ledger does not hold its newest kept checkpoint: {finding.problem}; nothing was carried",
                    "check it with `compliance-ledger --home OLD_HOME verify --checkpoint` and the witnesses' copies",
                    position=finding.size,
                )
        return report.head_position

    def _blocks(self, old: OldLedger, head: int) -> dict[str, _Block]:
        """The old ledger's blocks by id, in the order they were remembered, each with its state at the head."""
        blocks: dict[str, _Block] = {}
        for rec in old.kernel.store.iter_events(0, head, types=_BLOCK_TYPES):
            e = rec.event
            if isinstance(e, MemoryRemembered):
                blocks.setdefault(e.block_id, _Block(e.block_id, rec.position, e))
                continue
            assert isinstance(e, MemoryForgotten | MemoryErased | MemoryArchived | MemoryRestored | MemorySuperseded)
            b = blocks.get(e.block_id)
            if b is None or (b.state in ("erased", "forgotten") and not isinstance(e, MemoryErased)):
                continue
            if isinstance(e, MemoryErased):
                b.state = "erased"
            elif isinstance(e, MemoryForgotten):
                b.state = "forgotten"
            elif isinstance(e, MemoryArchived):
                b.state = "archived"
            elif isinstance(e, MemorySuperseded):
                b.state = "superseded"
            else:
                b.state = "live"
        return blocks

    @staticmethod
    def _without(without: Sequence[str], blocks: dict[str, _Block]) -> set[str]:
        named = {w.strip() for w in without if w.strip()}
        unknown = sorted(named - blocks.keys())
        if unknown:
            raise InvalidInput(
                f"--without names {', '.join(unknown)}, which {'is' if len(unknown) == 1 else 'are'} no block of the "
                "old ledger; nothing was carried",
                "name block ids of the old ledger (`compliance-ledger --home OLD_HOME memory list`)",
            )
        return named

    def _screen(self, b: _Block) -> MemoryRemembered:
        """The old block's event as it is remembered here: its text through the door's credential scan."""
        e = b.event
        try:
            found = self.kernel.screen({"content": e.content, "tags": e.tags, "context": e.context})
        except SecretInText as exc:
            raise SecretInText(
                f"old block {b.old_id} (position {b.position}): {exc.message}; nothing was carried",
                f"erase it in the old ledger (`compliance-ledger --home OLD_HOME memory erase {b.old_id} --reason R`) "
                f"or leave it out with --without {b.old_id}",
                exc.found,
            ) from exc
        content = str(found["content"])
        block_id = self.memory.new_block_id(content)
        return MemoryRemembered(
            block_id=block_id,
            content=content,
            tags=list(found["tags"]),
            category=e.category,
            session_id=None,
            context=found["context"],
        )

    # --- the writes --------------------------------------------------------------------------------------------

    def _carry_one(
        self, actor: Actor, origin: str, b: _Block, event: MemoryRemembered, seen: set[str], dry_run: bool
    ) -> str:
        """Remember one old block here: ``carried``, ``resumed`` (an interrupted carry wrote it) or ``present``
        (this ledger holds its text already)."""
        stream = memory.stream_for(event.block_id)
        if event.block_id in seen:
            return "present"
        seen.add(event.block_id)
        state = self.kernel.store.load_stream(stream)
        if state.events:
            first = state.events[0]
            return "resumed" if first.meta.get("carried_from") == origin else "present"
        if dry_run:
            return "carried"
        events: list[Any] = [event]
        if b.state != "live":
            events.append(MemoryArchived(block_id=event.block_id, reason=f"{b.state} in the ledger carried from"))
        meta = {
            **self.kernel.meta(actor),
            "carried_from": origin,
            "carried_position": b.position,
            "carried_block_id": b.old_id,
        }
        self.kernel.append(actor, stream, 0, events, meta)
        return "carried"


def opened_by(vkey: str, checkpoint: str) -> note.Checkpoint:
    """The old head a ``LedgerCarried``'s note names, opened with its recorded vkey (raises ``note.NoteError``)."""
    return note.open_checkpoint(checkpoint, note.parse_vkey(vkey)).checkpoint
