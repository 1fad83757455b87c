"""Brain decisions (seed 003 Layer B), as pure functions: input limits, which prompts become thoughts, the
search words a prompt retrieves with, and the short text summary of an answer.

A prompt is stored as a thought only when it is a declarative statement of more than 50 characters: not a
question (ends with ``?`` or opens with an interrogative such as *what* or *does*), not a follow-up on the
conversation (*based on ...*, *as you said ...*) and not a request (*tell me ...*, *explain ...*).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ledger.core.canonical import require_utf8
from ledger.core.errors import InvalidInput
from ledger.core.limits import MAX_QUERY_CHARS
from ledger.memory.decisions import check_text

MIN_CONTRIBUTION_CHARS = 50  # a thought must be longer than this
MAX_CONTEXT_CHARS = 2_000
MAX_AGENT_NAME_CHARS = 128
DEFAULT_RETRIEVAL_LIMIT = 10
THOUGHT_TAG = "brain/thought"
THOUGHT_CATEGORY = "thought"
PREVIEW_CHARS = 80

PromptKind = Literal["statement", "question", "follow_up", "request", "too_short"]

INTERROGATIVES = frozenset(
    {
        "what",
        "how",
        "why",
        "when",
        "where",
        "who",
        "whom",
        "whose",
        "which",
        "can",
        "could",
        "should",
        "would",
        "will",
        "is",
        "are",
        "am",
        "was",
        "were",
        "do",
        "does",
        "did",
    }
)
# Openings that continue the conversation rather than state something that stands on its own.
FOLLOW_UPS = (
    "based on",
    "as you said",
    "as you mentioned",
    "as you suggested",
    "as mentioned",
    "as discussed",
    "as i said",
    "like you said",
    "you said",
    "following up",
    "following on",
    "follow up",
    "follow-up",
    "to follow up",
    "building on",
    "going back to",
    "back to",
    "regarding your",
    "about your",
    "to your point",
    "in your last",
    "in your previous",
    "continuing",
    "and also",
)
# Openings that ask the brain to do something rather than tell it something.
REQUESTS = (
    "tell me",
    "show me",
    "give me",
    "help me",
    "remind me",
    "explain",
    "describe",
    "summarize",
    "summarise",
    "list",
    "find",
    "search",
    "look up",
    "please",
)
_STOPWORDS = (
    "a an and are as at be been being but by can could did do does for from had has have how i if in into is it "
    "its me my of on or our should so than that the their them then there these they this those to too us was we "
    "were what when where which who whom whose why will with would you your"
)
STOPWORDS = frozenset(_STOPWORDS.split())

_WORD = re.compile(r"\w+", re.UNICODE)
_LEADING = re.compile(r"^[\s\"'`“‘(\[*_>#-]+")
_TRAILING = re.compile(r"[\s\"'`”’)\]*_]+$")


@dataclass(frozen=True)
class Classification:
    """What a prompt is, and whether it is stored as a thought."""

    kind: PromptKind
    reason: str

    @property
    def is_contribution(self) -> bool:
        return self.kind == "statement"


def _starts_with(text: str, phrases: Sequence[str]) -> str | None:
    for phrase in phrases:
        if text == phrase or (text.startswith(phrase) and not text[len(phrase)].isalnum()):
            return phrase
    return None


def _statement_despite_opening(first: str, words: Sequence[str], text: str) -> bool:
    """'Do not ...' is a rule, and 'When X, Y.' a conditional statement, though both open like a question."""
    if first in {"do", "does", "did"} and len(words) > 1 and words[1] == "not":
        return True
    return first in {"when", "where"} and "," in text and text.endswith((".", "!"))


def classify(prompt: str) -> Classification:
    """Decide whether ``prompt`` is a declarative statement long enough to be stored as a thought."""
    text = _TRAILING.sub("", _LEADING.sub("", prompt.strip()))
    lowered = " ".join(text.lower().split())
    words = _WORD.findall(lowered)
    first = words[0] if words else ""
    if text.endswith("?"):
        return Classification("question", "it ends with '?'")
    if first in INTERROGATIVES and not _statement_despite_opening(first, words, text):
        return Classification("question", f"it opens with the interrogative '{first}'")
    follow_up = _starts_with(lowered, FOLLOW_UPS)
    if follow_up:
        return Classification("follow_up", f"it follows up on the conversation ('{follow_up} ...')")
    request = _starts_with(lowered, REQUESTS)
    if request:
        return Classification("request", f"it asks for something ('{request} ...')")
    if len(prompt.strip()) <= MIN_CONTRIBUTION_CHARS:
        return Classification("too_short", f"it is not longer than {MIN_CONTRIBUTION_CHARS} characters")
    return Classification("statement", "a declarative statement of more than 50 characters")


# What contribute_to_brain answers first (seed 003, brain-mcp.ts), then the answer itself.
STORED_MESSAGE = "Thought stored successfully."
NOT_STORED_MESSAGE = "Not stored (too short or interrogative). Still retrieved related thoughts:"
DUPLICATE_MESSAGE = "Not stored (this thought is already in the brain). Still retrieved related thoughts:"


def check_contribution_length(prompt: str) -> None:
    """``contribute_to_brain`` takes more than 50 characters (the seed's ``z.string().min(51)``), as published."""
    if len(prompt) <= MIN_CONTRIBUTION_CHARS:
        raise InvalidInput(
            f"the prompt is {len(prompt)} characters, not longer than {MIN_CONTRIBUTION_CHARS}",
            f"send one declarative statement of more than {MIN_CONTRIBUTION_CHARS} characters, e.g. 'Role "
            "separation keeps reviewers independent of implementers.'; use query_brain to ask",
        )


def contribution_message(contribution: Literal["stored", "duplicate", "not_stored"]) -> str:
    """The seed's first line of a ``contribute_to_brain`` answer; a duplicate gets its own (true) reason."""
    if contribution == "stored":
        return STORED_MESSAGE
    return DUPLICATE_MESSAGE if contribution == "duplicate" else NOT_STORED_MESSAGE


def check_prompt(prompt: str) -> str:
    return check_text(
        prompt,
        "prompt",
        empty_hint="send a question or a declarative statement as 'prompt'",
        too_long_hint="send one thought or question at a time",
    )


def check_context(context: str | None) -> str | None:
    """``context``: what the caller is working on (steers retrieval); optional."""
    if context is None:
        return None
    if not isinstance(context, str):
        raise InvalidInput("context is not text", "send what you are working on as a short text, or omit it")
    require_utf8(context, "context")
    if len(context) > MAX_CONTEXT_CHARS:
        raise InvalidInput(
            f"context is {len(context)} characters; the limit is {MAX_CONTEXT_CHARS}",
            "send a short description of what you are working on",
        )
    return context.strip() or None


def check_agent_name(name: str | None) -> str | None:
    if name is None:
        return None
    if not isinstance(name, str) or len(name) > MAX_AGENT_NAME_CHARS:
        raise InvalidInput("agent_name is not valid", f"send a display name of at most {MAX_AGENT_NAME_CHARS}")
    return name.strip() or None


def retrieval_query(prompt: str, context: str | None = None) -> str:
    """The search words for a prompt: its content words, then the context's, each once, within the query limit.

    Stop words are left out (every term may match, so 'the' would match every thought); a prompt made only of
    stop words is searched as it is.
    """
    words = _WORD.findall(prompt.lower()) + _WORD.findall((context or "").lower())
    if not words:
        raise InvalidInput("the prompt has no searchable words", "send words, e.g. 'role separation'")
    content = [w for w in words if w not in STOPWORDS] or words
    query = ""
    for word in dict.fromkeys(content):
        longer = f"{query} {word}" if query else word
        if len(longer) > MAX_QUERY_CHARS:
            break
        query = longer
    if not query:
        raise InvalidInput("the prompt's words are too long to search", "send ordinary words, e.g. 'role separation'")
    return query


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def summary(
    *,
    retrieved: Sequence[str],
    highways: int,
    contribution: Literal["stored", "duplicate", "not_stored"],
    thought_id: str | None,
    reason: str,
) -> str:
    """The answer's ``response``: what was found and what happened to the prompt, in one short text."""
    parts: list[str] = []
    if contribution == "stored":
        parts.append(f"Stored your thought {thought_id}.")
    elif contribution == "duplicate":
        parts.append(f"This thought already exists as {thought_id}; nothing new was stored.")
    if retrieved:
        noun = "thought" if len(retrieved) == 1 else "thoughts"
        listed = "; ".join(f'"{preview(t)}"' for t in retrieved[:3])
        more = f" and {len(retrieved) - 3} more." if len(retrieved) > 3 else ""
        end = "" if more or listed.endswith(('."', '!"', '…"')) else "."
        parts.append(f"Found {len(retrieved)} related {noun}: {listed}{more}{end}")
    else:
        parts.append("Found no related thoughts.")
    if highways:
        verb = "is a highway" if highways == 1 else "are highways"
        parts.append(f"{highways} of them {verb} (retrieved 3+ times by 2+ agents).")
    if contribution == "not_stored":
        parts.append(f"Not stored as a thought: {reason}.")
    return " ".join(parts)
