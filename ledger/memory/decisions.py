"""Memory decisions: input limits, content normalisation, block identity and duplicate rejection."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from ledger.core.canonical import require_utf8
from ledger.core.errors import InvalidInput
from ledger.core.events import DomainEvent, MemoryDuplicateRejected, MemoryRemembered

MAX_CONTENT_CHARS = 10_000
MAX_TAGS = 20
MAX_TAG_CHARS = 64
MAX_OUTCOME_BLOCKS = 50
MAX_REASON_CHARS = 500
DEFAULT_CATEGORY = "knowledge"
# Also published in the MCP and REST schemas (a tag or category is lower-cased and stripped before it is matched).
TAG_PATTERN = r"^[a-z0-9][a-z0-9_\-./]*$"
CATEGORY_PATTERN = r"^[a-z][a-z0-9_\-]{0,31}$"
MAX_CATEGORY_CHARS = 32
_TAG = re.compile(TAG_PATTERN)
_CATEGORY = re.compile(CATEGORY_PATTERN)


def normalise(content: str) -> str:
    """Unicode NFC, whitespace collapsed, case folded: two texts that normalise alike are duplicates."""
    return " ".join(unicodedata.normalize("NFC", content).split()).casefold()


def block_id_for(content: str) -> str:
    """A block's id is derived from its normalised content, so a duplicate lands on the same stream."""
    return "blk_" + hashlib.sha256(normalise(content).encode("utf-8")).hexdigest()[:24]


def stream_for(block_id: str) -> str:
    return f"block:{block_id}"


def check_text(value: str, name: str, *, empty_hint: str, too_long_hint: str, limit: int = MAX_CONTENT_CHARS) -> str:
    """A non-empty UTF-8 text of at most ``limit`` characters, stripped; errors name the field."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{name} is empty", empty_hint)
    require_utf8(value, name)
    if len(value) > limit:
        raise InvalidInput(f"{name} is {len(value)} characters; the limit is {limit}", too_long_hint)
    return value.strip()


def check_content(content: str) -> str:
    return check_text(
        content,
        "content",
        empty_hint="send the memory as a non-empty text",
        too_long_hint="split it into smaller memories",
    )


def check_tags(tags: list[str] | None) -> list[str]:
    tags = tags or []
    if len(tags) > MAX_TAGS:
        raise InvalidInput(f"{len(tags)} tags; the limit is {MAX_TAGS}", "send fewer tags")
    clean: list[str] = []
    for tag in tags:
        t = tag.strip().lower() if isinstance(tag, str) else ""
        if not t or len(t) > MAX_TAG_CHARS or not _TAG.fullmatch(t):
            raise InvalidInput(
                f"tag {tag!r} is not valid",
                f"tags are lower-case letters, digits, '_', '-', '.', '/' (at most {MAX_TAG_CHARS}), e.g. 'project/db'",
            )
        if t not in clean:
            clean.append(t)
    return clean


def check_category(category: str | None) -> str:
    """A block's category: one lower-case word; ``observation`` decays fastest (EPHEMERAL)."""
    if category is None:
        return DEFAULT_CATEGORY
    c = category.strip().lower() if isinstance(category, str) else ""
    if not _CATEGORY.fullmatch(c):
        raise InvalidInput(
            f"category {category!r} is not valid",
            "send one lower-case word such as 'knowledge', 'decision' or 'observation' (decays fastest)",
        )
    return c


def check_signal(signal: float) -> float:
    if isinstance(signal, bool) or not isinstance(signal, int | float) or not 0.0 <= signal <= 1.0:
        raise InvalidInput(
            f"signal {signal!r} is not a number from 0 to 1",
            "send 1.0 when the memories helped, 0.0 when they misled, or a value in between",
        )
    return float(signal)


def check_block_ids(block_ids: list[str]) -> list[str]:
    example = "send the ids of the blocks the outcome is about, e.g. ['blk_0123456789abcdef01234567']"
    if not isinstance(block_ids, list) or not block_ids:
        raise InvalidInput("block_ids is empty", example)
    if not all(isinstance(b, str) and b.strip() for b in block_ids):
        raise InvalidInput("block_ids holds an empty or non-text id", example)
    unique = list(dict.fromkeys(b.strip() for b in block_ids))
    if len(unique) > MAX_OUTCOME_BLOCKS:
        raise InvalidInput(f"{len(unique)} blocks; the limit is {MAX_OUTCOME_BLOCKS}", "send fewer block ids")
    return unique


def check_note(note: str | None) -> str | None:
    if note is None:
        return None
    if not isinstance(note, str) or len(note) > MAX_CONTENT_CHARS:
        raise InvalidInput(f"note is not a text of at most {MAX_CONTENT_CHARS} characters", "send a short note")
    require_utf8(note, "note")
    return note.strip() or None


def decide_remember(
    *,
    stream_version: int,
    block_id: str,
    content: str,
    tags: list[str],
    session_id: str | None,
    category: str = DEFAULT_CATEGORY,
    context: str | None = None,
) -> DomainEvent:
    """A new block if none has this normalised content yet (``context``: its provenance), else a recorded
    rejection."""
    if stream_version == 0:
        return MemoryRemembered(
            block_id=block_id, content=content, tags=tags, category=category, session_id=session_id, context=context
        )
    return MemoryDuplicateRejected(block_id=block_id, session_id=session_id)
