"""Query analysis for memory search: the words of a free-text query that carry its meaning.

Stop words are dropped (the list is PostgreSQL's ``english`` stop list, so SQLite and PostgreSQL drop the same
words); a query made only of stop words keeps them, so it still searches. Stemming is the engines' own: FTS5's
``porter`` tokenizer and PostgreSQL's ``english`` configuration stem the index and the query alike.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\w+", re.UNICODE)

_STOP_LIST = """
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers herself
    it its itself they them their theirs themselves what which who whom this that these those am is are was were be
    been being have has had having do does did doing a an the and but if or because as until while of at by for
    with about against between into through during before after above below to from up down in out on off over
    under again further then once here there when where why how all any both each few more most other some such no
    nor not only own same so than too very s t can will just don should now
"""
STOP_WORDS = frozenset(_STOP_LIST.split())
"""PostgreSQL 15's ``tsearch_data/english.stop`` (the Snowball English list), 127 words."""


def words(query: str) -> list[str]:
    """Every word of ``query``, lower-cased, once each in order (no operator syntax reaches the engine)."""
    return list(dict.fromkeys(t.lower() for t in _WORD.findall(query)))


def query_terms(query: str) -> list[str]:
    """The words to search for: the content words of ``query``, or all its words when it has only stop words."""
    found = words(query)
    content = [w for w in found if w not in STOP_WORDS]
    return content or found
