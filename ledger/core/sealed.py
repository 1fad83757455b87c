"""What a sealed (encrypted) field value looks like in a stored event, and what an erased one reads as.

Pure, and below both the mapper and the key service (:mod:`ledger.core.data_keys`), which holds the keys in SQL:
the mapper recognises a sealed value without importing the store, and the store carries a key made for an append
(:class:`NewKey`) to its transaction.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

VERSION = "v1"  # the metadata's "enc" of an event holding sealed values, and each sealed value's "enc"
ERASED_TEXT = "[erased]"  # what a text field whose data key was destroyed reads as


def is_sealed(value: Any) -> bool:
    """Whether ``value`` is an encrypted field value (in an event whose metadata says it holds some)."""
    return isinstance(value, Mapping) and value.get("enc") == VERSION and "kid" in value and "ct" in value


@dataclass(frozen=True, slots=True)
class NewKey:
    """A data key made for an append and not yet stored: its row goes into the append's own transaction
    (``DataKeys.write``), and later appends use it only once that committed (``DataKeys.adopt``)."""

    kid: str
    subject: str
    wrapped: bytes
    created_at: str
    aead: Any

    @property
    def row(self) -> tuple[str, str, bytes, str]:
        return (self.kid, self.subject, self.wrapped, self.created_at)
