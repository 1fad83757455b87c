"""What a sealed (encrypted) field value looks like in a stored event, and what an erased one reads as.

Pure, and below both the mapper and the key service (:mod:`ledger.core.data_keys`), which holds the keys in SQL:
the mapper recognises a sealed value without importing the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

VERSION = "v1"  # the metadata's "enc" of an event holding sealed values, and each sealed value's "enc"
ERASED_TEXT = "[erased]"  # what a text field whose data key was destroyed reads as


def is_sealed(value: Any) -> bool:
    """Whether ``value`` is an encrypted field value (in an event whose metadata says it holds some)."""
    return isinstance(value, Mapping) and value.get("enc") == VERSION and "kid" in value and "ct" in value
