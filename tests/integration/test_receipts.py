"""Receipts: genuine ones verify at every front end; forged, altered or orphaned ones are ``valid: false``."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from typer.testing import CliRunner

from api.cli import app
from ledger import receipts
from ledger.service import Actor, Ledger
from tests.conftest import LedgerFactory

WHO = Actor("alice", "mcp")


def stamped(ledger: Ledger) -> str:
    sid = ledger.clock_in(WHO, "dev").session_id
    ledger.remember(WHO, "receipts are HMAC signed", [], sid)
    ledger.search(WHO, sid, "receipts")
    result = ledger.assert_compliance(WHO, sid)
    assert result.receipt is not None
    return result.receipt


def tamper_claims(receipt: str, **changes: object) -> str:
    prefix, claims, sig = receipt.split(".")
    data = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
    data.update(changes)
    raw = base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    return f"{prefix}.{raw}.{sig}"


def test_a_genuine_receipt_points_at_its_stamp_event(make_ledger: LedgerFactory, db_url: str) -> None:
    ledger = make_ledger(db_url)
    receipt = stamped(ledger)
    verdict = ledger.verify_stamp(receipt)
    record = ledger.store.get(verdict.position or 0)
    assert verdict.valid and verdict.agent == "alice" and verdict.count == 1
    assert record is not None and record.type == "ComplianceStamped" and record.hash == verdict.event_hash


def test_altered_claims_forged_signatures_and_other_keys_are_not_genuine(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    receipt = stamped(ledger)
    other_key = receipts.ReceiptKey(b"k" * 32)
    forged = receipts.sign(other_key, position=1, hash="0" * 64, session_id="ses_x", count=9)
    cases = {
        "count raised": tamper_claims(receipt, c=99),
        "position moved": tamper_claims(receipt, p=1),
        "signature replaced": receipt.rsplit(".", 1)[0] + ".AAAA",
        "signed by another key": forged,
        "not a receipt": "hello world",
    }
    for name, bad in cases.items():
        verdict = ledger.verify_stamp(bad)
        assert verdict.valid is False, name
        assert verdict.reason, name


def test_a_receipt_for_an_event_altered_behind_the_stores_back_is_not_genuine(
    make_ledger: LedgerFactory,
) -> None:
    ledger = make_ledger()
    receipt = stamped(ledger)
    position = ledger.verify_stamp(receipt).position
    with ledger.store.engine.begin() as conn:
        conn.exec_driver_sql("DROP TRIGGER events_reject_update")
        conn.exec_driver_sql(
            f"UPDATE events SET data = replace(data, '\"count\":1', '\"count\":7') WHERE position = {position}"
        )
    verdict = ledger.verify_stamp(receipt)
    assert verdict.valid is False and "altered" in verdict.reason


def test_the_cli_verifies_a_receipt_and_exits_non_zero_for_a_forgery(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    receipt = stamped(ledger)
    base = ["--home", str(tmp_path), "--db", str(ledger.store.engine.url)]
    good = CliRunner().invoke(app, [*base, "verify-stamp", receipt, "--json"])
    bad = CliRunner().invoke(app, [*base, "verify-stamp", tamper_claims(receipt, c=5)])
    assert good.exit_code == 0 and json.loads(good.stdout)["valid"] is True
    assert bad.exit_code == 1 and "NOT genuine" in bad.stdout
