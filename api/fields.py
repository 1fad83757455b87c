"""The arguments the MCP tools and REST bodies take, described once: what each one is, and the limits the ledger
enforces on it as JSON Schema constraints (``minLength``, ``maxLength``, ``pattern``, ``enum``, ``minimum``,
``maximum``, ``minItems``, ``maxItems``) taken from the ledger's own constants.

The constraints are published, not enforced here: the ledger's checks refuse a value past them with a message that
names the argument and says what to send (and record the refusal where they record one), so the schema and the
code cannot disagree on a message. ``tests/e2e/test_mcp_bounds.py`` calls each tool at every bound and one past it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import Field

from ledger.anchor.report import MAX_PROOF_CHARS, TIERS
from ledger.brain.report import MAX_CONTEXT_CHARS, MIN_CONTRIBUTION_CHARS
from ledger.core import request_ids
from ledger.core.limits import MAX_LIMIT, MAX_QUERY_CHARS
from ledger.memory import report as memory
from ledger.memory.report import FRAMES, MAX_TOP_K
from ledger.sessions import report as sessions
from ledger.sessions.report import MAX_RECEIPT_CHARS
from ledger.workflow import report as workflow

# Which JSON types each keyword constrains: it is put on the branch of that type (``str | None`` is an anyOf).
_TYPES: dict[str, tuple[str, ...]] = {
    "minLength": ("string",),
    "maxLength": ("string",),
    "pattern": ("string",),
    "enum": ("string",),
    "minimum": ("integer", "number"),
    "maximum": ("integer", "number"),
    "minItems": ("array",),
    "maxItems": ("array",),
    "items": ("array",),  # constraints of each item, merged into the array's item schema
}


def publish(**constraints: Any) -> Callable[[dict[str, Any]], None]:
    """A ``json_schema_extra`` that writes ``constraints`` into the branch of the field's schema they apply to."""
    unknown = set(constraints) - set(_TYPES)
    if unknown:
        raise ValueError(f"not a constraint this module publishes: {sorted(unknown)}")

    def apply(schema: dict[str, Any]) -> None:
        for branch in schema.get("anyOf", [schema]):
            for key, value in constraints.items():
                if branch.get("type") not in _TYPES[key] or value is None:
                    continue
                if key == "items":
                    branch.setdefault("items", {}).update(value)
                else:
                    branch[key] = value

    return apply


def described(description: str, **constraints: Any) -> Any:
    """A pydantic ``Field`` with ``description`` that publishes ``constraints`` (see :func:`publish`)."""
    if not constraints:
        return Field(description=description)
    return Field(description=description, json_schema_extra=publish(**constraints))  # type: ignore[arg-type]


def one_of(values: Any) -> str:
    """``'a', 'b' or 'c'`` for a description."""
    quoted = [f"'{v}'" for v in values]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


# --- sessions and the gate --------------------------------------------------------------------------------------

SESSION_ID_FORM = "'ses_' and 20 hex digits"
ROLE = described(
    "your role in this session, e.g. 'dev': letters, digits, '_', '.' or '-'",
    minLength=1,
    maxLength=sessions.MAX_ROLE_CHARS,
    pattern=sessions.ROLE_PATTERN,
)
WORKING_DIR = described(
    "the absolute path of your project directory, inside the server's project roots (an Odyssean Anchor needs "
    "it); omit it if you will not anchor",
    minLength=1,
    maxLength=sessions.MAX_PATH_CHARS,
)
FOCUS = described("what this session is about, in a line", maxLength=sessions.MAX_FOCUS_CHARS)
REQUEST_ID = described(
    f"optional id of this request, {request_ids.REQUEST_ID_HELP}",
    minLength=1,
    maxLength=request_ids.MAX_REQUEST_ID_CHARS,
    pattern=request_ids.REQUEST_ID_PATTERN,
)
RECEIPT = described(
    "the receipt string that assert_compliance returned with the stamp", minLength=1, maxLength=MAX_RECEIPT_CHARS
)


def session_id_field(description: str) -> Any:
    """A ``session_id`` argument: ``description`` and the form of a session id."""
    return described(description, pattern=sessions.SESSION_ID_PATTERN)


# --- the Odyssean Anchor ----------------------------------------------------------------------------------------

PROOF = described(
    "the whole ===ODYSSEAN_ANCHOR_PROOF::v5.0=== block, filled in for the real project state",
    minLength=1,
    maxLength=MAX_PROOF_CHARS,
)
TIER = described(
    f"how deep the proof goes: {one_of(TIERS)} (the number of tensions it must name: "
    + ", ".join(f"{k} {v}" for k, v in TIERS.items())
    + ")",
    enum=list(TIERS),
)

# --- memory -----------------------------------------------------------------------------------------------------

CONTENT = described(
    "the memory: one declarative statement, e.g. 'The ledger database runs SQLite in WAL mode.'",
    minLength=1,
    maxLength=memory.MAX_CONTENT_CHARS,
)
TAGS = described(
    f"tags to find it by, e.g. ['project/db']: lower-case letters, digits, '_', '-', '.', '/' (at most "
    f"{memory.MAX_TAGS} tags)",
    maxItems=memory.MAX_TAGS,
    items={"minLength": 1, "maxLength": memory.MAX_TAG_CHARS, "pattern": memory.TAG_PATTERN},
)
CATEGORY = described(
    f"one lower-case word, default '{memory.DEFAULT_CATEGORY}'; 'observation' decays fastest",
    maxLength=memory.MAX_CATEGORY_CHARS,
    pattern=memory.CATEGORY_PATTERN,
)
QUERY = described(
    "what you are looking for, in words, e.g. 'database migrations'", minLength=1, maxLength=MAX_QUERY_CHARS
)
RECALL_QUERY = described(
    "what the task is about; omit to get the strongest blocks", minLength=1, maxLength=MAX_QUERY_CHARS
)
LIMIT = described("how many hits to return at most", minimum=1, maximum=MAX_LIMIT)
FRAME = described(
    "self: identity and values; attention: relevant knowledge; task: goals and context", enum=list(FRAMES)
)
TOP_K = described("how many blocks at most (the frame's token budget caps the text too)", minimum=1, maximum=MAX_TOP_K)
BLOCK_IDS = described(
    "ids of the blocks the outcome is about, as memory_recall or memory_search returned them",
    minItems=1,
    maxItems=memory.MAX_OUTCOME_BLOCKS,
    items={"minLength": 1},
)
SIGNAL = described(
    "how useful they proved: 1.0 they helped, 0.5 neutral, 0.0 they misled you", minimum=0.0, maximum=1.0
)
NOTE = described("what happened, in a sentence (recorded with the outcome)", maxLength=memory.MAX_CONTENT_CHARS)
IDENTITY = described("who you are, stored as a self/context block", minLength=1, maxLength=memory.MAX_CONTENT_CHARS)
VALUES = described(
    "your values, each stored as a self/value block", items={"minLength": 1, "maxLength": memory.MAX_CONTENT_CHARS}
)
SEED = described("store the 10 constitutional blocks (already stored ones are skipped)")
BLOCK_ID = described(
    "the id of one block, as memory_recall or memory_search returned it, e.g. 'blk_0123456789abcdef01234567'",
    minLength=1,
)
NEW_CONTENT = described(
    "the text that replaces the block's: one declarative statement (it keeps the block's tags and category)",
    minLength=1,
    maxLength=memory.MAX_CONTENT_CHARS,
)
FORGET_REASON = described(
    "why the block is forgotten, kept in the log, e.g. 'personal data: erasure request 2026-11-03'",
    minLength=1,
    maxLength=memory.MAX_REASON_CHARS,
)

# --- the shared brain -------------------------------------------------------------------------------------------

QUESTION = described("a question or topic in natural language", minLength=1, maxLength=memory.MAX_CONTENT_CHARS)
STATEMENT = described(
    f"one declarative statement of more than {MIN_CONTRIBUTION_CHARS} characters (not a question or a follow-up)",
    minLength=MIN_CONTRIBUTION_CHARS + 1,
    maxLength=memory.MAX_CONTENT_CHARS,
)
BRAIN_CONTEXT = described(
    "what you are working on: steers retrieval (recorded with the search)", maxLength=MAX_CONTEXT_CHARS
)

# --- workflow tasks ---------------------------------------------------------------------------------------------

TASK_ID = described(
    "the task's id: a slug of lower-case letters, digits, '.', '_' or '-', e.g. 'memory-gate-42'",
    maxLength=workflow.MAX_TASK_ID_CHARS,
    pattern=workflow.TASK_ID_PATTERN,
)
TITLE = described("a one-line title", minLength=1, maxLength=workflow.MAX_TITLE_CHARS)
DNA = described(
    "DNA fields to set, e.g. {'memory_query_session': 'ses_…'} (a JSON object of at most "
    f"{workflow.MAX_DNA_BYTES:,} bytes; pdsa_ref must be an http(s) URL)"
)
