"""Structured logs: one line per HTTP request and per MCP tool call, as ``key=value`` text (people, grep) or one
JSON object a line (``--log-json``, ``LEDGER_LOG_JSON``), always on stderr — stdout belongs to the stdio MCP
protocol.

A line names the time, the request id, the agent, the route or tool, the outcome and the duration; never a
credential, a header, a query string or an argument. ``serve`` and ``mcp`` call :func:`configure`; a process that
does not (a library user, a test) gets the records through the ``logging`` module like any other.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import re
import sys
from typing import IO, Any, Literal

HTTP_LOG = logging.getLogger("compliance_ledger.http")
TOOL_LOG = logging.getLogger("compliance_ledger.tools")

Outcome = Literal["ok", "refused", "rate_limited", "error"]
_BARE = re.compile(r"[^\s\"'=\\]+")
_MARK = "_compliance_ledger_handler"  # our handler on the root logger, so configuring twice replaces it


def outcome_of_status(status: int) -> Outcome:
    """The outcome an HTTP status stands for: ok (below 400), rate_limited (429), refused (other 4xx), error."""
    if status < 400:
        return "ok"
    if status == 429:
        return "rate_limited"
    return "refused" if status < 500 else "error"


def http_request(
    *, request_id: str, agent: str | None, method: str, route: str, status: int, duration_ms: float
) -> None:
    """Log one HTTP request (``route`` is the route's template, e.g. ``/sessions/{session_id}``, when it matched)."""
    if HTTP_LOG.isEnabledFor(logging.INFO):
        fields = {
            "request_id": request_id,
            "agent": agent,
            "method": method,
            "route": route,
            "status": status,
            "outcome": outcome_of_status(status),
            "duration_ms": round(duration_ms, 2),
        }
        HTTP_LOG.info("http_request", extra={"fields": fields})


def tool_call(
    *,
    request_id: str,
    rpc_id: str | int | None,
    agent: str | None,
    transport: str,
    tool: str | None,
    outcome: Outcome,
    duration_ms: float,
) -> None:
    """Log one MCP ``tools/call`` (``rpc_id`` is the JSON-RPC id the client gave the message)."""
    if TOOL_LOG.isEnabledFor(logging.INFO):
        fields = {
            "request_id": request_id,
            "rpc_id": rpc_id,
            "agent": agent,
            "transport": transport,
            "tool": tool,
            "outcome": outcome,
            "duration_ms": round(duration_ms, 2),
        }
        TOOL_LOG.info("tool_call", extra={"fields": fields})


def _time(record: logging.LogRecord) -> str:
    moment = _dt.datetime.fromtimestamp(record.created, _dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _text_value(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    return text if _BARE.fullmatch(text) else json.dumps(text)


class TextFormatter(logging.Formatter):
    """``TIME LEVEL EVENT key=value ...``; a value with spaces, quotes or ``=`` is a JSON string, a missing one
    ``-``. Other records: ``TIME LEVEL LOGGER: MESSAGE``."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", None)
        head = f"{_time(record)} {record.levelname.lower()}"
        if isinstance(fields, dict):
            return f"{head} {record.getMessage()} " + " ".join(f"{k}={_text_value(v)}" for k, v in fields.items())
        line = f"{head} {record.name}: {record.getMessage()}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``time``, ``level``, ``logger``, then ``event`` and its fields, or ``message``
    (and ``exception``) for other records."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {"time": _time(record), "level": record.levelname.lower(), "logger": record.name}
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line["event"] = record.getMessage()
            line.update(fields)
        else:
            line["message"] = record.getMessage()
            if record.exc_info:
                line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class ClosedConnectionReset(logging.Filter):
    """SQLAlchemy's pool logs "Exception during reset or similar" at ERROR, with a traceback, when it rolls back a
    pooled connection that the database had already closed — PostgreSQL ends a session left idle in its transaction
    past the limit (a node that was stopped), or restarts. That is expected, and the pool discards the connection:
    one WARNING line without the traceback says so instead. Every other record passes as it is."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if (
            record.name.startswith("sqlalchemy.pool")
            and record.msg == "Exception during reset or similar"
            and type(exc).__name__ in ("OperationalError", "InterfaceError")
        ):
            first = str(exc).strip().splitlines()
            record.msg, record.args = (
                "discarded a pooled connection the database had closed (%s)",
                (first[0] if first else type(exc).__name__,),
            )
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.exc_info, record.exc_text = None, None
        return True


def configure(*, json_lines: bool, stream: IO[str] | None = None) -> None:
    """Send every log record to ``stream`` (stderr by default) in the chosen format, and this project's request
    and tool-call lines at level INFO (other loggers keep the root's level, WARNING by default)."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if json_lines else TextFormatter())
    handler.addFilter(ClosedConnectionReset())
    setattr(handler, _MARK, True)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _MARK, False)]:
        root.removeHandler(old)
    root.addHandler(handler)
    logging.getLogger("compliance_ledger").setLevel(logging.INFO)
