"""The transparency log over HTTP: ``GET /checkpoint`` (the newest C2SP checkpoint, text), ``GET /tlog/vkey``,
``GET /tlog/inclusion`` and ``GET /tlog/consistency`` (RFC 9162 proofs as base64 hashes).

Checkpoints, the verifier key and consistency proofs hold no event content: any caller reads them. An inclusion
proof names an event's chain hash: auditor and administrator keys (with no keys, every caller, as for every read).
"""

from __future__ import annotations

import base64
from typing import Any

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse, Response
from pydantic import BaseModel, Field

from api.rest.context import Caller
from api.rest.deps import LedgerDep
from ledger.core import access
from ledger.core.errors import NotFound
from ledger.core.limits import MAX_INT64
from ledger.service import Actor

NOTE_TYPE = "text/plain; charset=utf-8"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class InclusionProof(BaseModel):
    """RFC 9162 §2.1.3: the audit path of leaf ``index`` (the event at position index + 1) in the tree of ``size``."""

    index: int
    size: int
    leaf: str = Field(
        description="the leaf data, base64: the event's 32-byte chain hash (leaf hash = SHA-256(0x00 ‖ it))"
    )
    proof: list[str] = Field(description="base64 hashes, from the leaf's sibling up to the root's child")


class ConsistencyProof(BaseModel):
    """RFC 9162 §2.1.4: that the tree of ``old`` leaves is a prefix of the tree of ``size`` leaves."""

    old: int
    size: int
    proof: list[str]


def router() -> APIRouter:
    routes = APIRouter(tags=["transparency log"])

    @routes.get(
        "/checkpoint",
        response_class=Response,
        responses={200: {"content": {NOTE_TYPE: {}}, "description": "a c2sp.org/tlog-checkpoint signed note"}},
    )
    async def checkpoint(ledger: LedgerDep, who: Caller) -> Any:
        """The newest checkpoint of the log's Merkle tree: a c2sp.org/tlog-checkpoint signed by the ledger's key, with
        its witnesses' cosignatures."""

        def latest(_actor: Actor) -> str:
            kept = ledger.latest_tlog_checkpoint()
            if kept is None:
                raise NotFound(
                    "no checkpoint has been signed yet",
                    "serve signs one at start and as the log grows; or run `compliance-ledger tlog checkpoint`",
                )
            return kept.note

        return PlainTextResponse(await who.run(latest), media_type=NOTE_TYPE)

    @routes.get(
        "/tlog/vkey",
        response_class=Response,
        responses={200: {"content": {NOTE_TYPE: {}}, "description": "the signed-note verifier key, one line"}},
    )
    async def vkey(ledger: LedgerDep, who: Caller) -> Any:
        """The verifier key of the ledger's checkpoints, in the signed-note format (name+key ID+base64 key)."""
        return PlainTextResponse(await who.run(lambda _actor: ledger.tlog_vkey() + "\n"), media_type=NOTE_TYPE)

    @routes.get("/tlog/inclusion", response_model=InclusionProof)
    async def inclusion(
        ledger: LedgerDep,
        who: Caller,
        index: int = Query(ge=0, le=MAX_INT64, description="the leaf: an event's position minus 1"),
        size: int = Query(ge=1, le=MAX_INT64, description="the tree size, e.g. a checkpoint's"),
    ) -> Any:
        """The inclusion proof of leaf ``index`` in the tree of ``size`` leaves (auditor or admin)."""

        def prove(actor: Actor) -> InclusionProof:
            access.require_overview(actor, "inclusion proofs (they name events' hashes)")
            leaf, proof = ledger.tlog_inclusion(index, size)
            return InclusionProof(index=index, size=size, leaf=_b64(leaf), proof=[_b64(h) for h in proof])

        return await who.run(prove)

    @routes.get("/tlog/consistency", response_model=ConsistencyProof)
    async def consistency(
        ledger: LedgerDep,
        who: Caller,
        old: int = Query(ge=1, le=MAX_INT64, description="the smaller tree size (a checkpoint you kept)"),
        size: int = Query(ge=1, le=MAX_INT64, description="the larger tree size"),
    ) -> Any:
        """The consistency proof from the tree of ``old`` leaves to the tree of ``size`` leaves."""

        def prove(_actor: Actor) -> ConsistencyProof:
            proof = ledger.tlog_consistency(old, size)
            return ConsistencyProof(old=old, size=size, proof=[_b64(h) for h in proof])

        return await who.run(prove)

    return routes
