"""``carry``: move an existing ledger's live memory into a new, encrypted ledger (issue 26, point 5) — the way out
for blocks written before encryption, whose text an erasure cannot remove from the log's bytes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from api.cli.context import AsJson, fail, ledger_for, operator
from api.cli.output import out, print_json, progress
from ledger.core.errors import InvalidInput, LedgerError

if TYPE_CHECKING:
    from ledger.service import CarryResult


def carry(
    ctx: typer.Context,
    from_home: Annotated[
        Path,
        typer.Option(
            "--from-home",
            help="the old ledger's data directory: its receipt.key and signing.key (and its ledger.db unless "
            "--from-db names the database)",
            metavar="<dir>",
        ),
    ],
    from_db: Annotated[
        str | None,
        typer.Option("--from-db", help="the old ledger's database URL (default: FROM_HOME/ledger.db)", metavar="<url>"),
    ] = None,
    without: Annotated[
        list[str] | None,
        typer.Option(
            "--without",
            help="an old block id to leave behind (e.g. one whose text must be erased); repeatable",
            metavar="<block id>",
        ),
    ] = None,
    yes: Annotated[
        bool,
        typer.Option("--yes", help="carry (without it: check everything, print what would be carried, write nothing)"),
    ] = False,
    as_json: AsJson = False,
) -> None:
    """Carry the live memory of an existing ledger into this NEW one, encrypted under its data keys. Run it on a
    ledger that `init` just made (--home/--db: the new one); it refuses any other, saying why.

    It reads the old ledger and changes nothing in it: it verifies the old log (chain, authenticators, tree,
    newest kept checkpoint) and refuses one that does not verify, naming what broke; the old ledger's signing key
    signs a checkpoint note of its head; every live block (archived ones stay archived) is remembered here with
    its tags, category and context under a new keyed id, its provenance the old origin and position; erased and
    forgotten blocks, and those named by --without, are left out. One LedgerCarried event records the old origin,
    the signed note, the old verifier key, the counts and the ids left out, never a text.

    Not carried: sessions, stamps and their receipts, anchors, tasks, API keys, checkpoints and the events' history.
    The old ledger's signed note, recorded here, is what proves that history: keep the old database (or an export)
    until its retention ends, then destroy it; that is what removes the plaintext. See README "Erasure".
    """
    from pydantic import ValidationError

    from api.bootstrap import open_to_read
    from api.settings import Settings

    try:
        # the old ledger's own files: LEDGER_KEY_FILE / LEDGER_SIGNING_KEY_FILE / LEDGER_DATABASE_URL are the new one's
        given: dict[str, Any] = {"home": from_home, "database_url": from_db, "key_file": None, "signing_key_file": None}
        old_settings = Settings(**given)
    except ValidationError as exc:
        raise fail(
            InvalidInput(f"--from-db / --from-home are not valid: {exc}", "give a database URL and a directory")
        ) from exc
    with ledger_for(ctx) as ledger:
        try:
            old = open_to_read(old_settings)
        except LedgerError as exc:
            raise fail(exc) from exc
        try:
            result = ledger.carry_from(operator(), old, without or [], progress, dry_run=not yes)
        finally:
            old.store.dispose()
    if as_json:
        print_json(_as_dict(result, done=yes))
        return
    _print(result, done=yes)


def _as_dict(result: CarryResult, *, done: bool) -> dict[str, object]:
    return {
        "carried": done,
        "origin": result.origin,
        "head_position": result.head_position,
        "head_hash": result.head_hash,
        "vkey": result.vkey,
        "checkpoint": result.checkpoint,
        "position": result.position or None,
        "blocks_carried": result.carried,
        "blocks_archived": result.archived,
        "blocks_resumed": result.resumed,
        "blocks_left_out": result.left_out_count,
        "left_out": result.left_out,
    }


def _print(result: CarryResult, *, done: bool) -> None:
    verb = "carried" if done else "would carry"
    out.print(
        f"old ledger {result.origin}: verified, {result.head_position} events; its key signed the checkpoint of "
        "its head",
        soft_wrap=True,
    )
    out.print(
        f"{verb} {result.carried} blocks ({result.archived} archived"
        + (f", {result.resumed} by an earlier, interrupted run" if result.resumed else "")
        + f"); left out {result.left_out_count}: "
        + ", ".join(f"{len(ids)} {why}" for why, ids in result.left_out.items()),
        soft_wrap=True,
    )
    for why, ids in result.left_out.items():
        for block_id in ids if why != "present" else []:  # present: the constitution init wrote, as a rule
            out.print(f"  left out ({why}): {block_id}", markup=False)
    if not done:
        out.print("nothing written: run again with --yes to carry", soft_wrap=True)
        return
    out.print(
        f"LedgerCarried at position {result.position} records the old ledger's signed checkpoint and key; next: "
        "`compliance-ledger verify` here, switch the clients to this ledger, keep the old database until its "
        "retention ends, then destroy it (README 'Erasure')",
        soft_wrap=True,
    )


def register(app: typer.Typer) -> None:
    """Add ``carry`` to the root command."""
    app.command()(carry)
