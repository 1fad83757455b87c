"""The workflow table file: the shipped ``workflow_default.yaml`` (parsed once per process) or an operator's
(``LEDGER_WORKFLOW_FILE``), read by the one resource loader and checked by :func:`decisions.parse_workflow`."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from ledger.core.resources import YamlFile
from ledger.workflow.decisions import Workflow, WorkflowError, parse_workflow

DEFAULT_TABLE: Final = "workflow_default.yaml"
TABLE: Final = YamlFile("ledger.workflow", DEFAULT_TABLE, "the workflow table", parse_workflow, WorkflowError)
FILE_HINT: Final = "fix the workflow table, or unset LEDGER_WORKFLOW_FILE to use the default"


def configured_workflow(path: Path | None) -> Workflow:
    """The workflow table an operator configured (``LEDGER_WORKFLOW_FILE``; ``None``: the shipped one), or
    :class:`~ledger.core.errors.InvalidInput` naming a bad file. ``compliance-ledger mcp`` reads it before the
    ledger opens: its task tools publish the table's names."""
    return TABLE.setting(path, FILE_HINT)


def load_workflow(path: str | Path | None = None) -> Workflow:
    """Load and check a workflow table (the shipped default when ``path`` is None)."""
    return TABLE.load(path)
