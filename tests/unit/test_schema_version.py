"""The schema's version follows its DDL: every text that creates a table, an index, a trigger or a view of the
ledger (and the search index's build version, which a current schema is never rebuilt for at a start) hashes to
the digest pinned for :data:`SCHEMA_VERSION`. A change to any of them fails here until the version is raised (with
what migrates an older schema in ``AuditCommands._migrate``) and the digest pinned again: a start runs no DDL, so
a schema change that kept the version would never reach a running ledger."""

from __future__ import annotations

import hashlib
import json

from ledger.audit import transparency
from ledger.core.storage import migration, rate_buckets, schema
from projections import embedding_index, snapshots
from projections.search import schema as search_schema

PINNED = {
    1: "cc95ec75d43114f01e795a103ae353b9bba735cfe840408127fd30fc5bedb437",
    # 2: the data keys' table (issue 26), the SQLite search index's rowids the positions of their blocks, the
    # nodes' table and PostgreSQL's shared rate-limit counters (issue 27)
    2: "848cb4cbac75561bfde8ce4636eff2e3f443df0eedbc6943cb763d22d2e9633a",
    # 3: each row's authenticator and tree hashes in the events row (issue 24), the guard on UPDATE
    3: "286f034bdb588640105e4ff0d784773b68b3a71378d46d48475cc0ef3b11416a",
}


def schema_digest() -> str:
    texts = {
        "events": [repr(column) for column in schema.EVENTS.columns],
        "triggers": schema._TRIGGERS,
        "guard_update": schema.GUARD_UPDATE,
        "row_columns": schema.ADD_ROW_COLUMNS,
        "migration": migration._DDL,
        "nodes": migration._NODES_DDL,
        "data_keys": schema.DATA_KEYS_DDL,
        "rate_buckets": rate_buckets.DDL,
        "search": [search_schema.VERSION, search_schema.COMMON_DDL, search_schema.DDL],
        "snapshots": snapshots._DDL,
        "embeddings": embedding_index._DDL,
        "transparency": transparency._DDL,
    }
    return hashlib.sha256(json.dumps(texts, sort_keys=True, default=str).encode()).hexdigest()


def test_the_schema_version_is_raised_with_every_change_to_the_schema() -> None:
    assert schema_digest() == PINNED[migration.SCHEMA_VERSION], (
        "the ledger's DDL changed: raise SCHEMA_VERSION (ledger/core/storage/migration.py), migrate older schemas in "
        f"AuditCommands._migrate, and pin {schema_digest()} for it here"
    )
