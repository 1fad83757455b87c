"""The ledger's decision settings (``ledger.compose.decision_settings`` says which and why): the last
``SettingsApplied`` on the ``settings`` stream holds for every node, and an administrator records new ones."""

from __future__ import annotations

from ledger.core import access
from ledger.core.decision_settings import DecisionSettings
from ledger.core.events import RecordedEvent, SettingsApplied
from ledger.kernel import Actor, Kernel

SETTINGS_STREAM = "settings"  # one SettingsApplied per change; the last one holds


class SettingsCommands:
    """Read and record the decision settings every node of the ledger must share."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    def applied(self) -> RecordedEvent | None:
        """The last ``SettingsApplied`` (its event a :class:`SettingsApplied`): the decision settings every node of
        this ledger must run with; ``None`` while none were recorded (a ledger from before they were)."""
        events = self.kernel.store.load_stream(SETTINGS_STREAM).events
        return events[-1] if events else None

    def apply(
        self, actor: Actor, local: DecisionSettings, *, node: str | None = None, unless_recorded: bool = False
    ) -> RecordedEvent | None:
        """Record ``local`` as the ledger's decision settings, for every node (an administrator's act); ``None``
        when nothing was recorded: the ledger's already are these, or (``unless_recorded``, as ``init`` asks) the
        ledger already records some."""
        access.require_admin(actor, "apply the ledger's decision settings")

        def attempt() -> RecordedEvent | None:
            state = self.kernel.store.load_stream(SETTINGS_STREAM)
            last = state.events[-1].event if state.events else None
            same = isinstance(last, SettingsApplied) and last.digest == local.digest
            if last is not None and (unless_recorded or same):
                return None
            event = SettingsApplied(
                digest=local.digest, values=dict(local.values), sources=dict(local.sources), node=node
            )
            [recorded] = self.kernel.append(actor, SETTINGS_STREAM, state.version, [event], self.kernel.meta(actor))
            return recorded

        return self.kernel.retrying(attempt)
