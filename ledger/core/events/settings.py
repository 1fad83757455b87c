"""Events of the ledger's decision settings: the one set every node of a ledger decides with."""

from typing import Any, ClassVar

from ledger.core.events.base import DomainEvent, Texts


class SettingsApplied(DomainEvent):
    """The settings that change a decision (``ledger.core.decision_settings``) were recorded for the whole
    ledger: from here on ``serve`` and ``mcp`` refuse to start on a node whose own differ.

    ``values``: each setting by name, in its canonical form (a file's as ``{"sha256", "text"}``: its exact text
    and the digest of it); ``digest``: the SHA-256 of their canonical JSON, what nodes announce and ``doctor``
    compares. ``sources``: where the node that applied them read each file (a path or ``(default)``; not part of
    the digest, as nodes may keep the same file in different places). ``node``: the host it was applied from.
    Written by ``init`` (a ledger with none yet) and by ``compliance-ledger settings apply``; the operator's
    settings, not a caller's text, so nothing here is scanned or encrypted."""

    type_name: ClassVar[str] = "SettingsApplied"
    texts: ClassVar[Texts] = Texts(ledger=("digest", "values", "sources", "node"))
    digest: str
    values: dict[str, Any]
    sources: dict[str, str] = {}
    node: str | None = None
