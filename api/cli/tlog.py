"""``compliance-ledger tlog``: the ledger as a standard transparency log, and a witness for other logs.

The ledger's side: sign a C2SP ``checkpoint``, print the ``vkey``, write an offline proof bundle (``prove``), check one
with no database (``verify-proof``), watch a ledger from outside (``follow``). ``tlog witness`` runs a
c2sp.org/tlog-witness witness (``init`` makes its key, ``serve`` answers add-checkpoint; no ledger home, no database).
"""

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


witness_group = typer.Typer(
    help="A witness: cosigns other logs' checkpoints that extend what it saw before (c2sp.org/tlog-witness).",
    no_args_is_help=True,
)
group.add_typer(witness_group, name="witness")

WITNESS_PORT = 8788
WitnessKey = Annotated[Path, typer.Option("--key", help="the witness's key file (PKCS#8 PEM with its name)")]


@witness_group.command("init")
def witness_init(
    key: WitnessKey,
    name: Annotated[str, typer.Option(help="the witness's name, a schema-less URL, e.g. witness.example.com/w1")],
) -> None:
    """Create a witness key (Ed25519, mode 0600) and print its c2sp.org/tlog-cosignature verifier key. An existing
    key file of the same name is kept (its verifier key printed again); one of another name is refused."""
    from ledger.core.tlog.witness_state import create_witness_key

    try:
        signer, created = create_witness_key(key, name)
    except LedgerError as exc:
        raise fail(exc) from exc
    said = "created the witness key" if created else "kept the existing witness key"
    err.print(
        f"{said} {key} for {signer.name}; its verifier key (give it to the logs and their verifiers):", markup=False
    )
    out.print(signer.verifier.vkey, highlight=False, markup=False, soft_wrap=True)


@witness_group.command("serve")
def witness_serve(
    key: WitnessKey,
    log_vkey: Annotated[
        list[str],
        typer.Option(
            "--log-vkey",
            help="a log to witness: its signed-note verifier key <origin>+<hex ID>+<base64 key> (repeat for more logs, "
            "or for a log's several keys)",
        ),
    ],
    state: Annotated[
        Path, typer.Option(help="directory of the witness's state: each log's last cosigned checkpoint (keep it)")
    ],
    host: Annotated[str, typer.Option(help="bind address")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="port (0: any free port, named at start)")] = WITNESS_PORT,
) -> None:
    """Serve POST /add-checkpoint and GET /<sha256 of origin>/checkpoint: cosign each log's checkpoints that are
    signed by its key and consistent with the last one cosigned (state kept in --state across restarts)."""
    import uvicorn

    from api import logs
    from api.cli.servers import _bind
    from api.witness import build_witness_app
    from ledger.core.tlog.note import NoteError, parse_vkey
    from ledger.core.tlog.witness_state import StateDir, Witness, read_witness_key

    try:
        signer = read_witness_key(key)
        verifiers = []
        for given in log_vkey:
            try:
                verifiers.append(parse_vkey(given))
            except NoteError as exc:
                raise InvalidInput(
                    f"--log-vkey {given[:80]!r} is not a verifier key: {exc}",
                    "give the log's key as `compliance-ledger tlog vkey` prints it: <origin>+<8 hex>+<base64>",
                ) from None
        states = StateDir(state)
    except LedgerError as exc:
        raise fail(exc) from exc
    try:
        witness = Witness(signer, verifiers, states)
        sock = _bind(host, port)
    except LedgerError as exc:
        states.close()
        raise fail(exc) from exc
    sock.listen(128)  # listening from here: the line below is a readiness signal
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    err.print(
        f"Witness {signer.name} on http://{shown}:{sock.getsockname()[1]}  "
        "(POST /add-checkpoint; GET /<sha256 hex of origin>/checkpoint)",
        soft_wrap=True,
        markup=False,
    )
    err.print(f"cosigning as {signer.verifier.vkey}; state in {states.path}", soft_wrap=True, markup=False)
    for origin in witness.logs:
        size = witness.size_of(origin)
        last = "nothing cosigned yet" if size is None else f"last cosigned size {size}"
        err.print(f"witnessing {origin}: {last}", soft_wrap=True, markup=False)
    logs.configure(json_lines=False)
    server = uvicorn.Server(
        uvicorn.Config(build_witness_app(witness), log_level="warning", access_log=False, log_config=None)
    )
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
        states.close()
    if not server.started:
        raise typer.Exit(3)


def register(app: typer.Typer) -> None:
    """Add the ``tlog`` group to the root command."""
    app.add_typer(group, name="tlog")
