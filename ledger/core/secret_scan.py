"""Credentials in a text: the plugins of Yelp's ``detect-secrets`` run over a string in memory (no file, no
baseline, no network), each finding named by a stable kind, a line and a column, and the span that redaction
replaces. The secret itself is never kept in a finding.

What runs: every detector plugin of the installed ``detect-secrets`` (AWS, GitHub, GitLab, Slack, Stripe, Twilio,
private keys, JSON Web Tokens, passwords in URLs, Azure, Discord, npm, PyPI, OpenAI, SendGrid, …) but those in
:data:`LEFT_OUT`; its keyword detector on quoted assignments (``password = "…"``); and its base64 and hex entropy
checks only on the value of an unquoted assignment to a key word (``api_key=9fK2…``), so that a git SHA, a UUID,
a block id or a file's sha256 in ordinary text is not taken for a credential. Findings pass the library's own
false-positive filters (templated values, ``$VARIABLES``, indirect references, UUIDs, sequences, ids).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

# The detector's plugins left out, and why (the docs list them as misses).
LEFT_OUT = {
    "Public IP (ipv4)": "an address is not a credential",
    "Artifactory Credentials": "its AP… pattern matches ordinary words (APDocumentation)",
    "Base64 High Entropy String": "on its own it takes every quoted hash or id for a secret: only next to a key word",
    "Hex High Entropy String": "on its own it takes every quoted hash or id for a secret: only next to a key word",
}
_TOKEN_BEFORE = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+/"
)  # never '=': 'password='
_RIGHT_EXTEND = re.compile(r"[A-Za-z0-9_\-+/=.]*")  # ... and after it (a JWT's signature, a key's padding)
_PRIVATE_KEY_END = re.compile(r"-----END[ A-Z0-9]*-----")
_FIRST_TOKEN = re.compile(r"[^\s,;'\"`]+")
CLEAN_REMEMBERED = 4096  # digests of texts found clean, kept per process
_clean: OrderedDict[bytes, None] = OrderedDict()
_clean_lock = threading.Lock()


def kind_of(secret_type: str) -> str:
    """The stable short name of a detector's secret type: ``AWS Access Key`` → ``aws_access_key``."""
    return re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_")


def placeholder(kind: str) -> str:
    """What ``redact`` stores in place of a secret of ``kind``."""
    return f"[REDACTED:{kind}]"


@dataclass(frozen=True, slots=True)
class Finding:
    """A credential in a text: its ``kind`` (e.g. ``aws_access_key``), the detector's name for it (``what``), its
    1-based ``line`` and ``column``, and the span ``[start, end)`` of the text that redaction replaces."""

    kind: str
    what: str
    line: int
    column: int
    start: int
    end: int


@dataclass(frozen=True)
class _Detectors:
    regex: tuple[Any, ...]  # RegexBasedDetector plugins
    keyword: Any  # KeywordDetector
    entropy: tuple[Any, ...]  # Base64HighEntropyString, HexHighEntropyString
    keyword_words: re.Pattern[str]  # any of the keyword detector's words (a line without one skips it)
    quoted: dict[re.Pattern[str], int]  # the keyword detector's quoted assignments: regex -> the value's group
    unquoted: dict[re.Pattern[str], int]  # its config-file assignments (unquoted values)
    filters: tuple[Any, ...]  # the library's false-positive filters on a value: f(secret) -> bool
    indirect: Any  # is_indirect_reference(line) -> bool
    likely_id: Any  # is_likely_id_string(secret, line, plugin) -> bool


@cache
def _detectors() -> _Detectors:
    """The plugin objects, built once per process (importing ``detect-secrets`` takes ~0.2 s: on first use)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.filters import heuristic
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString
    from detect_secrets.plugins.keyword import (
        CONFIG_DENYLIST_REGEX_TO_GROUP,
        DENYLIST_REGEX,
        QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
        KeywordDetector,
    )

    plugins: dict[str, Any] = get_mapping_from_secret_type_to_class()
    regex = tuple(
        cls() for name, cls in sorted(plugins.items()) if name not in LEFT_OUT and issubclass(cls, RegexBasedDetector)
    )
    return _Detectors(
        regex=regex,
        keyword=KeywordDetector(),
        entropy=(Base64HighEntropyString(), HexHighEntropyString()),
        keyword_words=re.compile(DENYLIST_REGEX, re.IGNORECASE),
        quoted=dict(QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP),
        unquoted=dict(CONFIG_DENYLIST_REGEX_TO_GROUP),
        filters=(
            heuristic.is_templated_secret,
            heuristic.is_prefixed_with_dollar_sign,
            heuristic.is_not_alphanumeric_string,
            heuristic.is_sequential_string,
            heuristic.is_potential_uuid,
        ),
        indirect=heuristic.is_indirect_reference,
        likely_id=heuristic.is_likely_id_string,
    )


def scan(text: str) -> list[Finding]:
    """Every credential the detector finds in ``text``, in order of position (at most one per span).

    A text found clean is remembered (by a 128-bit digest, never the text) for the next :data:`CLEAN_REMEMBERED`
    texts, so one screened by its command and again by the append door is read once."""
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _clean_lock:
        if key in _clean:
            _clean.move_to_end(key)
            return []
    found = find(text)
    if not found:
        with _clean_lock:
            _clean[key] = None
            while len(_clean) > CLEAN_REMEMBERED:
                _clean.popitem(last=False)
    return found


def find(text: str) -> list[Finding]:
    """:func:`scan` without the memory of clean texts: every detector reads ``text`` (what a new text costs)."""
    found: list[Finding] = []
    offset = 0
    for number, line in enumerate(text.split("\n"), start=1):
        for kind, what, start, end in _scan_line(line):
            if kind == "private_key":
                start, end = _private_key_block(text, offset, line, start)
            else:
                start, end = offset + start, offset + end
            found.append(Finding(kind, what, number, start - offset + 1, start, end))
        offset += len(line) + 1
    found.sort(key=lambda f: (f.start, -f.end))
    return [f for i, f in enumerate(found) if i == 0 or f.start >= found[i - 1].end]


def redact(text: str, findings: Iterable[Finding]) -> str:
    """``text`` with each finding's span replaced by ``[REDACTED:<kind>]`` (overlapping spans merged)."""
    spans: list[tuple[int, int, str]] = []
    for f in sorted(findings, key=lambda f: f.start):
        if spans and f.start < spans[-1][1]:
            start, end, kind = spans[-1]
            spans[-1] = (start, max(end, f.end), kind)
        else:
            spans.append((f.start, f.end, f.kind))
    out, at = [], 0
    for start, end, kind in spans:
        out += [text[at:start], placeholder(kind)]
        at = end
    out.append(text[at:])
    return "".join(out)


def _scan_line(line: str) -> Iterator[tuple[str, str, int, int]]:
    """(kind, what, start, end) of each credential in one line; offsets within the line."""
    d = _detectors()
    for plugin in d.regex:
        values = set(plugin.analyze_string(line))  # the plugin's own checks (a JWT's parts must decode, …)
        if not values:
            continue
        for pattern in plugin.denylist:
            for match in pattern.finditer(line):
                if match.group(0) in values or any(g in values for g in match.groups() if g):
                    start, end = _extend(line, *_span(match))
                    yield kind_of(plugin.secret_type), plugin.secret_type, start, end
    words = [m.start() for m in d.keyword_words.finditer(line)]
    if words:
        found = list(_keywords(d, line, words))
        # the library's indirect-reference filter (``secret = get_secret()``), on the line from the key word on: its
        # pattern is quadratic in the length it reads, so it only runs when a key word was assigned something
        if found and not d.indirect(line[words[0] :]):
            yield from found


def _matches(d: _Detectors, pattern: re.Pattern[str], line: str, words: list[int]) -> Iterator[re.Match[str]]:
    """The pattern's matches: tried only where a key word starts when the pattern opens with one (a word inside
    the same run of letters would match from the run's start too), else searched along the whole line."""
    if not pattern.pattern.startswith(d.keyword_words.pattern):
        yield from pattern.finditer(line)
        return
    for at in words:
        match = pattern.match(line, at)
        if match is not None:
            yield match


def _keywords(d: _Detectors, line: str, words: list[int]) -> Iterator[tuple[str, str, int, int]]:
    """A key word assigned a quoted value (the keyword detector), else an unquoted value of high entropy."""
    kw = d.keyword
    for pattern, group in d.quoted.items():
        for match in _matches(d, pattern, line, words):
            value = match.group(group)
            if value and _plausible(d, value, line):
                yield kind_of(kw.secret_type), kw.secret_type, match.start(group), match.end(group)
    for pattern, group in d.unquoted.items():
        for match in _matches(d, pattern, line, words):
            token = _FIRST_TOKEN.match(match.group(group) or "")
            if token is None:
                continue
            value = token.group().rstrip(".:!?)]}")
            for plugin in d.entropy:
                if (
                    value
                    and set(value) <= set(plugin.charset)
                    and plugin.calculate_shannon_entropy(value) > plugin.entropy_limit
                    and _plausible(d, value, line)
                ):
                    start = match.start(group)
                    yield kind_of(plugin.secret_type), plugin.secret_type, start, start + len(value)
                    break


def _plausible(d: _Detectors, value: str, line: str) -> bool:
    """Not dismissed by the library's false-positive filters (a template, a $VARIABLE, a UUID, an id, …)."""
    return not any(f(value) for f in d.filters) and not d.likely_id(value, line, d.keyword)


def _span(match: re.Match[str]) -> tuple[int, int]:
    """The secret in a match: its last group when the rest of the match only leads up to it (``://user:`` …
    ``@``, ``aws_secret = '`` … ``'``), else the whole match (a group that is a prefix, ``ghp``, is not the
    secret)."""
    for g in range(len(match.groups()), 0, -1):
        if match.group(g) and match.start(g) > match.start() and match.end() - match.end(g) <= 2:
            return match.span(g)
    return match.span()


def _extend(line: str, start: int, end: int) -> tuple[int, int]:
    """Widen a span to the whole token around it (a detector's pattern may stop short, e.g. before a JWT's
    signature), so redaction never leaves part of a secret behind."""
    while start > 0 and line[start - 1] in _TOKEN_BEFORE:
        start -= 1
    after = _RIGHT_EXTEND.match(line, end)
    stop = after.end() if after is not None else end
    while stop > end and line[stop - 1] == ".":  # a full stop ends the sentence, not the token
        stop -= 1
    return start, stop


def _private_key_block(text: str, offset: int, line: str, start: int) -> tuple[int, int]:
    """A private key is its whole block: from the ``-----BEGIN`` line through ``-----END …-----`` (or, with no
    end marker, the rest of the text)."""
    dashes = line.rfind("-----", 0, start)
    begin = offset + (dashes if dashes >= 0 else start)
    end = _PRIVATE_KEY_END.search(text, offset + start)
    return begin, end.end() if end is not None else len(text)
