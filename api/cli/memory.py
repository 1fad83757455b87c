"""``compliance-ledger memory``: list and inspect memory blocks with their scores, curate now, supersede a block
with a corrected text, archive or restore one (how a person amends the constitution), forget or erase one."""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.context import AsJson, fail, ledger_for, operator, parse_when
from api.cli.output import out, print_json, table
from ledger.core.errors import InvalidInput
from ledger.core.limits import MAX_INT64

if TYPE_CHECKING:
    from ledger.audit.report import ErasureResult
    from ledger.memory.report import BlockOut

group = typer.Typer(
    help="Memory blocks: list, inspect, curate, supersede, archive, restore, forget, erase.", no_args_is_help=True
)


def _clip(text: str, width: int = 60) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@group.command("list")
def memory_list(
    ctx: typer.Context,
    tag: Annotated[
        str | None,
        typer.Option(help="only blocks with this tag, or with a tag under a prefix ending in '/' (e.g. project/)"),
    ] = None,
    tier: Annotated[str | None, typer.Option(help="permanent | durable | standard | ephemeral")] = None,
    archived: Annotated[bool, typer.Option("--archived", help="only archived blocks")] = False,
    all_blocks: Annotated[bool, typer.Option("--all", help="live and archived blocks")] = False,
    as_of: Annotated[str | None, typer.Option("--as-of", help="ISO time: the blocks as they were then")] = None,
    position: Annotated[int | None, typer.Option(min=0, max=MAX_INT64, help="the blocks as of this position")] = None,
    limit: Annotated[int, typer.Option(help="at most this many blocks (1..100)")] = 100,
    as_json: AsJson = False,
) -> None:
    """Memory blocks (by default the live ones), best score first, with their decay state."""
    from rich.console import Group
    from rich.table import Column
    from rich.text import Text

    if archived and all_blocks:
        raise fail(InvalidInput("--archived and --all were both given", "send one of them, not both"))
    moment = parse_when(as_of)
    with ledger_for(ctx) as ledger:
        result = ledger.memory_blocks(
            tag=tag,
            tier=tier,
            archived=None if all_blocks else archived,
            as_of=moment,
            position=position,
            limit=limit,
        )
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    out.print(
        f"{result.count} block(s) at position {result.position} "
        f"(as of {result.as_of.isoformat()}, {result.active_hours:.2f} active hours)"
        + (f"; showing {len(result.blocks)}" if len(result.blocks) < result.count else "")
    )
    # The content goes under the block's id, in the one column that takes what the numbers leave: a whole id (to
    # copy into `memory show`) and readable text at 80 columns, one line each on a wide terminal.
    numbers = ["score", "recency", "conf", "reinf", *(["archived"] if archived or all_blocks else [])]
    listing = table("block", Column("tier", no_wrap=True), *[Column(n, justify="right", no_wrap=True) for n in numbers])
    for b in result.blocks:
        values = [f"{b.score.total:.3f}", f"{b.score.recency:.3f}", f"{b.confidence:.3f}", str(b.reinforcements)]
        values += ["yes" if b.archived_at else "no"] if archived or all_blocks else []
        listing.add_row(Group(Text(b.block_id, no_wrap=True), Text(_clip(b.content), style="dim")), b.tier, *values)
    out.print(listing)


def _print_block(b: BlockOut) -> None:
    from rich.table import Column

    fields = table(Column("field", no_wrap=True), "value", header=False)
    for name, value in [
        ("id", b.block_id),
        ("tags", ", ".join(b.tags) or "—"),
        ("category", b.category),
        ("tier", f"{b.tier} (decay rate {b.decay_rate:g} per active hour)"),
        ("confidence", f"{b.confidence:.4f} after {b.outcomes} outcome(s)"),
        ("reinforcements", str(b.reinforcements)),
        ("created", b.created_at.isoformat()),
        ("stored by", _stored_by(b)),
        ("context", b.provenance.context or "—"),
        ("last reinforced", f"{b.last_reinforced_at.isoformat()} ({b.score.active_hours_since_reinforced:.2f} h ago)"),
        ("archived", b.archived_at.isoformat() if b.archived_at else "no"),
    ]:
        fields.add_row(name, value)
    out.print(fields)
    out.print(b.content, highlight=False)
    s = b.score
    score = table("component", Column("value", justify="right"), Column("weight", justify="right"))
    for part in ("similarity", "confidence", "recency", "centrality", "reinforcement"):
        score.add_row(part, f"{getattr(s, part):.4f}", f"{s.weights.get(part, 0.0):.2f}")
    score.add_row("total", f"{s.total:.4f}", "")
    out.print(score)
    out.print(f"weighted degree {s.weighted_degree:.4f}")


def _stored_by(b: BlockOut) -> str:
    """Who stored the block, in which session, at which position: its provenance as recorded."""
    p = b.provenance
    where = f"session {p.session_id}" if p.session_id else "no session"
    return f"{p.agent or 'unknown agent'}, {where} (event {p.position})"


@group.command("show")
def memory_show(
    ctx: typer.Context,
    block_id: Annotated[str, typer.Argument(help="the block id (blk_...)")],
    as_of: Annotated[str | None, typer.Option("--as-of", help="ISO time: the block as it was then")] = None,
    position: Annotated[int | None, typer.Option(min=0, max=MAX_INT64, help="the block as of this position")] = None,
    as_json: AsJson = False,
) -> None:
    """One block: its fields, score breakdown and every event that touched it."""
    from rich.table import Column

    moment = parse_when(as_of)
    with ledger_for(ctx) as ledger:
        detail = ledger.memory_block(block_id, as_of=moment, position=position)
    if as_json:
        print_json(detail.model_dump(mode="json"))
        return
    out.print(f"block at position {detail.position} (as of {detail.as_of.isoformat()})")
    _print_block(detail.block)
    history = table(Column("pos", justify="right", no_wrap=True), "recorded at", Column("type", no_wrap=True), "agent")
    for e in detail.history:
        recorded = e.recorded_at.astimezone(_dt.UTC).strftime("%Y-%m-%d %H:%M:%SZ")  # --json has it all
        history.add_row(str(e.position), recorded, e.type, e.agent or "")
    out.print(history)


@group.command("curate")
def memory_curate(ctx: typer.Context, as_json: AsJson = False) -> None:
    """Curate now: archive decayed blocks, prune weak edges, reinforce the constitution and the strongest blocks."""
    with ledger_for(ctx) as ledger:
        result = ledger.curate(operator())
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    out.print(
        f"curated at position {result.position} ({result.active_hours:.2f} active hours): "
        f"{result.archived} archived, {result.edges_pruned} edge(s) pruned, "
        f"{result.constitutional_reinforced} constitutional and {result.reinforced} top block(s) reinforced"
    )
    for block_id in result.archived_ids:
        out.print(f"archived {block_id}")


@group.command("supersede")
def memory_supersede(
    ctx: typer.Context,
    block_id: Annotated[str, typer.Argument(help="the block id (blk_...)")],
    content: Annotated[str, typer.Argument(help="the text that replaces it (the block's tags are kept)")],
    as_json: AsJson = False,
) -> None:
    """Replace a block with a corrected text: search and recall find the new block; the old keeps its history."""
    with ledger_for(ctx) as ledger:
        result = ledger.supersede(operator(), block_id, content)
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    out.print(f"{result.block_id} superseded by {result.new_block_id} at position {result.position}")


def _revise(ctx: typer.Context, command: str, block_id: str, reason: str, as_json: bool, done: str) -> None:
    """Run the façade's ``command`` (archive, restore, forget) as the operator and say what it did."""
    with ledger_for(ctx) as ledger:
        result = getattr(ledger, command)(operator(), block_id, reason)
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    out.print(f"{result.block_id} {done} at position {result.position}: {result.reason}")


@group.command("archive")
def memory_archive(
    ctx: typer.Context,
    block_id: Annotated[str, typer.Argument(help="the block id (blk_...)")],
    reason: Annotated[str, typer.Option(help="why it is archived, kept in the log (e.g. 'amended')")],
    as_json: AsJson = False,
) -> None:
    """Archive a block (also a constitutional one): it leaves search and recall, keeps its history, can be restored."""
    _revise(ctx, "archive_block", block_id, reason, as_json, "archived")


@group.command("restore")
def memory_restore(
    ctx: typer.Context,
    block_id: Annotated[str, typer.Argument(help="the block id (blk_...)")],
    reason: Annotated[str, typer.Option(help="why it comes back, kept in the log")],
    as_json: AsJson = False,
) -> None:
    """Bring an archived or superseded block back into search and recall (a block that replaced it stays)."""
    _revise(ctx, "restore_block", block_id, reason, as_json, "restored")


@group.command("forget")
def memory_forget(
    ctx: typer.Context,
    block_id: Annotated[str, typer.Argument(help="the block id (blk_...)")],
    reason: Annotated[str, typer.Option(help="why it is forgotten, kept in the log (e.g. an erasure request)")],
    as_json: AsJson = False,
) -> None:
    """Forget a block: it leaves search, recall and every memory read; the log keeps the event and the reason."""
    _revise(ctx, "forget", block_id, reason, as_json, "forgotten")


@group.command("erase")
def memory_erase(
    ctx: typer.Context,
    block_id: Annotated[str, typer.Argument(help="the block id (blk_...)")],
    reason: Annotated[str, typer.Option(help="why it is erased, kept readable in the log (name no personal data)")],
    as_json: AsJson = False,
) -> None:
    """Erase a block's text for good: its data key is destroyed and every derived copy purged; the log keeps who,
    when and why."""
    with ledger_for(ctx) as ledger:
        result = ledger.erase_block(operator(), block_id, reason)
    print_erasure(result, as_json, f"{block_id} erased")


def print_erasure(result: ErasureResult, as_json: bool, what: str) -> None:
    """Say what an erasure did (and what it could not, for text written before encryption)."""
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    out.print(f"{what} at position {result.position}: {result.reason} ({len(result.key_ids)} data key(s) destroyed)")
    if result.note:
        out.print(f"[yellow]note:[/yellow] {result.note}")


def register(app: typer.Typer) -> None:
    """Add the ``memory`` group to the root command."""
    app.add_typer(group, name="memory")
