"""Integers beyond 64 bits (issue 10, hole 6): a 422 naming the parameter, never a 500 from the driver."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from api.cli import app
from api.settings import Settings
from ledger.core.errors import InvalidInput
from ledger.core.limits import MAX_INT64
from tests.conftest import LedgerFactory
from tests.server_support import HTTP_TIMEOUT, running

HUGE = "18446744073709551617"  # 2**64 + 1


def test_rest_refuses_integers_beyond_64_bits_naming_the_parameter(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        sid = http.post("/sessions", json={"role": "dev"}).json()["session_id"]
        head = ledger.store.head()
        answers = {
            "after": http.get("/events", params={"after": HUGE}),
            "position": http.get(f"/sessions/{sid}", params={"position": HUGE}),
            "position ": http.get("/memory/blocks", params={"position": str(2**63)}),
            " position": http.get("/reports/compliance", params={"position": HUGE}),
        }
        at_the_bound = http.get("/events", params={"after": str(MAX_INT64)})
        assert ledger.store.head() == head
    for name, answer in answers.items():
        assert answer.status_code == 422, (name, answer.text)
        error = answer.json()["error"]
        assert name.strip() in error["message"] and "9223372036854775807" in error["message"], error
    assert at_the_bound.status_code == 200 and at_the_bound.json()["events"] == []


def test_the_store_turns_an_integer_overflow_into_invalid_input(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger()  # SQLite cannot bind an integer beyond 64 bits; the store says so instead of crashing
    with pytest.raises(InvalidInput, match="64-bit"):
        list(ledger.store.iter_records(after=2**64))


def test_cli_refuses_a_position_beyond_64_bits(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    base = ["--home", str(tmp_path), "--db", str(ledger.store.engine.url)]
    result = CliRunner().invoke(app, [*base, "events", "--after", HUGE])
    assert result.exit_code == 2 and "--after" in result.output
