"""The YAML files a capability ships a default of (the workflow table, the enforcement rules), read in one place:
an operator's file or the packaged default, parsed with libyaml when it is there, every error naming the file.

A capability declares its file as a :class:`YamlFile` (which package holds the default, how to check the parsed
data, which error a bad file raises); the check itself stays a pure function of the capability. The parsed
packaged default is kept once per process: it is immutable (frozen dataclasses), and parsing it again for every
ledger built cost most of opening one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Generic, TypeVar

import yaml

from ledger.core.errors import InvalidInput

T = TypeVar("T")

# libyaml's C parser where PyYAML was built with it (the same documents, the same safe subset, much faster).
SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_yaml(text: str) -> Any:
    """The data of one YAML document, safe tags only (raises :class:`yaml.YAMLError`)."""
    return yaml.load(text, Loader=SafeLoader)


@dataclass(frozen=True)
class YamlFile(Generic[T]):
    """A YAML settings file: ``default`` in ``package`` unless an operator names another; ``check`` turns the
    parsed data and the file's name into the capability's value, raising ``error`` (a ``ValueError``) for a bad
    one; ``what`` names the file in messages, e.g. ``"the workflow table"``."""

    package: str
    default: str
    what: str
    check: Callable[[Any, str], T]
    error: type[ValueError]

    def load(self, path: str | Path | None = None) -> T:
        """The checked content of the file at ``path``, or of the packaged default when ``path`` is None (parsed
        once per process); an unreadable, malformed or invalid file raises ``error`` naming it."""
        if path is None:
            return _packaged(self)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise self.error(f"cannot read {self.what} {path}: {reason}") from exc
        return self._checked(text, str(path))

    def text(self, path: str | Path | None = None) -> tuple[str, str]:
        """The exact text of the file at ``path`` (or of the packaged default) and where it was read: the path,
        or ``(default)``. What the ledger records of it (``ledger.core.decision_settings``); read after
        :meth:`setting` checked it, so a bad file was already refused."""
        if path is None:
            return resources.files(self.package).joinpath(self.default).read_text(encoding="utf-8"), "(default)"
        try:
            return Path(path).read_text(encoding="utf-8"), str(path)
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            hint = "fix the file's path or its permissions"
            raise InvalidInput(f"cannot read {self.what} {path}: {reason}", hint) from exc

    def setting(self, path: str | Path | None, hint: str) -> T:
        """:meth:`load` for a file an operator configured: a bad one is :class:`InvalidInput` naming it, with
        ``hint`` saying how to fix it (or to fall back to the default)."""
        try:
            return self.load(path)
        except self.error as exc:
            raise InvalidInput(str(exc), hint) from exc

    def _checked(self, text: str, source: str) -> T:
        try:
            data = parse_yaml(text)
        except yaml.YAMLError as exc:
            raise self.error(f"{source} is not valid YAML: {exc}") from exc
        return self.check(data, source)


@functools.cache
def _packaged(file: YamlFile[T]) -> T:
    text = resources.files(file.package).joinpath(file.default).read_text(encoding="utf-8")
    return file._checked(text, f"(default) {file.package.replace('.', '/')}/{file.default}")
