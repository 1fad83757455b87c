"""The command line piped (stdout not a terminal, no ``COLUMNS``): every record stays on one line however long —
``verify-stamp``'s verdict and the event it names, a row of a listing — so a script or a copy gets it whole; and
``verify-stamp`` says "genuine" once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory

LONG_AGENT = "a-reviewer-bot-with-an-agent-name-long-enough-for-two-lines-42"  # 62 of the 64 allowed


def stamp(ledger: Ledger) -> tuple[str, str]:
    """A PASS stamp's receipt for LONG_AGENT and its session id."""
    who = Actor(LONG_AGENT, "mcp")
    sid = ledger.clock_in(who, "dev").session_id
    ledger.remember(who, "receipts are signed with the ledger key", [], sid)
    ledger.search(who, sid, "receipts")
    result = ledger.assert_compliance(who, sid)
    assert result.receipt is not None
    return result.receipt, sid


def piped(home: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``compliance-ledger --home HOME --db URL ARGS`` with stdout and stderr pipes, no COLUMNS, no colour."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run(
        [sys.executable, "-m", "api", "--home", str(home), "--db", url, *args],
        capture_output=True,
        text=True,
        env={**env, "NO_COLOR": "1"},
        check=False,
    )


def test_verify_stamp_piped_prints_its_verdict_once_and_the_event_on_one_line(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    receipt, sid = stamp(ledger)
    verdict = ledger.verify_stamp(receipt)

    run = piped(tmp_path, db_url, "verify-stamp", receipt)

    assert run.returncode == 0, run.stderr
    first, second, third = run.stdout.splitlines()
    assert first == "genuine: signed by this ledger and matching the recorded stamp event"
    assert second == (
        f"event {verdict.position} · session {sid} · agent {LONG_AGENT} · 1 memories · {verdict.recorded_at}"
    )
    assert len(second) > 80
    assert f"compliance-ledger tlog prove {verdict.position}" in third  # the receipt leads to its proof bundle


def test_verify_stamp_offline_piped_says_genuine_once(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    receipt, sid = stamp(ledger)
    public = tmp_path / "ledger.pub"
    public.write_text(ledger.public_key().pem)
    nowhere = "postgresql://postgres@127.0.0.1:1/none"  # offline: the database is never opened

    run = piped(tmp_path / "empty", nowhere, "verify-stamp", receipt, "--public-key", str(public))

    assert run.returncode == 0, run.stderr
    first, second, _bundle = run.stdout.splitlines()
    key_id = ledger.public_key().key_id
    assert first == (
        f"genuine: signed by ledger key {key_id} (offline: whether the log still holds the event was not checked; "
        "verify on the ledger for that)"
    )
    assert f"session {sid} · agent {LONG_AGENT} · 1 memories" in second
    assert first.count("genuine") == 1


def test_a_listing_piped_keeps_each_row_on_one_line(make_ledger: LedgerFactory, db_url: str, tmp_path: Path) -> None:
    ledger = make_ledger(db_url)
    stamp(ledger)

    run = piped(tmp_path, db_url, "report", "compliance")

    assert run.returncode == 0, run.stderr
    [row] = [line for line in run.stdout.splitlines() if LONG_AGENT in line]
    assert row.split() == [LONG_AGENT, "1", "1", "1", "0", "100%"]
