"""One set of decision settings per ledger: ``init`` records its node's, ``serve`` and ``mcp`` refuse to start on a
node whose own differ (naming each, with the ledger's value and the node's), ``settings apply`` adopts a node's for
the whole cluster, and ``doctor`` lists the nodes that served with their settings' digests. Real processes on a
SQLite file and on PostgreSQL."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import ExitStack
from functools import partial
from pathlib import Path

from ledger.core.events import SettingsApplied
from ledger.core.storage import make_engine, migration
from tests.e2e.test_nodes import healthy, initialised, run_sql
from tests.server_support import READY_WITHIN, compliance_ledger_serve, wait_until


def cli(home: Path, url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "api", *args],
        env={**os.environ, "LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": url, "COLUMNS": "250", **env},
        stdin=subprocess.DEVNULL,  # ``mcp`` serves until its input ends (one whose ledger cannot open, too)
        capture_output=True,
        text=True,
        timeout=READY_WITHIN,
    )


def said(run: subprocess.CompletedProcess[str]) -> str:
    return " ".join((run.stdout + run.stderr).split())


def applied(url: str) -> list[SettingsApplied]:
    """Every SettingsApplied in the log, oldest first (read without the key: the test only counts them)."""
    from ledger.core.storage import SqlEventStore

    engine = make_engine(url)
    try:
        events = SqlEventStore(engine, row_key=None).load_stream("settings").events
    finally:
        engine.dispose()
    return [rec.event for rec in events if isinstance(rec.event, SettingsApplied)]


ANCHOR = {"LEDGER_REQUIRE_ANCHOR": "true"}


def test_a_node_whose_require_anchor_differs_is_refused_until_settings_apply_then_both_start(
    tmp_path: Path, db_url: str
) -> None:
    first, second = initialised(tmp_path, db_url, 2)
    [recorded] = applied(db_url)  # init recorded its node's settings
    assert recorded.values["require_anchor"] is False

    for refused in (
        cli(second, db_url, "serve", "--port", "0", **ANCHOR),
        cli(second, db_url, "mcp", "--agent", "a", **ANCHOR),
    ):
        text = said(refused)
        assert refused.returncode == 1, text
        assert "this node's decision settings differ from the ledger's" in text
        assert "require_anchor (LEDGER_REQUIRE_ANCHOR): the ledger's false, this node's true" in text
        assert "token_ttl" not in text and "workflow_file" not in text  # only what differs is named
        assert "`compliance-ledger settings apply`" in text
        assert "Compliance Ledger on" not in text

    with ExitStack() as stack:
        # The first node runs with the ledger's settings while an operator adopts the second node's.
        old = stack.enter_context(compliance_ledger_serve(first, db_url, LEDGER_NODE_NAME="node-a"))
        wait_until(lambda: healthy(old), "node-a's /health")
        dry = cli(second, db_url, "settings", "apply", **ANCHOR)
        assert (
            dry.returncode == 0
            and "require_anchor (LEDGER_REQUIRE_ANCHOR): the ledger's false, this node's true" in said(dry)
        )
        assert "nothing recorded: run again with --yes" in said(dry) and len(applied(db_url)) == 1
        done = cli(second, db_url, "settings", "apply", "--yes", **ANCHOR)
        assert done.returncode == 0 and "recorded at position" in said(done), said(done)
        [_, adopted] = applied(db_url)
        assert adopted.values["require_anchor"] is True and adopted.digest != recorded.digest

        # node-a still runs with the old settings: doctor names it, and fails.
        doctor = cli(first, db_url, "doctor", **ANCHOR)
        text = said(doctor)
        assert doctor.returncode == 1, text
        assert "node node-a FAIL serve" in text and f"settings {recorded.digest[:16]} (not the ledger's)" in text
        again = cli(second, db_url, "settings", "apply", "--yes", **ANCHOR)
        assert "already this node's" in said(again) and len(applied(db_url)) == 2  # nothing new recorded

    # The first node, without the new setting, is refused now; with it, both nodes start.
    refused = cli(first, db_url, "serve", "--port", "0")
    assert refused.returncode == 1
    assert "require_anchor (LEDGER_REQUIRE_ANCHOR): the ledger's true, this node's false" in said(refused)
    with ExitStack() as stack:
        for name, home in (("node-a", first), ("node-b", second)):
            base = stack.enter_context(
                compliance_ledger_serve(home, db_url, LEDGER_NODE_NAME=name, LEDGER_REQUIRE_ANCHOR="true")
            )
            wait_until(partial(healthy, base), f"{name}'s /health")
        doctor = cli(first, db_url, "doctor", **ANCHOR)
    text = said(doctor)
    assert doctor.returncode == 0, doctor.stdout
    assert f"settings ok ledger digest {adopted.digest[:16]}; this node's the same" in text
    for name in ("node-a", "node-b"):
        assert f"node {name} ok serve" in text
    assert text.count(f"settings {adopted.digest[:16]};") == 2


def test_an_mcp_node_announces_itself_and_doctor_lists_it(tmp_path: Path, sqlite_url: str) -> None:
    (home,) = initialised(tmp_path, sqlite_url, 1)
    stdio = subprocess.run(  # an MCP client that connects and goes away at once: stdin at its end
        [sys.executable, "-m", "api", "mcp", "--agent", "a"],
        env={**os.environ, "LEDGER_HOME": str(home), "LEDGER_DATABASE_URL": sqlite_url, "LEDGER_NODE_NAME": "stdio-1"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=READY_WITHIN,
    )
    assert stdio.returncode == 0, stdio.stderr
    [recorded] = applied(sqlite_url)
    text = said(cli(home, sqlite_url, "doctor"))
    assert "node stdio-1 ok mcp" in text and f"settings {recorded.digest[:16]}; started" in text and "stopped" in text


def test_a_rule_file_changed_on_one_node_is_refused_naming_the_file(tmp_path: Path, db_url: str) -> None:
    from ledger.enforcement.rules import RULES_FILE

    first, second = initialised(tmp_path, db_url, 2)
    shipped, _ = RULES_FILE.text()
    same = tmp_path / "same_rules.yaml"
    same.write_text(shipped, encoding="utf-8")
    changed = tmp_path / "rules.yaml"
    assert "default_level: warning" in shipped
    changed.write_text(shipped.replace("default_level: warning", "default_level: strict"), encoding="utf-8")

    # A node whose file holds the shipped text decides as one that sets none: it starts.
    with compliance_ledger_serve(second, db_url, LEDGER_ENFORCEMENT_RULES_FILE=str(same)) as base:
        wait_until(lambda: healthy(base), "the node with the shipped rules in a file")

    rules = {"LEDGER_ENFORCEMENT_RULES_FILE": str(changed)}
    refused = cli(second, db_url, "serve", "--port", "0", **rules)
    text = said(refused)
    assert refused.returncode == 1, text
    [recorded] = applied(db_url)
    ledger_sha = recorded.values["enforcement_rules_file"]["sha256"]
    assert (
        f"enforcement_rules_file (LEDGER_ENFORCEMENT_RULES_FILE): the ledger's sha256:{ledger_sha[:16]}, this node's "
        f"sha256:" in text
    )
    assert f"from {changed}" in text and "require_anchor" not in text
    dry = cli(second, db_url, "settings", "apply", **rules)
    assert "-  default_level: warning" in dry.stdout and "+  default_level: strict" in dry.stdout  # the lines
    # The ledger's file, as recorded, is there to copy onto a node.
    shown = cli(first, db_url, "settings", "show", "--file", "enforcement_rules_file")
    assert shown.returncode == 0 and shown.stdout == shipped
    assert cli(second, db_url, "settings", "apply", "--yes", **rules).returncode == 0
    with compliance_ledger_serve(second, db_url, LEDGER_ENFORCEMENT_RULES_FILE=str(changed)) as base:
        wait_until(lambda: healthy(base), "the node with the applied rules")
    assert "enforcement_rules_file" in said(cli(first, db_url, "serve", "--port", "0"))


def old_ledger(home: Path, url: str) -> None:
    """A ledger as the program before recorded settings made it: the schema and the keys, no ``SettingsApplied``
    (the audit's own initialise, which records none)."""
    from ledger.compose import LedgerSettings, compose
    from ledger.core import receipt_key, signing

    home.mkdir()
    key, _ = receipt_key.create_key(home / "receipt.key")
    signer, _ = signing.create_signing_key(home / "signing.key")
    ledger = compose(LedgerSettings(url, home / "receipt.key", home / "signing.key"), key, signer=signer)
    ledger.initialise()
    ledger.store.dispose()


def test_a_ledger_of_schema_1_is_migrated_and_its_node_settings_recorded(tmp_path: Path, db_url: str) -> None:
    home = tmp_path / "old"
    old_ledger(home, db_url)
    run_sql(db_url, "DROP TABLE ledger_nodes")  # schema version 1 had no ledger_nodes
    run_sql(db_url, "UPDATE ledger_schema SET version = 1")
    assert applied(db_url) == []

    refused = cli(home, db_url, "serve", "--port", "0")
    assert refused.returncode == 1 and "schema is at version 1" in said(refused)
    migrated = cli(home, db_url, "migrate")
    assert migrated.returncode == 0, said(migrated)
    assert "this node's decision settings recorded for the ledger" in said(migrated)
    engine = make_engine(db_url)
    assert migration.schema_state(engine).current
    engine.dispose()
    [recorded] = applied(db_url)
    with compliance_ledger_serve(home, db_url, LEDGER_NODE_NAME="old-node") as base:
        wait_until(lambda: healthy(base), "the migrated node")
    doctor = cli(home, db_url, "doctor")
    text = said(doctor)
    assert doctor.returncode == 0, text
    assert "node old-node ok serve" in text and f"settings {recorded.digest[:16]}; started" in text
    assert "stopped" in text  # it said so when it stopped


def test_a_ledger_with_no_recorded_settings_refuses_a_start_naming_settings_apply(
    tmp_path: Path, sqlite_url: str
) -> None:
    home = tmp_path / "home"
    old_ledger(home, sqlite_url)  # a current schema, but no settings recorded
    refused = cli(home, sqlite_url, "mcp", "--agent", "a")
    text = said(refused)
    assert refused.returncode == 1, text
    assert "the ledger records no decision settings yet" in text and "`compliance-ledger settings apply` once" in text
    assert applied(sqlite_url) == []  # the refusal recorded nothing
    assert cli(home, sqlite_url, "settings", "apply", "--yes").returncode == 0
    with compliance_ledger_serve(home, sqlite_url) as base:
        wait_until(lambda: healthy(base), "the node after settings apply")
