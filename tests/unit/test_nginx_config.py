"""The shipped nginx configuration (docs/nginx-ledger.conf) says what README "Running several nodes" says it does,
and the cluster test rewrites only its node addresses and listen port; the connection budget the README gives
(at most 17 PostgreSQL connections per node) is the ledger's pool."""

from __future__ import annotations

import re

import pytest
from sqlalchemy.pool import QueuePool

from api.settings import Settings
from ledger.core.storage import SqlEventStore, make_engine
from tests.nginx_support import TEMPLATE, site_config
from tests.store_support import TEST_ROW_KEY

SHIPPED = TEMPLATE.read_text(encoding="utf-8")


def seconds(directive: str) -> int:
    found = re.findall(rf"^\s*{directive}\s+(\d+)s;", SHIPPED, re.MULTILINE)
    assert len(found) == 1, directive
    return int(found[0])


def test_the_cluster_test_changes_only_the_node_addresses_and_the_port() -> None:
    nodes = ["127.0.0.1:40001", "127.0.0.1:40002", "127.0.0.1:40003"]
    rewritten = site_config(SHIPPED, nodes, 45678)
    changed = [(old, new) for old, new in zip(SHIPPED.splitlines(), rewritten.splitlines(), strict=True) if old != new]
    assert [new.strip() for _, new in changed] == [
        *(f"server {node} max_fails=1 fail_timeout=10s;" for node in nodes),
        "listen 127.0.0.1:45678;",
    ]
    with pytest.raises(AssertionError, match="no longer has"):
        site_config("upstream u { }", nodes, 1)


def test_a_stalled_node_is_taken_out_but_a_healthy_one_answering_a_busy_write_is_not() -> None:
    # A healthy node answers a write within its lock timeout (503 store_busy past it): the read timeout that
    # takes a node out must be longer.
    assert seconds("proxy_read_timeout") > Settings.model_fields["lock_timeout_seconds"].default
    assert "max_fails=1 fail_timeout=10s" in SHIPPED


def test_a_post_is_passed_to_another_node_only_if_it_never_reached_one() -> None:
    (retry,) = re.findall(r"^\s*proxy_next_upstream\s+([^;]*);", SHIPPED, re.MULTILINE)
    assert retry.split() == ["error", "timeout"]  # no non_idempotent: a repeated search is a second event
    assert not re.search(r"^\s*keepalive\s", SHIPPED, re.MULTILINE)


def test_a_node_holds_at_most_17_postgresql_connections() -> None:
    # The ledger's pool and the health probe's, as a node makes them (nothing connects until asked).
    store = SqlEventStore(make_engine("postgresql://nobody@127.0.0.1:1/none"), row_key=TEST_ROW_KEY)
    try:
        pools = [store.engine.pool, store._probe_engine().pool]
        assert all(isinstance(pool, QueuePool) for pool in pools)
        assert [(pool.size(), pool._max_overflow) for pool in pools] == [(5, 10), (2, 0)]  # type: ignore[attr-defined]
    finally:
        store.dispose()
