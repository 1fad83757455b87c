"""Receipts: genuine ones verify at every front end; forged, altered or orphaned ones are ``valid: false``.

Checking a receipt against the log is the sessions' handler's: on the in-memory store (``MEMORY``), except an event
altered behind the store's back and the command line, which need the SQLite file."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from api.cli import app
from ledger.core import clock as _clock
from ledger.core import signing
from ledger.service import Actor, Ledger
from ledger.sessions import receipts
from tests.conftest import MEMORY, LedgerFactory

WHO = Actor("alice", "mcp")


def stamped(ledger: Ledger) -> str:
    sid = ledger.clock_in(WHO, "dev").session_id
    ledger.remember(WHO, "receipts are signed with the ledger key", [], sid)
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


def test_a_genuine_receipt_points_at_its_stamp_event(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    receipt = stamped(ledger)
    verdict = ledger.verify_stamp(receipt)
    record = ledger.store.get(verdict.position or 0)
    assert verdict.valid and verdict.agent == "alice" and verdict.count == 1
    assert record is not None and record.type == "ComplianceStamped" and record.hash == verdict.event_hash


def test_altered_claims_forged_signatures_and_other_keys_are_not_genuine(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger(MEMORY)
    receipt = stamped(ledger)
    other_key = signing.SigningKey.generate()
    forged = receipts.sign(
        other_key, position=1, hash="0" * 64, session_id="ses_x", count=9, agent="alice", recorded_at=_clock.now()
    )
    forged_hmac = receipts.sign_hmac(receipts.ReceiptKey(b"k" * 32), position=1, hash="0" * 64, session_id="s", count=9)
    cases = {
        "count raised": tamper_claims(receipt, c=99),
        "position moved": tamper_claims(receipt, p=1),
        "signature replaced": receipt.rsplit(".", 1)[0] + ".AAAA",
        "signed by another key": forged,
        "HMAC-signed by another key": forged_hmac,
        "agent changed": tamper_claims(receipt, a="mallory"),
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


def test_new_receipts_are_ed25519_and_old_hmac_receipts_keep_verifying(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    receipt = stamped(ledger)
    new = ledger.verify_stamp(receipt)
    assert new.position is not None and new.event_hash is not None and new.session_id is not None
    # What assert_compliance issued before Ed25519: an HMAC over the same event, with the receipt key.
    old = receipts.sign_hmac(
        ledger.key, position=new.position, hash=new.event_hash, session_id=new.session_id, count=new.count or 0
    )

    verdict = ledger.verify_stamp(old)

    assert receipt.startswith("clr2.") and new.valid and new.scheme == "clr2"
    assert verdict.valid and verdict.scheme == "clr1" and verdict.position == new.position


ABSURD = ["1e999", "Infinity", "-Infinity", "NaN", str(2**64), str(2**63), "-1", "true", "1.5", '"7"', "[]", "{}"]


@pytest.mark.parametrize("claim", ["p", "c"])
def test_receipts_carrying_absurd_numbers_are_not_genuine_never_a_crash(make_ledger: LedgerFactory, claim: str) -> None:
    ledger = make_ledger(MEMORY)
    genuine = (stamped(ledger), receipts.sign_hmac(ledger.key, position=2, hash="a" * 64, session_id="s", count=1))
    for receipt in genuine:
        prefix, claims, sig = receipt.split(".")
        data = json.loads(base64.urlsafe_b64decode(claims + "=" * (-len(claims) % 4)))
        for number in ABSURD:
            text = json.dumps({**data, claim: "@@"}).replace('"@@"', number)
            raw = base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()

            verdict = ledger.verify_stamp(f"{prefix}.{raw}.{sig}")

            assert verdict.valid is False and "not a well-formed receipt" in verdict.reason, (prefix, number)


def test_the_cli_checks_a_receipt_offline_with_the_public_key_and_never_opens_the_database(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    receipt = stamped(ledger)
    public = tmp_path / "ledger.pub"
    public.write_text(ledger.public_key().pem)
    old = receipts.sign_hmac(ledger.key, position=2, hash="a" * 64, session_id="s", count=1)
    nowhere = ["--home", str(tmp_path / "empty"), "--db", "postgresql://postgres@127.0.0.1:1/none"]

    good = CliRunner().invoke(app, [*nowhere, "verify-stamp", receipt, "--public-key", str(public), "--json"])
    altered = CliRunner().invoke(
        app, [*nowhere, "verify-stamp", tamper_claims(receipt, c=5), "--public-key", str(public)]
    )
    hmac = CliRunner().invoke(app, [*nowhere, "verify-stamp", old, "--public-key", str(public)])

    verdict = json.loads(good.stdout)
    assert good.exit_code == 0 and verdict["valid"] is True and verdict["checked_against_log"] is False
    assert verdict["agent"] == "alice" and verdict["count"] == 1
    assert altered.exit_code == 1 and "NOT genuine" in altered.stdout
    assert hmac.exit_code == 1 and "secret receipt key" in " ".join(hmac.stdout.split())
