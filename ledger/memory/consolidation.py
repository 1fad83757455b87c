"""Consolidation at remember time: a near-duplicate is linked to the block it repeats, a negation of one is
flagged; pure.

The handler finds the new text's nearest live blocks (by embedding cosine, or without the ``[semantic]`` extra by
full-text search and word overlap) and hands them here with their similarity. The thresholds were set on pairs
written for the purpose (``tests/unit/test_consolidation.py``, docs/DESIGN_NOTES.md), not on the retrieval set:

* all-MiniLM-L6-v2 puts restatements of one fact at 0.91–0.97 ("restarts every night at 2am" / "reboots nightly
  at 2 am" 0.91) and related but different facts of one topic at 0.6–0.8, so a contribution at
  :data:`DUPLICATE_COSINE` (0.90) or above with the same polarity and the same numbers is linked, not stored
  (texts that differ in a number, "port 8080" / "port 8081", are different facts however close: 0.98);
* it scores a statement and its negation 0.89–0.94 ("Always run the migrations before deploying" / "Never run
  ..." 0.89): embeddings do not see negation, so above :data:`CONTRADICTION_COSINE` (0.80) a pair whose
  polarity differs (one has *not / never / don't / avoid / no ...*, the other not) and whose other content words
  mostly agree (Jaccard ≥ :data:`SAME_WORDS`) is a contradiction: the new block is stored and flagged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from projections.query_analysis import STOP_WORDS

DUPLICATE_COSINE: Final = 0.90
CONTRADICTION_COSINE: Final = 0.80
SAME_WORDS: Final = 0.6
"""Jaccard overlap of the content words (negations left out) above which two texts state the same thing."""
DUPLICATE_WORDS: Final = 0.9
"""Without embeddings: the word overlap at which a contribution is a near-duplicate (the lexical fallback)."""
NEIGHBOURS: Final = 5
QUERY_WORDS: Final = 24
"""Without embeddings, the near-duplicates are looked up by a full-text search for the text's first 24 content
words (a 10,000-character text would otherwise cost the index a probe per word)."""
NEGATIONS: Final = frozenset(
    [
        "not",
        "no",
        "never",
        "none",
        "nothing",
        "nobody",
        "nor",
        "cannot",
        "avoid",
        "avoids",
        "avoided",
        "avoiding",
        "without",
        "dont",
        "don't",
        "doesnt",
        "doesn't",
        "didnt",
        "didn't",
        "isnt",
        "isn't",
        "arent",
        "aren't",
        "wasnt",
        "wasn't",
        "shouldnt",
        "shouldn't",
        "wont",
        "won't",
        "cant",
        "can't",
        "mustnt",
        "mustn't",
        "neednt",
        "needn't",
        "stop",
    ]
)
"""Words that turn a statement into its opposite ("stop doing X" against "do X" included)."""
_WORD = re.compile(r"[\w']+", re.UNICODE)


Method = Literal["cosine", "words"]


@dataclass(frozen=True, slots=True)
class Neighbour:
    """An existing live block near the new text."""

    block_id: str
    content: str
    similarity: float


@dataclass(frozen=True, slots=True)
class Verdict:
    """What to do with a contribution: store it, link it to ``block_id``, or store it flagged against it."""

    action: Literal["store", "link", "flag"]
    block_id: str | None = None
    similarity: float = 0.0


def tokens(text: str) -> list[str]:
    return [w.replace("\u2019", "'") for w in _WORD.findall(text.casefold().replace("\u2019", "'"))]


def negated(text: str) -> bool:
    """Whether the text carries a negation (an odd number of them: "not never" reads as a yes)."""
    words = tokens(text)
    count = sum(1 for w in words if w in NEGATIONS or w.endswith("n't"))
    return count % 2 == 1


def content_words(text: str) -> frozenset[str]:
    """The words that carry the statement: no stop words, no negations, crude plural folding."""
    out = set()
    for w in tokens(text):
        if w in NEGATIONS or w.endswith("n't") or w in STOP_WORDS or w in {"always", "do", "does"}:
            continue
        out.add(w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w)
    return frozenset(out)


def numbers(text: str) -> frozenset[str]:
    """The tokens with a digit in them: "port 8080" and "port 8081" are different facts however close their
    embeddings (0.98), so a near-duplicate must state the same numbers."""
    return frozenset(w for w in tokens(text) if any(c.isdigit() for c in w))


def overlap(a: str, b: str) -> float:
    """Jaccard overlap of the two texts' content words."""
    x, y = content_words(a), content_words(b)
    return len(x & y) / len(x | y) if x | y else 0.0


def decide(text: str, neighbours: Sequence[Neighbour], method: Method) -> Verdict:
    """Link, flag or store ``text`` given its nearest blocks (best first). ``method`` says what ``similarity``
    is: embedding cosine, or word overlap (the fallback without embeddings)."""
    polarity = negated(text)
    for n in neighbours:
        words = overlap(text, n.content)
        close = n.similarity >= CONTRADICTION_COSINE if method == "cosine" else True
        if close and words >= SAME_WORDS and negated(n.content) != polarity:
            return Verdict("flag", n.block_id, n.similarity)
    for n in neighbours:
        same = n.similarity >= DUPLICATE_COSINE if method == "cosine" else n.similarity >= DUPLICATE_WORDS
        if same and negated(n.content) == polarity and numbers(text) == numbers(n.content):
            return Verdict("link", n.block_id, n.similarity)
    return Verdict("store")
