"""What every MCP capability module shares: the tool context (service, caller, session) and the tool plumbing."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ConfigDict, model_validator

from ledger.core.errors import LedgerError
from ledger.core.text import HINT as TEXT_HINT
from ledger.core.text import find_bad_text

if TYPE_CHECKING:
    from ledger.service import Actor, Ledger
    from ledger.workflow.report import Workflow

T = TypeVar("T")
SESSION_HELP = "call clock_in first and pass the session_id it returns"


@dataclass(frozen=True)
class ToolContext:
    """What a module that adds tools to the server needs: the service, and who is calling in which session."""

    ledger: Ledger
    actor: Callable[[Context], Actor]
    session_of: Callable[[str | None], str]  # the given or default session; a tool error when there is none
    optional_session: Callable[[str | None], str | None]  # the given or default session, else None
    known_workflow: Workflow | None = None  # the ledger's workflow table, when read before the ledger opens (stdio)

    @property
    def workflow(self) -> Workflow:
        """The workflow table the task tools publish (read while registering them: never waits for the ledger
        when known)."""
        return self.known_workflow if self.known_workflow is not None else self.ledger.workflow


Extension = Callable[[MCPServer, ToolContext], None]


def ledger_call(fn: Callable[[], T]) -> T:
    """Run a service call, turning the ledger's errors into tool errors that say what to send instead."""
    try:
        return fn()
    except LedgerError as exc:
        raise ToolError(f"{exc.message}. {exc.hint}".strip() if exc.hint else exc.message) from exc


def _refuse_unstorable_text(data: Any) -> Any:
    """Before a tool's arguments are validated: a NUL or lone surrogate in any of them is an invalid argument
    named in the tool error (the SDK reports a failed argument validation as a tool error)."""
    found = find_bad_text(data)
    if found is not None:
        raise ValueError(f"{found.message('argument')}; {TEXT_HINT}")
    return data


UNKNOWN_ARGUMENTS = "__unknown_arguments__"  # where a tool that takes unknown arguments finds them


def forbid_unknown_arguments(server: MCPServer, answered_by_tool: Collection[str] = ()) -> None:
    """Make every tool reject arguments it does not declare (the SDK ignores them by default) and arguments
    holding text the ledger cannot store.

    The tools named in ``answered_by_tool`` answer unknown arguments themselves (the managed tools: their parameter
    enforcement records the check and answers with a hint and an example): their function receives the unknown
    arguments as a dict under :data:`UNKNOWN_ARGUMENTS`, and must wrap itself to take it."""
    for tool in server._tool_manager.list_tools():
        base = tool.fn_metadata.arg_model
        passes = tool.name in answered_by_tool
        body: dict[str, Any] = {
            # Built on the tool's first call, not at start-up: 21 validators cost ~0.1 s before `initialize`.
            "model_config": ConfigDict(
                **{**base.model_config, "extra": "allow" if passes else "forbid", "defer_build": True}
            ),
            "__module__": base.__module__,
            "refuse_unstorable_text": model_validator(mode="before")(_refuse_unstorable_text),
        }
        if passes:
            body["model_dump_one_level"] = _with_unknown(base)
        tool.fn_metadata.arg_model = type(base.__name__, (base,), body)
        tool.parameters["additionalProperties"] = False  # what to send stays the declared arguments


def _with_unknown(base: type[Any]) -> Callable[[Any], dict[str, Any]]:
    def dump(self: Any) -> dict[str, Any]:
        return {**base.model_dump_one_level(self), UNKNOWN_ARGUMENTS: dict(self.__pydantic_extra__ or {})}

    return dump
