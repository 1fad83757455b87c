"""``GET /health``: this node's health (ok, busy or unavailable), probed on threads and connections of its own.

It is about this node: 200 while the node can reach its database, even when another node holds the write lock
(the body says ``store_busy``), so a load balancer that probes it takes a node out only when that node is down."""

from __future__ import annotations

from typing import Any, Literal

import anyio
import anyio.to_thread
from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from api.rest.deps import LedgerDep
from api.version import package_version
from ledger.core.errors import LedgerError


class Health(BaseModel):
    status: Literal["ok", "busy", "unavailable"]
    database: str
    head_position: int | None = None
    store_busy: bool = Field(
        default=False,
        description="the write lock was held (by any node) past the probe's wait: writes may get 503 store_busy now; "
        "this node itself is up",
    )
    index_skipped: list[int] = Field(
        default_factory=list, description="positions of events the search index could not hold and skipped"
    )
    version: str = Field(default_factory=package_version, description="the ledger's version (package metadata)")
    search: str = Field(
        default="",
        description="what memory search ranks by: 'hybrid: BM25 + ... embeddings', or 'BM25 alone: <why>' (the "
        "[semantic] extra missing or LEDGER_SEMANTIC=false)",
    )


def router() -> APIRouter:
    """``GET /health`` for this app's ledger."""
    api = APIRouter()
    health_threads: list[anyio.CapacityLimiter] = []  # made in the event loop, on the first call

    @api.get("/health", response_model=Health, tags=["ops"], responses={503: {"model": Health}})
    async def health(ledger: LedgerDep) -> Any:
        """This node's health: 200 ok, 200 busy (the write lock was held past the probe's wait, by this node or
        another: writes may get 503 now, ``store_busy`` true) or 503 unavailable (this node cannot reach its
        database: the one answer a load balancer should take it out for). The probe runs on threads and a
        connection pool of its own, so requests stuck on a held lock cannot starve it."""
        if not health_threads:
            health_threads.append(anyio.CapacityLimiter(2))
        try:
            probe = await anyio.to_thread.run_sync(ledger.store.probe, limiter=health_threads[0])
        except LedgerError as exc:
            down = Health(status="unavailable", database=exc.message).model_dump()
            return JSONResponse(down, status_code=503)
        if probe.busy:  # still 200: this node is up; the lock's holder may be another node
            return Health(
                status="busy", database=ledger.store.dialect, head_position=probe.head_position, store_busy=True
            )
        try:  # on the probe's own pool too, so a starved main pool cannot hang the report
            skips = await anyio.to_thread.run_sync(
                ledger.index.skips, ledger.store._probe_engine(), limiter=health_threads[0]
            )
        except LedgerError as exc:
            return JSONResponse(Health(status="unavailable", database=exc.message).model_dump(), status_code=503)
        return Health(
            status="ok",
            database=ledger.store.dialect,
            head_position=probe.head_position,
            index_skipped=[k.position for k in skips],
            search=ledger.index.retrieval,
        )

    return api
