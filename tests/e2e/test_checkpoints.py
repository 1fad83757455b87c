"""Signed checkpoints over HTTP: serve writes them by itself and serves the latest and the public key."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from api.settings import Settings
from ledger.audit import checkpoints
from ledger.core import signing
from ledger.service import Actor
from tests.conftest import LedgerFactory
from tests.server_support import HTTP_TIMEOUT, READY_WITHIN, running

ALICE = Actor("alice", "rest")


def wait_for_checkpoint(http: httpx.Client, base: str, position: int) -> checkpoints.Checkpoint:
    """Poll until serve has written a checkpoint at ``position`` or later (readiness, not timing)."""
    deadline = time.monotonic() + READY_WITHIN
    while True:
        response = http.get(f"{base}/checkpoints/latest")
        if response.status_code == 200:
            latest = checkpoints.parse(response.json())
            if latest.position >= position:
                return latest
        elif response.status_code != 404:
            raise AssertionError(response.text)
        if time.monotonic() > deadline:
            raise AssertionError(f"no checkpoint at position {position} yet: {response.text}")
        time.sleep(0.05)


def test_serve_writes_checkpoints_as_the_log_grows_and_serves_the_latest_and_the_public_key(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path
) -> None:
    ledger = make_ledger(db_url)
    file = tmp_path / "kept" / "checkpoints.jsonl"
    settings = Settings(home=tmp_path, checkpoint_file=file, checkpoint_every_events=3, checkpoint_every_minutes=0)
    with running(ledger, settings) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        first = wait_for_checkpoint(http, base, ledger.store.head()[0])  # one at start
        sid = http.post(f"{base}/sessions", json={"role": "dev"}).json()["session_id"]
        for i in range(4):
            http.post(f"{base}/memory/blocks", json={"content": f"a note worth keeping {i}", "session_id": sid})
        grown = wait_for_checkpoint(http, base, first.position + 3)
        document = http.get(f"{base}/keys/public").json()
        public = signing.PublicKey.from_text(document["pem"])
        jwk_key = signing.PublicKey.from_text(str(document["jwk"]).replace("'", '"'))
        http.post(f"{base}/memory/blocks", json={"content": "one more note before the end", "session_id": sid})
    final_head = ledger.store.head()[0]
    written = list(checkpoints.read_sources([file]))

    assert document["key_id"] == public.key_id == jwk_key.key_id == ledger.public_key().key_id
    assert grown.signed_by(public)
    assert all(s.checkpoint is not None and s.checkpoint.signed_by(public) for s in written)
    assert written[-1].checkpoint is not None and written[-1].checkpoint.position == final_head  # at shutdown
    assert [f.problem for f in ledger.verify_checkpoints(written, public)] == [None] * len(written)


def test_latest_checkpoint_is_a_404_with_a_hint_until_one_exists(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    settings = Settings(home=tmp_path, checkpoint_every_events=0, checkpoint_every_minutes=0)  # writer off
    with running(ledger, settings) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        missing = http.get(f"{base}/checkpoints/latest")
    assert missing.status_code == 404
    assert "compliance-ledger checkpoint" in missing.json()["error"]["hint"]
