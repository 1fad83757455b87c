"""Where a memory block came from (issue 23): the context it was stored with, the agent it was stored for and the
session it was stored in, read from the block's recorded ``MemoryRemembered`` and that event's metadata; pure.

Nothing here is what a caller claims when it reads: the agent is the metadata's (the credential's, never a tool
argument), the session is the metadata's (it gets there only once the ledger checked the session is the agent's),
and the context is the event's own field (``MemoryRemembered`` v4; older blocks have none). The search index keeps
it beside each block's text (:func:`to_json`, :func:`from_json`), so a search reads no event for it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ledger.core.events import MemoryRemembered


@dataclass(frozen=True, slots=True)
class Origin:
    """A block's provenance: the position of its ``MemoryRemembered`` and what was recorded with it."""

    position: int
    agent: str | None
    session_id: str | None
    context: str | None


def origin_of(position: int, meta: Mapping[str, Any], event: MemoryRemembered) -> Origin:
    """The provenance of the block ``event`` stored at ``position``, with ``meta`` the event's metadata."""
    agent, session = meta.get("agent"), meta.get("session_id")
    return Origin(
        position=position,
        agent=agent if isinstance(agent, str) else None,
        session_id=session if isinstance(session, str) else None,
        context=event.context,
    )


def to_json(origin: Origin) -> str:
    return json.dumps(
        {"position": origin.position, "agent": origin.agent, "session_id": origin.session_id, "context": origin.context}
    )


def from_json(text: str) -> Origin:
    data = json.loads(text)
    return Origin(int(data["position"]), data["agent"], data["session_id"], data["context"])
