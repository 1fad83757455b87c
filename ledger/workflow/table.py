"""The workflow table file: the shipped ``workflow_default.yaml`` (parsed once per process) or an operator's
(``LEDGER_WORKFLOW_FILE``), read by the one resource loader and checked by :func:`decisions.parse_workflow`."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from ledger.core.resources import YamlFile
from ledger.workflow.decisions import Workflow, WorkflowError, parse_workflow

DEFAULT_TABLE: Final = "workflow_default.yaml"
TABLE: Final = YamlFile("ledger.workflow", DEFAULT_TABLE, "the workflow table", parse_workflow, WorkflowError)


def load_workflow(path: str | Path | None = None) -> Workflow:
    """Load and check a workflow table (the shipped default when ``path`` is None)."""
    return TABLE.load(path)
