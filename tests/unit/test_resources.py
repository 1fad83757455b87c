"""The one loader of YAML settings files: a path or the packaged default, safe parsing, errors naming the file,
and the packaged default parsed once and shared read-only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from ledger.core import resources
from ledger.core.errors import InvalidInput
from ledger.core.resources import YamlFile
from ledger.enforcement.rules import RULES_FILE
from ledger.workflow.decisions import Workflow
from ledger.workflow.table import TABLE


class ShapeError(ValueError):
    """A made-up capability's error."""


def pairs(data: Any, source: str) -> tuple[tuple[str, int], ...]:
    if not isinstance(data, dict) or not all(isinstance(v, int) for v in data.values()):
        raise ShapeError(f"{source}: a mapping of names to numbers")
    return tuple(sorted(data.items()))


NUMBERS = YamlFile("ledger.workflow", "workflow_default.yaml", "the numbers", pairs, ShapeError)


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "numbers.yaml"
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return path


def test_an_operators_file_is_read_and_checked(tmp_path: Path) -> None:
    assert NUMBERS.load(write(tmp_path, "b: 2\na: 1\n")) == (("a", 1), ("b", 2))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [1,\n", r"numbers\.yaml is not valid YAML"),
        ("a: one\n", r"numbers\.yaml: a mapping of names to numbers"),
        ("a: !!python/object/apply:os.system ['true']\n", r"numbers\.yaml is not valid YAML"),  # safe tags only
        (b"a: \xff\n", r"cannot read the numbers .*numbers\.yaml"),
    ],
)
def test_a_bad_file_raises_the_capabilitys_error_naming_it(tmp_path: Path, text: str | bytes, message: str) -> None:
    with pytest.raises(ShapeError, match=message):
        NUMBERS.load(write(tmp_path, text))


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ShapeError, match=r"cannot read the numbers .*missing\.yaml: No such file"):
        NUMBERS.load(tmp_path / "missing.yaml")


def test_a_configured_bad_file_is_invalid_input_with_the_operators_hint(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        NUMBERS.setting(write(tmp_path, "a: one\n"), "fix it, or unset LEDGER_NUMBERS_FILE")
    assert "numbers.yaml" in caught.value.message and caught.value.hint == "fix it, or unset LEDGER_NUMBERS_FILE"
    assert NUMBERS.setting(write(tmp_path, "a: 1\n"), "unused") == (("a", 1),)


def test_the_packaged_default_is_parsed_once_and_named_as_the_default() -> None:
    first = TABLE.load()
    assert isinstance(first, Workflow) and first.source == "(default) ledger/workflow/workflow_default.yaml"
    assert TABLE.load() is first and TABLE.setting(None, "unused") is first
    assert RULES_FILE.load() is RULES_FILE.load()
    assert RULES_FILE.load().source == "(default) ledger/enforcement/enforcement_rules.yaml"


def test_an_operators_file_is_read_again_each_time(tmp_path: Path) -> None:
    path = write(tmp_path, "a: 1\n")
    assert NUMBERS.load(path) == (("a", 1),)
    path.write_text("a: 2\n", encoding="utf-8")
    assert NUMBERS.load(path) == (("a", 2),)


def test_the_shared_defaults_cannot_be_changed_by_one_ledger() -> None:
    flow, rules = TABLE.load(), RULES_FILE.load()
    with pytest.raises(TypeError):
        flow.types["task"] = {}  # type: ignore[index]
    with pytest.raises(TypeError):
        next(iter(flow.types.values()))["x->y"] = None  # type: ignore[index]
    with pytest.raises(TypeError):
        rules.rules[("t", "a")] = None  # type: ignore[index]
    with pytest.raises(TypeError):
        rules.rollout.agents["bot"] = None  # type: ignore[index]


def test_libyaml_parses_when_pyyaml_has_it() -> None:
    expected = yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader
    assert resources.SafeLoader is expected
    assert resources.parse_yaml("a: [1, 2]\nb: {c: null}\n") == {"a": [1, 2], "b": {"c": None}}
