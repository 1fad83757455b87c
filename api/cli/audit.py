"""The audit commands: ``verify`` the chain and checkpoints, sign a ``checkpoint``, ``verify-stamp``, ``replay``
the projections and list ``events``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.context import AsJson, fail, ledger_for, parse_when
from api.cli.output import err, out, print_compliance, print_json, progress, table
from ledger.core.errors import InvalidInput, LedgerError
from ledger.core.limits import MAX_INT64

if TYPE_CHECKING:
    from ledger.core.tlog import note
    from ledger.service import Ledger

PublicKeyOption = Annotated[
    Path | None,
    typer.Option("--public-key", help="the ledger's public key (PEM or JWK) from a trusted copy", exists=True),
]


def verify(
    ctx: typer.Context,
    checkpoint: Annotated[
        list[Path] | None,
        typer.Option(
            "--checkpoint",
            help="a checkpoint kept outside the database: a JSON-lines file of the chain head's, a C2SP note of the "
            "tree's (`tlog checkpoint`, GET /checkpoint), or a directory of them; repeatable",
            metavar="<path>",
            exists=True,
        ),
    ] = None,
    public_key: PublicKeyOption = None,
) -> None:
    """Recompute the hash chain, check every event's authenticator and the transparency-log tree, and check signed
    checkpoints. Exit 0 when all hold; else name what broke, exit 1.

    The chain proves the log is self-consistent, the authenticators that the ledger wrote every event, and the
    tree is recomputed from the chain and compared with the stored one. With checkpoints kept elsewhere it also
    proves that no event up to each checkpoint was removed or rewritten (truncation, rollback, re-hashing, an
    emptied table).
    """
    from ledger.core import signing

    json_paths, notes = _split_checkpoints(checkpoint or [])
    with ledger_for(ctx) as ledger:
        sources = ledger.read_checkpoints(json_paths) if json_paths else []
        public = signing.PublicKey.load(public_key) if public_key else (ledger.public_key() if sources else None)
        head, _ = ledger.store.head()
        with progress("verifying", head) as tick:
            report = ledger.verify(progress=tick)
        findings = ledger.verify_checkpoints(sources, public) if public is not None else []
        note_findings = ledger.check_checkpoint_notes(notes, _note_verifier(ledger, public_key)) if notes else []
    failed = [f for f in findings if not f.ok]
    failed_notes = [f for f in note_findings if not f.ok]
    if report.ok:
        out.print(
            f"chain intact, every event authenticated, tree matching: {report.checked} events, head position "
            f"{report.head_position}"
        )
    else:
        where = f"at position {report.first_bad_position}" if report.first_bad_position is not None else ""
        err.print(
            f"[red]chain broken {where}[/red]: {report.reason} ({report.checked} events verified before it)",
            markup=True,
        )
    if findings:
        held = len(findings) - len(failed)
        out.print(f"checkpoints: {held} of {len(findings)} held (signed by key {public.key_id if public else '?'})")
    for f in failed:
        err.print(f"[red]checkpoint {f.where} fails[/red]: {f.problem}", soft_wrap=True)
    if note_findings:
        held = len(note_findings) - len(failed_notes)
        out.print(f"tree checkpoints: {held} of {len(note_findings)} held", soft_wrap=True)
    for n in failed_notes:
        err.print(f"[red]checkpoint {n.where} fails[/red]: {n.problem}", soft_wrap=True)
    raise typer.Exit(0 if report.ok and not failed and not failed_notes else 1)


NOTE_SUFFIXES = {".note", ".tlog-checkpoint", ".txt", ".checkpoint"}


def _split_checkpoints(paths: list[Path]) -> tuple[list[Path], list[tuple[str, str]]]:
    """JSON checkpoint files (the chain head's) apart from C2SP checkpoint notes (the tree's): a file is a note when
    its text does not start with ``{``; a directory's *.json/*.jsonl are JSON, its *.note, *.tlog-checkpoint,
    *.checkpoint and *.txt notes."""
    json_paths: list[Path] = []
    notes: list[tuple[str, str]] = []
    for path in paths:
        path = path.expanduser()
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.is_file())
            json_paths.extend(p for p in files if p.suffix in {".json", ".jsonl"})
            notes.extend((str(p), _read(p)) for p in files if p.suffix in NOTE_SUFFIXES)
            continue
        text = _read(path)
        if text.lstrip().startswith("{"):
            json_paths.append(path)
        else:
            notes.append((str(path), text))
    return json_paths, notes


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise fail(
            InvalidInput(f"cannot read checkpoint file {path}: {exc}", "give a readable checkpoint file")
        ) from exc


def _note_verifier(ledger: Ledger, public_key: Path | None) -> note.Verifier:
    """The vkey that checks the tree checkpoints: from --public-key (a trusted copy of the ledger's key) for this
    ledger's origin, else the ledger's own."""
    from ledger.core import signing
    from ledger.core.tlog import note

    if public_key is None:
        return ledger.tlog_verifier()
    return note.Verifier(ledger.tlog_origin(), note.ED25519, signing.PublicKey.load(public_key).raw)


def checkpoint_cmd(
    ctx: typer.Context,
    out_file: Annotated[
        Path | None, typer.Option("--out", help="append the checkpoint to this file (JSON lines) instead of printing")
    ] = None,
) -> None:
    """Sign the current head of the log. Keep checkpoints where the database's writers cannot reach them."""
    with ledger_for(ctx) as ledger:
        signed = ledger.checkpoint()
    if out_file is None:
        sys.stdout.write(signed.to_line() + "\n")
        return
    try:
        ledger.keep_checkpoint(signed, out_file)
    except OSError as exc:
        raise fail(InvalidInput(f"cannot write {out_file}: {exc.strerror}", "give a writable file")) from exc
    err.print(f"checkpoint of position {signed.position} appended to {out_file}")


def verify_stamp(
    ctx: typer.Context,
    receipt: Annotated[str, typer.Argument(help="the receipt a PASS stamp carried (its `receipt` field)")],
    public_key: Annotated[
        Path | None,
        typer.Option(
            "--public-key",
            help="check offline with this public key (PEM or JWK) alone: no database is opened",
            exists=True,
        ),
    ] = None,
    as_json: AsJson = False,
) -> None:
    """Check a stamp receipt. Exit 0 when genuine, 1 when not.

    On the ledger host it checks the signature and that the log still holds the stamp event. With --public-key it
    checks only the signature, anywhere, without the database.
    """
    from ledger.core import signing
    from ledger.service import Ledger

    if public_key is not None:
        try:
            result = Ledger.verify_stamp_offline(receipt, signing.PublicKey.load(public_key))
        except LedgerError as exc:
            raise fail(exc) from exc
    else:
        with ledger_for(ctx) as ledger:
            result = ledger.verify_stamp(receipt)
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        out.print(("[green]genuine[/green]" if result.valid else "[red]NOT genuine[/red]") + f": {result.reason}")
        if result.valid:
            out.print(
                f"event {result.position} · session {result.session_id} · agent {result.agent} · "
                f"{result.count} memories · {result.recorded_at}"
            )
            # The receipt leads to its place in the transparency log: a bundle anyone can check offline.
            out.print(
                f"proof that the log holds it: `compliance-ledger tlog prove {result.position}` (or GET "
                f"/tlog/inclusion?index={(result.position or 1) - 1}&size=<a checkpoint's size>), checked with "
                "`compliance-ledger tlog verify-proof`",
                soft_wrap=True,
            )
    raise typer.Exit(0 if result.valid else 1)


def replay(
    ctx: typer.Context,
    as_of: Annotated[str | None, typer.Option("--as-of", help="ISO time: replay what was recorded by then")] = None,
    position: Annotated[int | None, typer.Option(min=0, max=MAX_INT64, help="replay up to this position")] = None,
    session: Annotated[str | None, typer.Option(help="show only this session")] = None,
    block: Annotated[
        list[str] | None, typer.Option("--block", help="also show this memory block's score at that moment")
    ] = None,
    rebuild: Annotated[
        bool,
        typer.Option(
            "--rebuild",
            help="also rebuild the transparency-log tree (after checking the chain and every event's authenticator), "
            "the embedding index (hybrid search) and the projection snapshots from position 0",
        ),
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Replay projections from position 0. Without --as-of/--position the search index is rebuilt too; --rebuild
    rebuilds the transparency-log tree and the other derived data as well."""
    from rich.table import Column

    moment = parse_when(as_of)
    if rebuild and (moment is not None or position is not None):
        raise fail(InvalidInput("--rebuild works on the whole log", "drop --as-of/--position, or --rebuild"))
    with ledger_for(ctx) as ledger:
        head, _ = ledger.store.head()
        rebuilt = snapshots = leaves = None
        if rebuild:
            with progress("rebuilding the tree", head) as tick:
                leaves = ledger.rebuild_tree(tick)
        if moment is None and position is None:
            with progress("rebuilding search index", None) as tick:
                rebuilt = ledger.rebuild_index(tick, embeddings=rebuild)
        if rebuild:
            with progress("rebuilding snapshots", head) as tick:
                snapshots = ledger.rebuild_snapshots(tick)
        with progress("replaying", position if position is not None else head) as tick:
            result = ledger.replay(as_of=moment, position=position, progress=tick)
        skipped = ledger.index.skips()
    states = [s for s in result.sessions() if session is None or s.session_id == session]
    if session is not None and not states:
        raise fail(InvalidInput(f"session {session} does not exist at that point", "check the id and the time"))
    try:
        blocks = [result.block(b) for b in block or []]
    except LedgerError as exc:
        raise fail(exc) from exc
    memory_state = result.memory()
    if as_json:
        print_json(
            {
                "position": result.position,
                "as_of": result.moment.isoformat(),
                "index_rebuilt": rebuilt,
                "index_skipped": [{"position": k.position, "reason": k.reason} for k in skipped],
                "snapshots_written": snapshots,
                "tree_leaves": leaves,
                "sessions": [s.model_dump(mode="json") for s in states],
                "compliance": [a.model_dump(mode="json") for a in result.compliance()],
                "memory": memory_state.model_dump(mode="json"),
                "blocks": [b.model_dump(mode="json") for b in blocks],
            }
        )
        return
    out.print(
        f"replayed to position {result.position} (as of {result.moment.isoformat()})"
        + (f"; search index rebuilt with {rebuilt} blocks" if rebuilt is not None else "")
        + (f"; {snapshots} projection snapshots written" if snapshots is not None else "")
        + (f"; tree rebuilt with {leaves} leaves" if leaves is not None else "")
    )
    for k in skipped:
        err.print(f"[yellow]warning:[/yellow] the search index skipped the event at position {k.position}: {k.reason}")
    counts = [Column(name, justify="right", no_wrap=True) for name in ("searches", "stamps", "refusals")]
    sessions = table(Column("session", no_wrap=True), "agent (role)", "open", "token", *counts)
    for s in states[-50:]:
        sessions.add_row(
            s.session_id,
            f"{s.agent} ({s.role})",
            "no" if s.ended_at else "yes",
            s.token.status,
            str(s.searches),
            str(s.stamps),
            str(s.refusals),
        )
    out.print(sessions)
    print_compliance(result.compliance())
    m = memory_state
    out.print(
        f"memory: {m.blocks} blocks ({m.archived} archived, {m.constitutional} constitutional), {m.edges} edges, "
        f"{m.curates} curate runs, {m.active_hours:.2f} active hours"
    )
    for b in blocks:
        sc = b.score
        out.print(
            f"{b.block_id} [{b.tier}{', archived' if b.archived_at else ''}] score {sc.total:.4f} = "
            f"similarity {sc.similarity:.3f}, confidence {sc.confidence:.3f}, recency {sc.recency:.4f} "
            f"({sc.active_hours_since_reinforced:.2f} active h since reinforced), centrality {sc.centrality:.3f}, "
            f"reinforcement {sc.reinforcement:.3f}",
            markup=False,
        )


def events(
    ctx: typer.Context,
    as_json: Annotated[
        bool, typer.Option("--json", help="print JSON lines (one event a line) instead of a table")
    ] = False,
    stream: Annotated[
        str | None, typer.Option(help="only this stream, e.g. session:ses_... or block:blk_... or ledger")
    ] = None,
    type: Annotated[str | None, typer.Option("--type", help="only events of this type, e.g. ComplianceStamped")] = None,
    after: Annotated[int, typer.Option(min=0, max=MAX_INT64, help="only events after this position")] = 0,
    limit: Annotated[int | None, typer.Option(min=1, max=MAX_INT64, help="at most this many events")] = None,
) -> None:
    """List events in position order."""
    from rich.table import Column

    from api.render import event_dict

    with ledger_for(ctx) as ledger:
        listing = table(
            Column("pos", justify="right", no_wrap=True),
            "recorded at",
            "stream",
            Column("type", no_wrap=True),  # at most 23 characters, one line
            "agent",
            Column("hash", no_wrap=True),
        )
        for n, rec in enumerate(ledger.store.iter_records(after, stream=stream, types=[type] if type else None), 1):
            row = event_dict(rec)
            if as_json:
                print_json(row)
            else:
                listing.add_row(
                    str(rec.position),
                    rec.recorded_at[:19].replace("T", " ") + "Z",  # to the second; --json has it all
                    rec.stream,
                    rec.type,
                    str(row["meta"].get("agent", "")),
                    rec.hash[:8],
                )
            if limit and n >= limit:
                break
        if not as_json:
            out.print(listing)


def register(app: typer.Typer) -> None:
    """Add the audit commands to the root command."""
    app.command()(verify)
    app.command("checkpoint")(checkpoint_cmd)
    app.command("verify-stamp")(verify_stamp)
    app.command()(replay)
    app.command()(events)
