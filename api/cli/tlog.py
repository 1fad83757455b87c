"""``compliance-ledger tlog``: the ledger as a standard transparency log — sign a C2SP ``checkpoint``, print the
``vkey``, write an offline proof bundle (``prove``), check one with no database (``verify-proof``), and watch a
ledger from outside (``follow``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.context import fail, ledger_for
from api.cli.output import err, out
from ledger.core.errors import InvalidInput, LedgerError
from ledger.core.limits import MAX_INT64

if TYPE_CHECKING:
    from ledger.core.tlog import note

group = typer.Typer(
    help="The transparency log: C2SP checkpoints, inclusion proofs, offline bundles, witnesses.",
    no_args_is_help=True,
)

VkeyOption = Annotated[
    str,
    typer.Option(
        "--vkey",
        help="the ledger's verifier key (`compliance-ledger tlog vkey`, GET /tlog/vkey), or a file holding it",
    ),
]


def _vkey_text(value: str) -> str:
    """A vkey given inline or as the path of a file holding it."""
    candidate = Path(value).expanduser()
    return candidate.read_text(encoding="utf-8").strip() if candidate.is_file() else value.strip()


def _verifier(value: str, what: str = "--vkey") -> note.Verifier:
    from ledger.core.tlog import note

    try:
        return note.parse_vkey(_vkey_text(value))
    except (note.NoteError, OSError) as exc:
        raise fail(InvalidInput(f"{what}: {exc}", "give the vkey string, or a file holding it"), 2) from exc


@group.command("checkpoint")
def checkpoint(ctx: typer.Context) -> None:
    """Sign a checkpoint of the log's tree, get the configured witnesses' cosignatures, keep it, print the note.

    Exit 1, quoting each witness's answer, when fewer witnesses cosign than LEDGER_CHECKPOINT_MIN_COSIGNATURES.
    """
    with ledger_for(ctx) as ledger:
        signed = ledger.sign_tlog_checkpoint()
    sys.stdout.write(signed.note)
    state = "signed" if signed.new else "unchanged since the last checkpoint"
    witnesses = f", cosigned by {', '.join(signed.cosigned_by)}" if signed.cosigned_by else ""
    err.print(f"checkpoint of tree size {signed.size} {state}{witnesses}", soft_wrap=True)


@group.command("vkey")
def vkey(ctx: typer.Context) -> None:
    """Print the verifier key of the ledger's checkpoints (signed-note format: name+key ID+key)."""
    with ledger_for(ctx) as ledger:
        text = ledger.tlog_vkey()
    sys.stdout.write(text + "\n")


@group.command("prove")
def prove(
    ctx: typer.Context,
    position: Annotated[int, typer.Argument(min=1, max=MAX_INT64, help="the event's position in the log")],
    out_file: Annotated[Path | None, typer.Option("--out", help="write the bundle to this file")] = None,
) -> None:
    """Write a c2sp.org/tlog-proof@v1 bundle for the event at POSITION: its inclusion proof in the smallest kept
    checkpoint that covers it, and that checkpoint with its cosignatures. Check it anywhere with `tlog
    verify-proof --leaf <the event's hash>`."""
    with ledger_for(ctx) as ledger:
        text = ledger.tlog_bundle(position)
        leaf = ledger.store.leaf_data(position).hex()
    if out_file is None:
        sys.stdout.write(text)
    else:
        try:
            out_file.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise fail(InvalidInput(f"cannot write {out_file}: {exc.strerror}", "give a writable path")) from exc
        err.print(f"proof bundle for position {position} written to {out_file}", soft_wrap=True)
    err.print(f"leaf (the event's chain hash): {leaf}", soft_wrap=True)


@group.command("verify-proof")
def verify_proof(
    bundle_file: Annotated[Path, typer.Argument(help="a .tlog-proof file (`compliance-ledger tlog prove`)")],
    vkey_option: VkeyOption,
    leaf: Annotated[
        str, typer.Option("--leaf", help="the event's chain hash, 64 hex digits (`events --json` prints it)")
    ],
    witness_vkey: Annotated[
        list[str] | None,
        typer.Option("--witness-vkey", help="a witness's cosignature vkey (or a file holding it); repeatable"),
    ] = None,
    min_cosignatures: Annotated[
        int, typer.Option("--min-cosignatures", min=0, help="valid cosignatures of the given witnesses required")
    ] = 0,
) -> None:
    """Check a proof bundle with no database and no ledger home: the checkpoint is signed by the ledger's key,
    carries enough witness cosignatures, and its tree holds the leaf at the bundle's index. Exit 0 when it holds,
    1 when it does not (saying why), 2 on unusable input."""
    from ledger.core.tlog import bundle, merkle, note

    log = _verifier(vkey_option)
    witnesses = [_verifier(w, "--witness-vkey") for w in witness_vkey or []]
    try:
        leaf_data = bytes.fromhex(leaf)
    except ValueError:
        leaf_data = b""
    if len(leaf_data) != 32:
        raise fail(InvalidInput("--leaf must be 64 hex digits", "give the event's `hash` as `events --json` prints"), 2)
    try:
        text = bundle_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise fail(InvalidInput(f"cannot read {bundle_file}: {exc}", "give a .tlog-proof file"), 2) from exc
    try:
        verified = bundle.verify(text, leaf_data, log, witnesses, min_cosignatures)
    except (note.NoteError, merkle.ProofError) as exc:
        err.print(f"[red]proof does not hold[/red]: {exc}", soft_wrap=True)
        raise typer.Exit(1) from exc
    cp = verified.checkpoint.checkpoint
    cosigned = f"; cosigned by {', '.join(verified.witnesses)}" if verified.witnesses else ""
    out.print(
        f"proof holds: leaf {verified.bundle.index} (position {verified.bundle.index + 1}) is in {cp.origin}'s "
        f"tree of {cp.size}{cosigned}",
        soft_wrap=True,
    )


@group.command("follow")
def follow(
    url: Annotated[str, typer.Argument(help="the ledger's base URL, e.g. http://127.0.0.1:8787")],
    state: Annotated[Path, typer.Option("--state", help="the file that keeps the last checkpoint seen")],
    vkey_option: VkeyOption,
    api_key: Annotated[
        str | None, typer.Option("--api-key", envvar="LEDGER_API_KEY", help="an API key, if the ledger has keys")
    ] = None,
) -> None:
    """Fetch the ledger's checkpoint, check its signature and that it extends the one kept in --state (a
    consistency proof), then keep it. Exit 1 naming the fork when the log was rewritten or rolled back. Run it
    from cron or CI: this is how an auditor watches a ledger."""
    from api.tlog_follow import Fork, follow_once

    log = _verifier(vkey_option)
    try:
        outcome = follow_once(url, state, log, api_key=api_key or os.environ.get("LEDGER_API_KEY"))
    except Fork as exc:
        err.print(f"[red]FORK[/red]: {exc}", soft_wrap=True)
        raise typer.Exit(1) from exc
    except LedgerError as exc:
        raise fail(exc, 2) from exc
    out.print(outcome, soft_wrap=True)


def register(app: typer.Typer) -> None:
    """Add the ``tlog`` group to the root command."""
    app.add_typer(group, name="tlog")
