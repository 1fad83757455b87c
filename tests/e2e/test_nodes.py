"""Several ``serve`` nodes on one PostgreSQL ledger: a start changes nothing (no DDL, no key file), so nodes started
at once all come up and a start does not wait for another node's write; a schema behind the program is refused
with the command to run, and ``migrate`` (safe from several processes at once) brings it up to date."""

from __future__ import annotations

import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import httpx
import psycopg
import pytest

from api.bootstrap import initialise
from api.settings import Settings
from ledger.core.storage import APPEND_LOCK, make_engine, migration
from ledger.service import Actor
from tests.server_support import (
    HTTP_TIMEOUT,
    compliance_ledger_serve,
    homes_sharing_keys,
    ledger_cli,
    wait_until,
)


def cli(home: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return ledger_cli(home, url, *args, COLUMNS="200")


def initialised(tmp_path: Path, url: str, nodes: int) -> list[Path]:
    return homes_sharing_keys(tmp_path, url, nodes, COLUMNS="200")


def healthy(base: str) -> bool:
    """Readiness: /health answers (polled, never a fixed sleep)."""
    try:
        return httpx.get(f"{base}/health", timeout=HTTP_TIMEOUT).status_code == 200
    except httpx.TransportError:
        return False


def test_nodes_started_at_the_same_moment_on_one_schema_all_come_up(tmp_path: Path, pg_url: str) -> None:
    homes = initialised(tmp_path, pg_url, 3)
    with ExitStack() as stack, ThreadPoolExecutor(len(homes)) as pool:
        starting = [pool.submit(stack.enter_context, compliance_ledger_serve(home, pg_url)) for home in homes]
        bases = [future.result() for future in starting]
        for base in bases:
            wait_until(lambda base=base: healthy(base), f"{base}/health")
        heads = {httpx.get(f"{base}/health", timeout=HTTP_TIMEOUT).json()["head_position"] for base in bases}
    assert len(heads) == 1  # one ledger, seen alike from every node


def test_a_start_while_another_process_holds_an_append_does_not_wait_for_it(tmp_path: Path, pg_url: str) -> None:
    (home,) = initialised(tmp_path, pg_url, 1)
    with psycopg.connect(pg_url) as writer:
        # What an append of another node holds until it commits: the append lock and the table's row-exclusive
        # lock (which the old start's DROP/CREATE TRIGGER had to wait for).
        writer.execute(f"SELECT pg_advisory_xact_lock('events'::regclass::oid::int4, {APPEND_LOCK})")
        writer.execute("LOCK TABLE events IN ROW EXCLUSIVE MODE")
        with compliance_ledger_serve(home, pg_url, LEDGER_LOCK_TIMEOUT_SECONDS="600") as base:
            answer = httpx.get(f"{base}/health", timeout=HTTP_TIMEOUT)
        writer.rollback()
    # The node is up (200) while another holds the lock, and says the store is busy.
    assert answer.status_code == 200 and answer.json()["store_busy"] is True and answer.json()["head_position"] >= 1


def run_sql(url: str, statement: str) -> None:
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.exec_driver_sql(statement)
    engine.dispose()


def behind(url: str) -> None:
    run_sql(url, "UPDATE ledger_schema SET version = 0")


def test_serve_and_mcp_refuse_a_schema_behind_the_program_naming_the_command(tmp_path: Path, db_url: str) -> None:
    (home,) = initialised(tmp_path, db_url, 1)
    behind(db_url)
    served = cli(home, db_url, "serve", "--port", "0")
    stdio = cli(home, db_url, "mcp", "--agent", "a")
    for refused in (served, stdio):
        said = " ".join(refused.stderr.split())
        assert refused.returncode == 1, said
        assert f"schema is at version 0; this program needs version {migration.SCHEMA_VERSION}" in said
        assert "run `compliance-ledger migrate` once" in said
        assert "Compliance Ledger on" not in said
    engine = make_engine(db_url)
    assert migration.schema_state(engine).version == 0  # the refusal changed nothing
    engine.dispose()
    doctor = cli(home, db_url, "doctor")
    assert doctor.returncode == 1 and "run `compliance-ledger migrate`" in " ".join(doctor.stdout.split())


@pytest.mark.parametrize("old", ["version 0", "no version table"])
def test_migrate_from_several_processes_at_once_brings_the_schema_up_once(
    tmp_path: Path, db_url: str, old: str
) -> None:
    homes = initialised(tmp_path, db_url, 3)
    if old == "version 0":
        behind(db_url)
    else:  # a ledger from before versions were recorded
        run_sql(db_url, "DROP TABLE ledger_schema")
    with ThreadPoolExecutor(len(homes)) as pool:
        runs = list(pool.map(lambda home: cli(home, db_url, "migrate"), homes))
    assert [run.returncode for run in runs] == [0, 0, 0], [run.stderr for run in runs]
    engine = make_engine(db_url)
    assert migration.schema_state(engine).current
    engine.dispose()
    again = cli(homes[0], db_url, "migrate")
    assert again.returncode == 0 and "already current" in again.stdout
    with compliance_ledger_serve(homes[1], db_url) as base:
        wait_until(lambda: healthy(base), "the migrated node's /health")


def test_migrate_refuses_a_database_without_a_ledger(tmp_path: Path, db_url: str) -> None:
    run = cli(tmp_path, db_url, "migrate")
    assert run.returncode == 1 and "holds no ledger to migrate" in run.stderr and "compliance-ledger init" in run.stderr
    assert not (tmp_path / "receipt.key").exists()


def test_a_node_without_key_files_is_refused_naming_both_and_writes_none(tmp_path: Path, db_url: str) -> None:
    initialised(tmp_path, db_url, 1)
    fresh = tmp_path / "fresh"
    served = cli(fresh, db_url, "serve", "--port", "0")
    stdio = cli(fresh, db_url, "mcp", "--agent", "a")
    for refused in (served, stdio):
        said = " ".join(refused.stderr.split())
        assert refused.returncode == 1, said
        assert f"receipt key {fresh / 'receipt.key'} is missing" in said
        assert f"signing key {fresh / 'signing.key'} is missing" in said
        assert "copy receipt.key and signing.key from a node of this ledger" in said
        assert "Compliance Ledger on" not in said
    assert not (fresh / "receipt.key").exists() and not (fresh / "signing.key").exists()


@pytest.mark.parametrize("wrong", ["receipt.key", "signing.key"])
def test_a_node_with_another_ledgers_key_file_is_refused_naming_it(tmp_path: Path, db_url: str, wrong: str) -> None:
    _, node = initialised(tmp_path, db_url, 2)
    elsewhere = tmp_path / "elsewhere"
    assert cli(elsewhere, f"sqlite:///{elsewhere / 'other.db'}", "init", "--no-seed").returncode == 0
    shutil.copy2(elsewhere / wrong, node / wrong)  # a key of another ledger
    kept = {name: (node / name).read_bytes() for name in ("receipt.key", "signing.key")}
    refused = cli(node, db_url, "serve", "--port", "0")
    said = " ".join(refused.stderr.split())
    kind = "receipt" if wrong == "receipt.key" else "signing"
    assert refused.returncode == 1, said
    assert f"{kind} key {node / wrong} is " in said and "not this ledger's" in said
    assert ("receipt key" in said) == (kind == "receipt") and ("signing key /" in said) == (kind == "signing")
    assert {name: (node / name).read_bytes() for name in kept} == kept  # nothing rewritten


def test_a_version_1_ledger_is_refused_by_serve_and_migrate_adds_the_data_keys(tmp_path: Path, db_url: str) -> None:
    """Schema 2 (issue 26): the data keys' table comes with the schema, not with the first write, and the SQLite
    search index is rebuilt with rowids that are its blocks' positions. A ledger of version 1 (no ``data_keys``,
    the index of before) is refused by ``serve``, which names ``migrate``; ``migrate`` brings it up."""
    (home,) = initialised(tmp_path, db_url, 1)
    run_sql(db_url, "DROP TABLE data_keys")
    run_sql(db_url, "UPDATE ledger_schema SET version = 1")
    if db_url.startswith("sqlite"):
        run_sql(db_url, "UPDATE projection_versions SET version = 'fts5 tokenize=porter unicode61 provenance'")
    served = cli(home, db_url, "serve", "--port", "0")
    said = " ".join(served.stderr.split())
    assert served.returncode == 1, said
    assert f"schema is at version 1 and lacks data_keys; this program needs version {migration.SCHEMA_VERSION}" in said
    assert "run `compliance-ledger migrate` once" in said

    run = cli(home, db_url, "migrate")
    assert run.returncode == 0 and "migrated from version 1" in run.stdout, run.stderr
    engine = make_engine(db_url)
    assert migration.schema_state(engine).current
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT count(*) FROM data_keys").scalar_one() == 0  # there, and empty
        if db_url.startswith("sqlite"):
            version = conn.exec_driver_sql("SELECT version FROM projection_versions").scalar_one()
            assert version.endswith("rowid=position")
    engine.dispose()
    ledger, _ = initialise(Settings(home=home, database_url=db_url, semantic=False))
    try:
        block_id = ledger.remember(Actor("alice", "cli"), "The migrated ledger encrypts this.").block_id
        assert ledger.kernel.keys.key_ids(f"block:{block_id}")
    finally:
        ledger.store.dispose()
