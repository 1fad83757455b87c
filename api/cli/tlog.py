"""``compliance-ledger tlog``: the transparency log's commands. ``tlog witness`` runs a c2sp.org/tlog-witness
witness for other logs (``init`` makes its key, ``serve`` answers add-checkpoint); it needs no ledger home and no
database."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from api.cli.context import fail
from api.cli.output import err, out
from ledger.core.errors import InvalidInput, LedgerError

group = typer.Typer(help="The transparency log: checkpoints, proofs and witnesses.", no_args_is_help=True)
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
