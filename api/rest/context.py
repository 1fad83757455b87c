"""What every REST router shares: the caller dependencies (:data:`Caller`, :data:`Reader`), the strict body base,
the error body and the error handlers.

Routes only translate: parse the request, resolve the caller from the credential, call the service, render.
Errors are always ``{"error": {"code", "message", "hint"}}`` with the right status.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import anyio
import anyio.to_thread
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from api import calls
from api.auth import identify, identify_provisionally, key_from_headers
from api.rest.deps import get_ledger, get_settings
from ledger.core import access
from ledger.core.errors import InvalidInput, LedgerError, StoreUnavailable
from ledger.core.text import HINT as TEXT_HINT
from ledger.core.text import find_bad_text, printable
from ledger.service import Actor, Ledger

T = TypeVar("T")
READING_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class StrictBody(BaseModel):
    """A request body that refuses fields it does not declare."""

    model_config = ConfigDict(extra="forbid")


def error_body(code: str, message: str, hint: str = "") -> dict[str, Any]:
    # An error may quote what the caller sent; a NUL or lone surrogate in it must not break the answer itself.
    return {"error": {"code": code, "message": printable(message), "hint": printable(hint)}}


def error_response(exc: LedgerError) -> JSONResponse:
    """The error body at the error's status; a ``Retry-After`` header when the same request may succeed soon
    (:class:`StoreBusy`: the write lock was held past the timeout and nothing was recorded)."""
    headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after is not None else None
    return JSONResponse(error_body(exc.code, exc.message, exc.hint), status_code=exc.status, headers=headers)


async def refuse_unstorable_text(request: Request) -> None:
    """Every route's first dependency: a NUL or lone surrogate anywhere in the path, query or JSON body is a 422
    naming the field, before the caller is resolved or anything is recorded."""
    for where, params in (
        ("path parameter", request.path_params.items()),
        ("query parameter", request.query_params.multi_items()),
    ):
        for name, value in params:
            found = find_bad_text({name: value})
            if found is not None:
                raise InvalidInput(found.message(where), TEXT_HINT)
    if not await request.body():
        return
    try:
        data = await request.json()  # parsed once: FastAPI's body parameter reads the same cached value
    except ValueError:
        return  # FastAPI answers malformed JSON itself
    found = find_bad_text(data)
    if found is not None:
        raise InvalidInput(found.message(), TEXT_HINT)


@dataclass(frozen=True)
class Credential:
    """A request's caller as presented (its API key, or none), and whether the route changes state.

    A route does all its database work, the caller's identity included, in one worker thread with :meth:`run`:
    one thread hop per request and no database call on the event loop. :meth:`run` resolves the caller against
    the key ring caught up with the log in that thread, so a key revoked by any process a moment ago is refused
    there, before the route's work starts. The :data:`Caller` dependency has already refused, before the body is
    looked at, a caller that the process's cached key ring refuses (confirmed against the log first, as the cache
    may be behind): an unknown or revoked key is a 401 and an auditor on a route that writes a 403, whatever it
    sent.
    """

    ledger: Ledger
    api_key: str | None
    fallback_agent: str
    writes: bool
    threads: anyio.CapacityLimiter | None = None  # the app's request threads (see :func:`request_threads`)

    def actor(self) -> Actor:
        """The caller now (reads the log: call it off the event loop); raises Unauthorized or Forbidden."""
        actor = identify(self.ledger, self.api_key, self.fallback_agent).actor("rest")
        calls.note_agent(actor.agent)  # for the request's log line (api/rest/observe.py)
        if self.writes:  # a read-only role (auditor) is refused here, as the service would refuse its append
            access.require_writer(actor)
        return actor

    def refused_by_cache(self) -> bool:
        """Whether the key ring this process last read refuses the caller (no database read); ``True`` too when
        this process never read the ring, so that the answer comes from the log."""
        ring = self.ledger.known_key_ring()
        if ring is None:
            return True
        try:
            actor = identify_provisionally(ring, self.api_key, self.fallback_agent).actor("rest")
            if self.writes:
                access.require_writer(actor)
        except LedgerError:
            return True
        return False

    async def run(self, work: Callable[[Actor], T]) -> T:
        """Resolve the caller and do ``work`` as them, in one worker thread."""
        return await anyio.to_thread.run_sync(lambda: work(self.actor()), limiter=self.threads)


# Worker threads doing the routes' ledger work at once, per app. More would not answer more: every request
# takes the GIL and most append (one writer per SQLite file, group commit gathers what queues behind it), so
# beyond a few threads they only contend (32 in flight answered fewer requests per second than 8). Requests
# over the limit wait their turn on the event loop, in arrival order.
REQUEST_THREADS = 8


def request_threads(request: Request) -> anyio.CapacityLimiter:
    """The app's limiter for route work, made in the event loop on the first request."""
    state = request.app.state
    limiter: anyio.CapacityLimiter | None = getattr(state, "request_threads", None)
    if limiter is None:
        limiter = state.request_threads = anyio.CapacityLimiter(REQUEST_THREADS)
    return limiter


async def _credential(request: Request, writes: bool) -> Credential:
    settings = await get_settings(request)
    threads = request_threads(request)
    caller = Credential(await get_ledger(request), key_from_headers(request.headers), settings.agent, writes, threads)
    if caller.refused_by_cache():
        await anyio.to_thread.run_sync(caller.actor, limiter=threads)  # a 401/403 unless the log knows better
    return caller


async def current_caller(request: Request) -> Credential:
    """The caller of any route (the local agent, an administrator, while no API key exists); on a route that
    changes state (not GET) a read-only role (auditor) is refused."""
    return await _credential(request, request.method not in READING_METHODS)


async def reading_caller(request: Request) -> Credential:
    """The caller of a POST route that only reads (``POST /stamps/verify``): an auditor may call it."""
    return await _credential(request, False)


Caller = Annotated[Credential, Depends(current_caller)]
Reader = Annotated[Credential, Depends(reading_caller)]


def install_error_handlers(app: FastAPI) -> None:
    """Answer every error with the error body: the ledger's own, invalid requests, unknown routes."""

    @app.exception_handler(LedgerError)
    async def ledger_error(_request: Request, exc: LedgerError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return JSONResponse(
                error_body(
                    "malformed_json",
                    "the request body is not valid JSON",
                    "send a JSON object with Content-Type: application/json",
                ),
                status_code=400,
            )
        parts = []
        for e in errors:
            where = ".".join(str(p) for p in e.get("loc", ()) if p != "body")
            if e.get("type") == "extra_forbidden":
                parts.append(f"unknown field '{where}'")
            else:
                parts.append(f"{where or 'body'}: {e.get('msg')}")
        return JSONResponse(
            error_body("invalid_request", "; ".join(parts), "see /openapi.json for the fields this endpoint accepts"),
            status_code=422,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        hint = "see /openapi.json for the available endpoints" if exc.status_code in (404, 405) else ""
        return JSONResponse(error_body(f"http_{exc.status_code}", str(exc.detail), hint), status_code=exc.status_code)

    @app.exception_handler(StoreUnavailable)
    async def store_down(_request: Request, exc: StoreUnavailable) -> JSONResponse:
        return error_response(exc)
