"""The annotation sets a tool chooses from: every hint stated, none left to a client's default.

Every tool acts on this ledger alone (``openWorldHint: false``) and every change is appended to the log, never
rewritten. The hints describe what a call does to what an agent reads back:

* ``READS`` — changes nothing (a read that records nothing).
* ``writes()`` — records events. ``idempotent=True`` when the same call again leaves what an agent reads back
  as the first call left it (a duplicate is recognised; the repeat may still be recorded). ``destructive=True``
  when a call takes something out of what agents read back (curation archives blocks recall no longer returns).
"""

from __future__ import annotations

from mcp.types import ToolAnnotations

READS = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def writes(*, idempotent: bool = False, destructive: bool = False) -> ToolAnnotations:
    """The hints of a tool that records events."""
    return ToolAnnotations(
        read_only_hint=False, destructive_hint=destructive, idempotent_hint=idempotent, open_world_hint=False
    )
