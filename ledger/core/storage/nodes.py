"""The nodes that served a ledger: each ``serve`` and ``mcp`` announces itself in ``ledger_nodes`` (created by the
migration to schema version 2, :mod:`.migration`) at its start and then every :data:`HEARTBEAT_SECONDS`, with its
program version and the digest of its decision settings; ``doctor`` lists the nodes seen recently.

A side table, not the log: a heartbeat as an event would fill the log with nothing that was decided. One row a
node, updated in place; rows not seen for :data:`KEEP_FOR` are pruned at a node's start.
"""

from __future__ import annotations

import datetime as _dt
import os
import socket
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from ledger.core.canonical import format_ts, parse_ts
from ledger.core.storage.driver_errors import translate_errors

HEARTBEAT_SECONDS = 30.0
LIVE_WITHIN = _dt.timedelta(seconds=3 * HEARTBEAT_SECONDS)  # a serve node seen this recently is running
RECENT = _dt.timedelta(hours=24)  # what doctor lists
KEEP_FOR = _dt.timedelta(days=7)

_UPSERT = (
    "INSERT INTO ledger_nodes (node, kind, version, settings_digest, started_at, seen_at, stopped_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (node) DO UPDATE SET kind = excluded.kind, version = excluded.version, "
    "settings_digest = excluded.settings_digest, started_at = excluded.started_at, seen_at = excluded.seen_at, "
    "stopped_at = excluded.stopped_at"
)


def default_node_name() -> str:
    """``<hostname>:<pid>``: unique among the running nodes; ``LEDGER_NODE_NAME`` names a node that keeps one row
    across restarts."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True, slots=True)
class Node:
    """A node as it announced itself: its name, ``serve`` or ``mcp``, its program version, the digest of its
    decision settings, when it started, when it was last seen and when it stopped (``None``: it did not say; it
    runs, or it was killed)."""

    node: str
    kind: str
    version: str
    settings_digest: str
    started_at: _dt.datetime
    seen_at: _dt.datetime
    stopped_at: _dt.datetime | None = None


def _sql(engine: Engine, text: str) -> str:
    return text if engine.dialect.name == "sqlite" else text.replace("?", "%s")


def announce(engine: Engine, node: Node) -> None:
    """Write (or refresh) this node's row: one short transaction on the side table, no lock of the log."""
    stopped = format_ts(node.stopped_at) if node.stopped_at is not None else None
    times = (format_ts(node.started_at), format_ts(node.seen_at), stopped)
    row = (node.node, node.kind, node.version, node.settings_digest, *times)
    with translate_errors(engine.dialect.name), engine.begin() as conn:
        conn.exec_driver_sql(_sql(engine, _UPSERT), row)


def prune(engine: Engine, now: _dt.datetime) -> None:
    """Forget the nodes not seen for :data:`KEEP_FOR`."""
    with translate_errors(engine.dialect.name), engine.begin() as conn:
        conn.exec_driver_sql(_sql(engine, "DELETE FROM ledger_nodes WHERE seen_at < ?"), (format_ts(now - KEEP_FOR),))


def recent(engine: Engine, now: _dt.datetime, within: _dt.timedelta = RECENT) -> list[Node]:
    """The nodes seen in the last ``within``, the most recently seen first."""
    query = (
        "SELECT node, kind, version, settings_digest, started_at, seen_at, stopped_at FROM ledger_nodes "
        "WHERE seen_at >= ? "
        "ORDER BY seen_at DESC, node"
    )
    with translate_errors(engine.dialect.name), engine.connect() as conn:
        rows = conn.exec_driver_sql(_sql(engine, query), (format_ts(now - within),)).fetchall()
    return [Node(r[0], r[1], r[2], r[3], parse_ts(r[4]), parse_ts(r[5]), r[6] and parse_ts(r[6])) for r in rows]
