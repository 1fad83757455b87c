"""The default project roots: the home directory and the directory the process started in, unless that is the
filesystem root or already inside the home directory; ``LEDGER_PROJECT_ROOTS`` replaces them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from api.settings import Settings, default_project_roots


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("LEDGER_PROJECT_ROOTS", raising=False)
    return home


def test_the_directory_started_in_is_a_root_beside_the_home_directory(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "srv").mkdir()
    monkeypatch.chdir(tmp_path / "srv")
    assert default_project_roots() == [str(home), str(tmp_path / "srv")]
    assert Settings().project_roots == [str(home), str(tmp_path / "srv")]


def test_a_directory_inside_the_home_directory_adds_nothing(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(home / "work")
    assert default_project_roots() == [str(home)]


def test_the_filesystem_root_is_never_a_default_root(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")
    assert default_project_roots() == [str(home)]


def test_a_directory_removed_after_the_start_leaves_the_home_directory(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    os.rmdir(gone)
    assert default_project_roots() == [str(home)]


def test_the_setting_replaces_the_defaults(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LEDGER_PROJECT_ROOTS", json.dumps(["/srv/projects"]))
    assert Settings().project_roots == ["/srv/projects"]


def test_a_home_directory_at_the_filesystem_root_is_not_a_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Service managers and containers run processes with HOME=/; the home root must not then allow every path.
    monkeypatch.setenv("HOME", "/")
    monkeypatch.delenv("LEDGER_PROJECT_ROOTS", raising=False)
    monkeypatch.chdir(tmp_path)
    assert default_project_roots() == [str(tmp_path)]
    monkeypatch.chdir("/")
    assert default_project_roots() == []
