"""The witness's HTTP interface (c2sp.org/tlog-witness): ``POST /add-checkpoint`` and the monitoring API's
``GET /<origin hash>/checkpoint``, one prefix for both. Apart from the ledger's REST app: no database, no API keys.

The spec authenticates nothing but the log's signature on the checkpoint. The decisions are
:mod:`ledger.core.tlog.witness`'s, the state :class:`~ledger.core.tlog.witness_state.Witness`'s.
"""

from __future__ import annotations

import re

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.responses import Response

from ledger.core.tlog.note import MAX_NOTE_BYTES
from ledger.core.tlog.witness import MAX_PROOF_LINES, TEXT, Refusal
from ledger.core.tlog.witness_state import Witness

MAX_BODY_BYTES = MAX_NOTE_BYTES + (MAX_PROOF_LINES + 2) * 64
"""The largest add-checkpoint body read: the largest note the witness parses and 63 proof lines."""
_ORIGIN_HASH = re.compile(r"[0-9a-f]{64}")


def _text(body: str, status: int = 200) -> Response:
    return Response(body.encode("utf-8"), status_code=status, media_type=TEXT)


def _refused(refusal: Refusal) -> Response:
    # set as a header, not as media_type: Starlette would add "; charset=utf-8" to a text/ type, and clients compare
    # the 409's Content-Type with "text/x.tlog.size" exactly
    return Response(
        refusal.body.encode("utf-8"), status_code=refusal.status, headers={"Content-Type": refusal.content_type}
    )


async def _body(request: Request) -> bytes | None:
    """The request body, or None once it grows past :data:`MAX_BODY_BYTES`."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def build_witness_app(witness: Witness) -> FastAPI:
    """The witness's app: its two routes, nothing else (no docs pages, no OpenAPI document)."""
    app = FastAPI(title="c2sp.org/tlog-witness", docs_url=None, redoc_url=None, openapi_url=None)

    @app.post("/add-checkpoint")
    async def add_checkpoint(request: Request) -> Response:
        body = await _body(request)
        if body is None:
            return _text(f"the body is larger than {MAX_BODY_BYTES} bytes\n", 413)
        try:
            # on a worker thread: the per-log lock and the fsync block, and requests for other logs go on meanwhile
            cosigned = await anyio.to_thread.run_sync(witness.add_checkpoint, body)
        except Refusal as refusal:
            return _refused(refusal)
        except OSError as exc:
            return _text(f"the witness could not record the checkpoint, so it did not cosign: {exc}\n", 500)
        return _text(cosigned.lines)

    @app.get("/{origin_hash}/checkpoint")
    def checkpoint(origin_hash: str) -> Response:
        """The last checkpoint cosigned for the log whose origin's SHA-256 is ``origin_hash`` (lower-case hex), with
        the log's signature and the witness's cosignature; 404 when the witness never cosigned one."""
        note = witness.latest(origin_hash) if _ORIGIN_HASH.fullmatch(origin_hash) else None
        if note is None:
            return _text(
                "this witness has cosigned no checkpoint of a log whose origin has that SHA-256\n"
                "hint: ask for /<lower-case hex SHA-256 of the log's origin>/checkpoint\n",
                404,
            )
        return _text(note)

    return app
