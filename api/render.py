"""Rendering shared by the REST and CLI adapters."""

from __future__ import annotations

import json
from typing import Any

from ledger.core.chain import StoredRecord


def event_dict(rec: StoredRecord) -> dict[str, Any]:
    """An event exactly as stored, with its payloads parsed (JSON-lines output and ``GET /events``)."""
    return {
        "position": rec.position,
        "stream": rec.stream,
        "version": rec.version,
        "type": rec.type,
        "schema_version": rec.schema_version,
        "data": json.loads(rec.data_json),
        "meta": json.loads(rec.meta_json),
        "recorded_at": rec.recorded_at,
        "prev_hash": rec.prev_hash,
        "hash": rec.hash,
    }
