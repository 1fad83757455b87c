"""The ledger's version, read once from the installed package's metadata: what ``--version``, MCP ``serverInfo``,
``GET /health`` and the OpenAPI document report. Importing this module loads nothing but the standard library."""

from __future__ import annotations

import functools
from pathlib import Path

DISTRIBUTION = "compliance-ledger"
UNKNOWN = "0+unknown"  # a valid PEP 440 version that says plainly it is not one


@functools.cache
def package_version() -> str:
    """The installed distribution's version (``importlib.metadata``). Run from a checkout that was never
    installed, the version in the checkout's ``pyproject.toml`` (the same source the metadata is built from);
    without either, :data:`UNKNOWN`."""
    from importlib import metadata  # not at import: ``--help`` never pays for scanning the installed packages

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return checkout_version(Path(__file__).resolve().parent.parent / "pyproject.toml")


def checkout_version(pyproject: Path) -> str:
    """``project.version`` of ``pyproject`` if it is this project's, else :data:`UNKNOWN`."""
    import tomllib

    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return UNKNOWN
    version = project.get("version")
    return version if project.get("name") == DISTRIBUTION and isinstance(version, str) else UNKNOWN
