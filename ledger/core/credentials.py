"""Credentials kept out at the door: the policy of ``LEDGER_SECRET_SCAN`` over the text of events about to be
appended, and over a command's arguments before it acts on them.

``refuse`` (the default) raises :class:`~ledger.core.errors.SecretInText` naming each credential's kind and where
it is (field path, line, column), never the credential; ``redact`` stores ``[REDACTED:<kind>]`` in its place;
``off`` does nothing. The fields read are the events' inventory of text (:mod:`ledger.core.free_text`), the
detector is :mod:`ledger.core.secret_scan`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from ledger.core import free_text, secret_scan
from ledger.core.errors import SecretInText
from ledger.core.events import DomainEvent

Mode = Literal["refuse", "redact", "off"]
MODES: tuple[Mode, ...] = get_args(Mode)
HINT = (
    "remove the credential, or store a reference to where it lives instead "
    "(e.g. 'the deploy key is in the team vault under ci/deploy')"
)
SHOWN = 5  # credentials named in one refusal; the rest are counted


class _Screen:
    """One screening: rewrites each text (redacted, or as it was) and remembers what it found."""

    def __init__(self, mode: Mode) -> None:
        self.mode = mode
        self.found: list[tuple[str, secret_scan.Finding]] = []
        self._secrets: set[str] = set()  # only to keep them out of the message; never stored

    def __call__(self, path: str, text: str) -> str:
        findings = secret_scan.scan(text)
        if not findings:
            return text
        self.found += [(path, f) for f in findings]
        self._secrets.update(text[f.start : f.end] for f in findings)
        return secret_scan.redact(text, findings) if self.mode == "redact" else text

    def refuse(self) -> None:
        """Raise the refusal when something was found and the mode does not redact (fails closed)."""
        if not self.found or self.mode == "redact":
            return
        said = [f"{path}, line {f.line}, column {f.column}: {f.what} ({f.kind})" for path, f in self.found]
        more = len(said) - SHOWN
        message = "a credential in the text, so nothing was recorded: " + "; ".join(said[:SHOWN])
        if more > 0:
            message += f"; and {more} more"
        for secret in sorted(self._secrets, key=len, reverse=True):  # a path made of a dict key that held one
            message = message.replace(secret, "[REDACTED]")
        found = tuple((path, f.kind, f.line, f.column) for path, f in self.found)
        raise SecretInText(message, HINT, found)


def screen_events(events: Sequence[DomainEvent], mode: Mode) -> list[DomainEvent]:
    """The events as they may be appended: unchanged (``off``, or nothing found), redacted (``redact``), or a
    :class:`SecretInText` raised for all of them (``refuse``), so that none is appended."""
    if mode == "off":
        return list(events)
    screen = _Screen(mode)
    kept = [free_text.rewrite_event(event, screen) for event in events]
    screen.refuse()
    return kept


def screen_values(values: Mapping[str, Any], mode: Mode) -> dict[str, Any]:
    """A command's arguments, by name, screened the same way before it acts on them (a command that appends more
    than once, or derives an id from its text, calls this first so that a refusal leaves nothing behind)."""
    if mode == "off":
        return dict(values)
    screen = _Screen(mode)
    kept = {name: free_text.rewrite(value, name, screen) for name, value in values.items()}
    screen.refuse()
    return kept


def check_mode(mode: str) -> Mode:
    """``mode`` if it is one of :data:`MODES`, else a ``ValueError`` that names them."""
    if mode not in MODES:
        raise ValueError(f"secret scan {mode!r} is not one of {', '.join(MODES)}")
    return mode  # type: ignore[return-value]
