"""The log line formats: key=value text that quotes what needs quoting, one JSON object a line, and request ids."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator

import pytest

from api import calls, logs

LINE = re.compile(r"^(?P<time>\S+Z) (?P<level>\w+) (?P<event>\w+) (?P<fields>.*)$")
PAIR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), logging.getLogger("compliance_ledger").level
    yield
    root.handlers[:] = handlers
    logging.getLogger("compliance_ledger").setLevel(level)


def parse_text(line: str) -> dict[str, str]:
    match = LINE.match(line)
    assert match, line
    fields = {k: json.loads(v) if v.startswith('"') else v for k, v in PAIR.findall(match["fields"])}
    return {"time": match["time"], "level": match["level"], "event": match["event"], **fields}


def test_a_text_line_is_key_value_pairs_with_awkward_values_quoted(restore_logging: None) -> None:
    out = io.StringIO()
    logs.configure(json_lines=False, stream=out)
    logs.http_request(request_id="r-1", agent=None, method="GET", route='/x y="z"', status=404, duration_ms=1.23456)
    line = out.getvalue().rstrip("\n")
    parsed = parse_text(line)
    assert parsed["event"] == "http_request" and parsed["level"] == "info"
    assert parsed["route"] == '/x y="z"' and parsed["agent"] == "-" and parsed["outcome"] == "refused"
    assert parsed["duration_ms"] == "1.23" and parsed["status"] == "404"


def test_a_json_line_holds_the_event_and_its_fields(restore_logging: None) -> None:
    out = io.StringIO()
    logs.configure(json_lines=True, stream=out)
    logs.tool_call(
        request_id="r-2", rpc_id=7, agent="alice", transport="stdio", tool="clock_in", outcome="ok", duration_ms=2
    )
    logging.getLogger("elsewhere").warning("a warning\nover two lines")
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["event"] == "tool_call" and first["rpc_id"] == 7 and first["tool"] == "clock_in"
    assert first["time"].endswith("Z") and first["logger"] == "compliance_ledger.tools"
    assert second == {**second, "level": "warning", "logger": "elsewhere", "message": "a warning\nover two lines"}


def test_configuring_twice_replaces_the_handler(restore_logging: None) -> None:
    first, second = io.StringIO(), io.StringIO()
    logs.configure(json_lines=False, stream=first)
    logs.configure(json_lines=True, stream=second)
    logs.http_request(request_id="r", agent="a", method="GET", route="/", status=200, duration_ms=0)
    assert first.getvalue() == "" and json.loads(second.getvalue())["status"] == 200


def test_outcomes_follow_the_status() -> None:
    assert [logs.outcome_of_status(s) for s in (200, 307, 401, 422, 429, 500, 503)] == [
        "ok",
        "ok",
        "refused",
        "refused",
        "rate_limited",
        "error",
        "error",
    ]


def test_a_well_formed_request_id_is_kept_and_any_other_replaced() -> None:
    assert calls.request_id_from("trace-01:a.b_c") == "trace-01:a.b_c"
    for bad in (None, "", "has space", "x" * 129, "-leading", "line\nbreak"):
        fresh = calls.request_id_from(bad)
        assert re.fullmatch(r"[0-9a-f]{16}", fresh), bad


class OperationalError(Exception):
    """Stands in for the driver's error (psycopg.OperationalError) in this pure test."""


def test_a_pooled_connection_the_database_closed_is_one_warning_line_without_a_traceback(
    restore_logging: None,
) -> None:
    out = io.StringIO()
    logs.configure(json_lines=True, stream=out)
    pool = logging.getLogger("sqlalchemy.pool.impl.QueuePool")
    try:
        raise OperationalError("terminating connection due to idle-in-transaction timeout\nSSL connection closed")
    except OperationalError:
        pool.error("Exception during reset or similar", exc_info=True)
    try:
        raise ValueError("something else")
    except ValueError:
        pool.error("Exception during reset or similar", exc_info=True)
    first, other = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["level"] == "warning"
    assert first["message"] == (
        "discarded a pooled connection the database had closed "
        "(terminating connection due to idle-in-transaction timeout)"
    )
    assert "exception" not in first
    assert other["level"] == "error" and "Traceback" in other["exception"]  # any other failure keeps its traceback
