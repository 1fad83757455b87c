"""The MCP endpoint at ``/mcp``, built on its first request: a ``serve`` that only answers REST never loads the
MCP SDK (about 24 MB of resident memory and a third of a second of start-up)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup, TaskStatus
from starlette.types import ASGIApp, Receive, Scope, Send

Built = tuple[ASGIApp, Callable[[], AbstractAsyncContextManager[object]]]  # the ASGI app and its session manager


class LazyMcp:
    """An ASGI app that builds the MCP app with ``build`` (in a worker thread) on the first request, then starts
    its session manager in the task group of :meth:`running` — the application's lifespan — where it runs until
    shutdown. Requests that arrive while it is being built wait for it."""

    def __init__(self, build: Callable[[], Built]) -> None:
        self._build = build
        self._app: ASGIApp | None = None
        self._lock: anyio.Lock | None = None
        self._group: TaskGroup | None = None

    @property
    def loaded(self) -> bool:
        """Whether a request has built the MCP app yet."""
        return self._app is not None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The application's lifespan: the session manager, once built, runs inside it and stops with it."""
        async with anyio.create_task_group() as group:
            self._group = group
            try:
                yield
            finally:
                self._group = None
                group.cancel_scope.cancel()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self._app if self._app is not None else await self._start()
        await app(_trimmed(scope), receive, send)

    async def _start(self) -> ASGIApp:
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._app is None:
                if self._group is None:
                    raise RuntimeError("the MCP endpoint answers only while the application runs (its lifespan)")
                app, session_manager = await anyio.to_thread.run_sync(self._build)
                await self._group.start(_serve, session_manager)
                self._app = app
        return self._app


def _trimmed(scope: Scope) -> Scope:
    """The request with its header values stripped of surrounding whitespace, which is not part of a field value
    (RFC 9110 §5.5): uvicorn's HTTP parser keeps trailing blanks, and the SDK compares ``Mcp-Name`` and
    ``Mcp-Method`` with the body byte for byte (the conformance suite's ``http-header-validation`` sends them)."""
    headers = scope.get("headers") or []
    if all(value == value.strip(b" \t") for _, value in headers):
        return scope
    return {**scope, "headers": [(name, value.strip(b" \t")) for name, value in headers]}


async def _serve(
    session_manager: Callable[[], AbstractAsyncContextManager[object]],
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    async with session_manager():
        task_status.started()
        await anyio.sleep_forever()
