"""The ledger of ``compliance-ledger mcp``, opened in a thread once the handshake is answered.

A client waits for the answer to ``initialize`` before anything else; opening the ledger (SQLAlchemy, the store,
the projections: about half of a start) is not needed for it. So the stdio server answers first and opens the
ledger after: when the client's next message arrives (``notifications/initialized``, or any request from a client
that sends no handshake), when it leaves (stdin at its end: the node still announces itself, its default session
still opens and closes), or :data:`GRACE_S` after the answer at the latest. Started any earlier, the opening would
share the interpreter with the handshake and delay its answer.

Every use of the ledger waits for the opening (:attr:`LedgerOpening.ledger` stands for it). When it failed, the
server stays up and every use fails closed saying why (:class:`~ledger.core.errors.StoreUnavailable`, whose
message and hint are the opening's), and the command exits 1 when the client leaves.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import anyio.to_thread

from api.ratelimit import RateLimiter, limiter
from ledger.core.errors import LedgerError, StoreUnavailable

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

    from ledger.service import Ledger
    from ledger.workflow.report import Workflow

log = logging.getLogger(__name__)

GRACE_S = 0.5
"""How long after answering ``initialize`` the opening waits for the client's next message before it starts anyway."""


class LedgerOpening:
    """The ledger ``open_ledger`` returns, opened in a thread of its own once :meth:`go` is called (see the module's
    docstring for when). :attr:`ledger` is a stand-in to hand to :func:`api.mcp.server.build_mcp`: each use waits
    for the opening, then is the ledger's, or raises the opening's failure. ``open_ledger`` must use ``workflow``."""

    def __init__(self, open_ledger: Callable[[], Ledger], workflow: Workflow) -> None:
        self._open_ledger = open_ledger
        self.workflow = workflow
        """The ledger's workflow table, read before it opens: the task tools publish its names."""
        self._go = threading.Event()
        self._done = threading.Event()
        self._opened: Ledger | None = None
        self.problem: LedgerError | None = None
        """Why the opening failed (``None`` while it runs, or when it succeeded)."""
        self._thread = threading.Thread(target=self._open, name="ledger-open", daemon=True)
        self._timer: threading.Timer | None = None
        self.ledger = cast("Ledger", _Pending(self))

    def start(self) -> None:
        """Start the thread that opens the ledger once :meth:`go` is called."""
        self._thread.start()

    def go(self) -> None:
        """Open the ledger now (the handshake is answered, or will not come)."""
        self._go.set()

    def go_soon(self) -> None:
        """``initialize`` is answered: open the ledger at the client's next message, or in :data:`GRACE_S`."""
        if self._timer is None and not self._go.is_set():
            self._timer = threading.Timer(GRACE_S, self.go)
            self._timer.daemon = True
            self._timer.start()

    def result(self) -> Ledger | None:
        """The ledger once opened; ``None`` when the opening failed (it does not start the opening)."""
        self._done.wait()
        return self._opened

    def wait(self) -> Ledger:
        """The ledger once opened, or :class:`StoreUnavailable` saying why it could not be."""
        ledger = self.result()
        if ledger is None:
            assert self.problem is not None
            hint = f"{self.problem.hint}; then restart this MCP server" if self.problem.hint else "restart it"
            raise StoreUnavailable(f"the ledger could not be opened: {self.problem.message}", hint)
        return ledger

    async def observe(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Server middleware (``MCPServer.middleware``): every message but ``initialize`` starts the opening (it
        may need the ledger); ``initialize`` starts it :data:`GRACE_S` after its answer unless another comes."""
        if ctx.method == "initialize":
            try:
                return await call_next(ctx)
            finally:
                self.go_soon()
        self.go()
        return await call_next(ctx)

    def _open(self) -> None:
        self._go.wait()
        if self._timer is not None:
            self._timer.cancel()
        try:
            self._opened = self._open_ledger()
        except LedgerError as exc:
            self.problem = exc
            log.error("the ledger could not be opened: %s%s", exc.message, f" ({exc.hint})" if exc.hint else "")
        except Exception as exc:  # a fault, not a refusal: still fail closed, and say where to look
            log.exception("the ledger could not be opened")
            self.problem = StoreUnavailable(f"{type(exc).__name__}: {exc}", "see this server's log on stderr")
        finally:
            self._done.set()


class _Pending:
    """Stands for the ledger while it opens: an attribute looked up waits for the opening (the tools look the
    ledger's methods up when called, never when registered)."""

    def __init__(self, opening: LedgerOpening) -> None:
        self._opening = opening

    def __getattr__(self, name: str) -> Any:
        return getattr(self._opening.wait(), name)


class OpeningLimiter(RateLimiter):
    """The rate limit of a stdio server whose ledger is still opening: a call waits for the opening, then draws on
    the ledger's limiter (:func:`api.ratelimit.limiter`: shared by the nodes on PostgreSQL); on this process's own
    buckets when the opening failed (its calls fail closed anyway)."""

    def __init__(self, opening: LedgerOpening, limit: int, window: float) -> None:
        super().__init__(limit, window)
        self._opening = opening
        self._lock = threading.Lock()
        self._built = False
        self._inner: RateLimiter | None = None

    def _limiter(self) -> RateLimiter | None:
        ledger = self._opening.result()
        with self._lock:
            if not self._built:
                self._inner = limiter(self.limit, self.window, ledger.store) if ledger is not None else None
                self._built = True
        return self._inner

    def take(self, key: str) -> float | None:
        inner = self._limiter()
        return inner.take(key) if inner is not None else super().take(key)

    async def take_async(self, key: str) -> float | None:
        inner = self._inner if self._built else await anyio.to_thread.run_sync(self._limiter)  # waits off the loop
        return await inner.take_async(key) if inner is not None else super().take(key)
