"""The hash chain: each event's hash covers all its other columns and its predecessor's hash.

``hash = sha256(canonical_json({position, stream, version, type, schema_version, data, meta, recorded_at,
prev_hash}))``. :func:`record_hash` builds that canonical text by composition from the already-canonical
``data`` and ``meta`` texts, so the append path serialises each payload once; a test checks it against
:func:`ledger.canonical.canonical_json` of the whole record.
"""

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

GENESIS_HASH = "0" * 64


def _s(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _text(
    *,
    data_json: str,
    meta_json: str,
    position: int,
    q_prev: str,
    q_at: str,
    schema_version: int,
    q_stream: str,
    q_type: str,
    version: int,
) -> bytes:
    """The record's canonical JSON (keys sorted) from its parts; ``q_*`` are already JSON-quoted strings."""
    return (
        f'{{"data":{data_json},"meta":{meta_json},"position":{position},"prev_hash":{q_prev},'
        f'"recorded_at":{q_at},"schema_version":{schema_version},"stream":{q_stream},'
        f'"type":{q_type},"version":{version}}}'
    ).encode()


def record_hash(
    *,
    position: int,
    stream: str,
    version: int,
    type: str,
    schema_version: int,
    data_json: str,
    meta_json: str,
    recorded_at: str,
    prev_hash: str,
) -> str:
    """Return the SHA-256 hex digest of the record's canonical JSON (keys in sorted order)."""
    return hashlib.sha256(
        _text(
            data_json=data_json,
            meta_json=meta_json,
            position=position,
            q_prev=_s(prev_hash),
            q_at=_s(recorded_at),
            schema_version=schema_version,
            q_stream=_s(stream),
            q_type=_s(type),
            version=version,
        )
    ).hexdigest()


def _q(text: str) -> str:
    """``json.dumps(text, ensure_ascii=False)`` for the printable strings without a quote or a backslash that rows
    hold (streams, types, times, hashes), without calling it: those it quotes as they are."""
    return f'"{text}"' if text.isprintable() and '"' not in text and "\\" not in text else _s(text)


def row_hash(
    position: int,
    stream: str,
    version: int,
    type: str,
    schema_version: int,
    data_json: str,
    meta_json: str,
    recorded_at: str,
    prev_hash: str,
) -> str:
    """:func:`record_hash` of a row read back, in the columns' order, for every read that checks a row's content
    against its hash: the plain-ASCII strings (streams, types, times, hashes) are quoted without ``json.dumps``."""
    return hashlib.sha256(
        (
            f'{{"data":{data_json},"meta":{meta_json},"position":{position},"prev_hash":{_q(prev_hash)},'
            f'"recorded_at":{_q(recorded_at)},"schema_version":{schema_version},"stream":{_q(stream)},'
            f'"type":{_q(type)},"version":{version}}}'
        ).encode()
    ).hexdigest()


Row = tuple[int, str, int, str, int, str, str, str, str, str]


def chain_rows(
    *,
    position: int,
    version: int,
    stream: str,
    recorded_at: str,
    prev_hash: str,
    meta_json: str,
    encoded: Sequence[tuple[str, int, str]],
) -> list[Row]:
    """Rows for events appended together to one stream after ``position`` / ``version``, hashes chained.

    Gives the same digests as :func:`record_hash`, quoting the fields shared by the batch only once.
    Each row is ``(position, stream, version, type, schema_version, data, meta, recorded_at, prev_hash,
    hash)``.
    """
    q_stream, q_at, q_prev = _s(stream), _s(recorded_at), _s(prev_hash)
    rows: list[Row] = []
    for type_name, schema_version, data_json in encoded:
        position += 1
        version += 1
        digest = hashlib.sha256(
            _text(
                data_json=data_json,
                meta_json=meta_json,
                position=position,
                q_prev=q_prev,
                q_at=q_at,
                schema_version=schema_version,
                q_stream=q_stream,
                q_type=_s(type_name),
                version=version,
            )
        ).hexdigest()
        rows.append(
            (
                position,
                stream,
                version,
                type_name,
                schema_version,
                data_json,
                meta_json,
                recorded_at,
                prev_hash,
                digest,
            )
        )
        prev_hash, q_prev = digest, f'"{digest}"'  # a hex digest needs no escaping
    return rows


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """One row of the ``events`` table exactly as stored (payloads as canonical JSON text)."""

    position: int
    stream: str
    version: int
    type: str
    schema_version: int
    data_json: str
    meta_json: str
    recorded_at: str
    prev_hash: str
    hash: str

    def computed_hash(self) -> str:
        return record_hash(
            position=self.position,
            stream=self.stream,
            version=self.version,
            type=self.type,
            schema_version=self.schema_version,
            data_json=self.data_json,
            meta_json=self.meta_json,
            recorded_at=self.recorded_at,
            prev_hash=self.prev_hash,
        )


@dataclass(frozen=True, slots=True)
class ChainReport:
    """Outcome of :func:`verify_chain`."""

    ok: bool
    checked: int
    head_position: int
    first_bad_position: int | None = None
    reason: str | None = None


def verify_chain(
    records: Iterable[StoredRecord], start_position: int = 1, start_prev_hash: str = GENESIS_HASH
) -> ChainReport:
    """Recompute the chain over ``records`` (in position order from ``start_position``); report the first break."""
    prev_hash = start_prev_hash
    expected_position = start_position
    checked = 0
    last = 0
    for rec in records:
        if rec.position != expected_position:
            return ChainReport(False, checked, last, expected_position, f"position {expected_position} is missing")
        if rec.prev_hash != prev_hash:
            return ChainReport(False, checked, last, rec.position, "prev_hash does not match the previous event")
        if rec.computed_hash() != rec.hash:
            return ChainReport(False, checked, last, rec.position, "hash does not match the event's contents")
        prev_hash = rec.hash
        last = rec.position
        expected_position = rec.position + 1
        checked += 1
    return ChainReport(True, checked, last)
