"""The composition root wires a ledger from plain settings, on a real SQLite file; the store, the clock and the
embedder's verdict can be handed in instead."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

import pytest

from ledger.compose import LedgerSettings, compose, initialise, open_ledger
from ledger.core.errors import InvalidInput, NotInitialised
from ledger.core.receipt_key import create_key
from ledger.core.storage import SqlEventStore, make_engine
from ledger.service import CapabilityConfig, LedgerConfig
from ledger.workflow.table import TABLE


def settings_in(tmp_path: Path, **changes: object) -> LedgerSettings:
    return LedgerSettings(
        db_url=f"sqlite:///{tmp_path / 'ledger.db'}",
        key_path=tmp_path / "receipt.key",
        signing_key_path=tmp_path / "signing.key",
        **changes,  # type: ignore[arg-type]
    )


def test_plain_settings_give_the_defaults_of_the_kernel_and_the_capabilities(tmp_path: Path) -> None:
    ledger, report = initialise(settings_in(tmp_path), embedder=lambda: (False, "BM25 alone: not here"))
    try:
        assert report.ledger_created and report.key_created and report.signing_key_created
        assert ledger.config == LedgerConfig()
        assert ledger.workflow == TABLE.load()  # the shipped table
        assert ledger.project_roots == CapabilityConfig().project_roots
        assert ledger.index.semantic is None and ledger.index.retrieval == "BM25 alone: not here"
    finally:
        ledger.store.dispose()


def test_a_store_a_clock_and_an_embedder_can_be_handed_in(tmp_path: Path) -> None:
    settings = settings_in(tmp_path, kernel=LedgerConfig(snapshot_every=0))
    key, _ = create_key(settings.key_path)
    store = SqlEventStore(make_engine(settings.db_url), row_key=None)
    moment = _dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=_dt.UTC)
    try:
        ledger = compose(settings, key, store=store, clock=lambda: moment, embedder=lambda: (True, "hybrid: fake"))
        assert ledger.store is store and ledger.clock() == moment
        assert ledger.config.snapshot_every == 0
        assert ledger.index.semantic is not None and ledger.index.retrieval == "hybrid: fake"
        off = compose(settings_in(tmp_path, semantic=False), key, store=store, embedder=lambda: (True, "hybrid"))
        assert off.index.semantic is None and "turned off" in off.index.retrieval
    finally:
        store.dispose()


def test_a_bad_workflow_file_is_refused_with_its_name_and_a_way_out(tmp_path: Path) -> None:
    bad = tmp_path / "workflow.yaml"
    bad.write_text("statuses: [", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"workflow\.yaml") as refused:
        initialise(settings_in(tmp_path, workflow_file=bad))
    assert "LEDGER_WORKFLOW_FILE" in refused.value.hint


def test_opening_needs_an_initialised_ledger(tmp_path: Path) -> None:
    with pytest.raises(NotInitialised):
        open_ledger(settings_in(tmp_path))
