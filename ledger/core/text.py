"""The one check for text the ledger cannot store: NUL characters and lone surrogates.

PostgreSQL ``text`` cannot hold U+0000, and a lone surrogate (U+D800-U+DFFF, which JSON parsers and
``surrogateescape`` let through) has no UTF-8 form. Every interface edge (REST, MCP, CLI) and the event encoder
run :func:`find_bad_text` over what they received, so such text is refused with the field's name before anything
is recorded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ledger.core.errors import InvalidInput

_BAD = re.compile("[\x00\ud800-\udfff]")
HINT = "send plain text without NUL characters (U+0000) or unpaired \\uD800-\\uDFFF escapes"


@dataclass(frozen=True, slots=True)
class BadText:
    """Where the first unstorable character is: the dotted path of the field and what the character is."""

    path: str
    char: str

    @property
    def what(self) -> str:
        return "a NUL character (U+0000)" if self.char == "\x00" else f"a lone surrogate (U+{ord(self.char):04X})"

    def message(self, noun: str = "field") -> str:
        return f"{noun} '{printable(self.path)}' contains {self.what}, which the ledger cannot store"


def printable(text: str) -> str:
    """``text`` with each NUL and lone surrogate written as its ``\\uXXXX`` escape (safe to render as UTF-8)."""
    return _BAD.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def bad_char(text: str) -> str | None:
    """The first NUL or lone surrogate in ``text``, or ``None``."""
    found = _BAD.search(text)
    return found.group() if found else None


def find_bad_text(value: Any, path: str = "") -> BadText | None:
    """The first NUL or lone surrogate in any string of ``value`` (nested dicts, lists and tuples; keys too)."""
    if isinstance(value, str):
        char = bad_char(value)
        return BadText(path or "value", char) if char is not None else None
    if isinstance(value, Mapping):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and (char := bad_char(key)) is not None:
                return BadText(where, char)
            if (found := find_bad_text(item, where)) is not None:
                return found
        return None
    if isinstance(value, list | tuple):
        return _first(value, path)
    return None


def _first(items: Iterable[Any], path: str) -> BadText | None:
    for i, item in enumerate(items):
        if (found := find_bad_text(item, f"{path}.{i}" if path else str(i))) is not None:
            return found
    return None


def require_clean(value: Any, path: str = "", noun: str = "field") -> None:
    """Raise :class:`InvalidInput` naming the field when ``value`` holds a NUL or a lone surrogate."""
    found = find_bad_text(value, path)
    if found is not None:
        raise InvalidInput(found.message(noun), HINT)
