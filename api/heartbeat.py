"""A node's announcements (``ledger_nodes``, :mod:`ledger.core.storage.nodes`): ``serve`` and ``mcp`` write their
row at start, then refresh it every 30 s from a daemon thread, with their version and the digest of their decision
settings, so that ``doctor`` lists the nodes that served recently.

Each refresh also reads the ledger's recorded decision settings: a node still running after an operator applied
other ones (``compliance-ledger settings apply``) logs an error, once per change, saying to restart it. An
announcement that fails (the table missing, the database away) is logged and the node serves on: it is what an
operator reads, never what a decision needs.
"""

from __future__ import annotations

import datetime as _dt
import logging
import threading
from dataclasses import dataclass, field

from api.version import package_version
from ledger.core.errors import LedgerError
from ledger.core.events import SettingsApplied
from ledger.core.storage import nodes
from ledger.service import Ledger

log = logging.getLogger(__name__)


@dataclass
class Heartbeat:
    """This node's row in ``ledger_nodes``: :meth:`start` announces it and starts the refreshes, :meth:`stop`
    ends them."""

    ledger: Ledger
    kind: str  # "serve" or "mcp"
    digest: str  # of this node's decision settings
    name: str = field(default_factory=nodes.default_node_name)
    every: float = nodes.HEARTBEAT_SECONDS
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _started_at: _dt.datetime | None = None
    _said: str | None = None  # the last problem logged, so each is logged once

    def start(self, *, background: bool = False) -> None:
        """Announce this node (after pruning the rows of nodes gone for a week) and start the refreshes; with
        ``background`` the announcement is the thread's first act, so the caller does not wait for it."""
        self._started_at = self.ledger.clock()
        if not background:
            self._first()
        self._thread = threading.Thread(target=self._run, args=(background,), name="ledger-heartbeat", daemon=True)
        self._thread.start()

    def _first(self) -> None:
        try:
            nodes.prune(self.ledger.store.engine, self.ledger.clock())
        except LedgerError as exc:
            self._say(f"could not prune old node rows: {exc.message}")
        self.beat()

    def stop(self) -> None:
        """End the refreshes and say that this node stopped (a node killed says nothing: ``doctor`` shows it as
        last seen)."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.every)
        self.beat(stopping=True)

    def _run(self, first: bool) -> None:
        if first:
            self._first()
        while not self._stop.wait(self.every):
            self.beat()

    def beat(self, *, stopping: bool = False) -> None:
        """Announce this node now, and say (once) if the ledger's decision settings are no longer this node's."""
        now = self.ledger.clock()
        started = self._started_at if self._started_at is not None else now
        node = nodes.Node(self.name, self.kind, package_version(), self.digest, started, now, now if stopping else None)
        try:
            nodes.announce(self.ledger.store.engine, node)
            applied = self.ledger.applied_settings()
        except LedgerError as exc:
            self._say(f"could not announce node {self.name} in ledger_nodes: {exc.message} ({exc.hint})")
            return
        if applied is not None and isinstance(applied.event, SettingsApplied) and applied.event.digest != self.digest:
            event = applied.event
            self._say(
                f"the ledger's decision settings changed (now {event.digest[:16]}, applied at "
                f"{applied.recorded_at:%Y-%m-%d %H:%M:%SZ}); this node still decides with {self.digest[:16]}: restart "
                "it with the ledger's settings (`compliance-ledger settings show`)"
            )
        else:
            self._said = None

    def _say(self, problem: str) -> None:
        if problem != self._said:
            log.error(problem)
            self._said = problem
