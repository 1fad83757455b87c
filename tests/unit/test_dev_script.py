"""scripts/dev.py's CI prerequisites: which Debian packages the Go cross-check needs and the apt-get commands that
install them (and chromium), with ``run`` replaced by a recorder, so nothing is installed."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "dev.py"


@pytest.fixture
def dev() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dev_script_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sumdb(tmp_path: Path, *packages: str) -> Path:
    root = tmp_path / "sumdb"
    for package in packages:
        (root / package).mkdir(parents=True)
    return root


def test_apt_install_goes_through_sudo_only_when_not_root(dev: ModuleType) -> None:
    assert dev.apt_install_command(["golang-go"], 0) == [
        "apt-get", "install", "-y", "--no-install-recommends", "golang-go",
    ]  # fmt: skip
    assert dev.apt_install_command(["a", "b"], 1000) == [
        "sudo", "-n", "apt-get", "install", "-y", "--no-install-recommends", "a", "b",
    ]  # fmt: skip


def test_the_go_packages_missing(dev: ModuleType, tmp_path: Path) -> None:
    both = sumdb(tmp_path, "note", "tlog")
    assert dev.go_packages_missing("/usr/bin/go", both) == []
    assert dev.go_packages_missing(None, both) == ["golang-go"]
    assert dev.go_packages_missing("/usr/local/go/bin/go", tmp_path / "nowhere") == ["golang-golang-x-mod-dev"]
    only_note = sumdb(tmp_path / "partial", "note")
    assert dev.go_packages_missing(None, only_note) == ["golang-go", "golang-golang-x-mod-dev"]


class Recorder:
    """Stands in for dev.run: records each command and answers with the next scripted exit code (0 when none)."""

    def __init__(self, codes: list[int] | None = None) -> None:
        self.calls: list[list[str]] = []
        self.codes = list(codes or [])

    def __call__(self, *args: object, env: dict[str, str] | None = None) -> int:
        self.calls.append([str(a) for a in args])
        return self.codes.pop(0) if self.codes else 0


def test_outside_ci_nothing_is_installed_or_built(dev: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(dev, "run", recorder := Recorder())
    monkeypatch.setattr(dev.shutil, "which", lambda name: None)
    dev.check_go_for_ci()
    assert recorder.calls == []


def test_in_ci_with_go_present_only_the_checker_is_built(
    dev: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setattr(dev, "GO_SUMDB", sumdb(tmp_path, "note", "tlog"))
    monkeypatch.setattr(dev, "run", recorder := Recorder())
    monkeypatch.setattr(dev.shutil, "which", lambda name: "/usr/bin/go")
    dev.check_go_for_ci()
    assert recorder.calls == [[str(dev.PY), "-m", "tests.go_support"]]


def test_in_ci_missing_go_is_installed_then_checked_again(
    dev: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setattr(dev.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(dev, "GO_SUMDB", sumdb(tmp_path, "note", "tlog"))
    found = iter([None, "/usr/bin/go"])  # missing before apt-get, there after
    monkeypatch.setattr(dev.shutil, "which", lambda name: next(found))
    monkeypatch.setattr(dev, "run", recorder := Recorder([1, 0, 0, 0]))  # the first install fails: update, retry
    dev.check_go_for_ci()
    install = ["sudo", "-n", "apt-get", "install", "-y", "--no-install-recommends", "golang-go"]
    assert recorder.calls == [
        install,
        ["sudo", "-n", "apt-get", "update"],
        install,
        [str(dev.PY), "-m", "tests.go_support"],
    ]


def test_in_ci_a_failed_install_or_build_fails_loudly(
    dev: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setattr(dev.os, "geteuid", lambda: 0)
    monkeypatch.setattr(dev, "GO_SUMDB", tmp_path / "nowhere")
    monkeypatch.setattr(dev.shutil, "which", lambda name: "/usr/bin/go")
    monkeypatch.setattr(dev, "run", Recorder([1, 0, 1]))
    with pytest.raises(SystemExit, match="could not install golang-golang-x-mod-dev"):
        dev.check_go_for_ci()
    monkeypatch.setattr(dev, "run", Recorder([0]))  # apt-get says yes, yet the packages are not there
    with pytest.raises(SystemExit, match="golang-golang-x-mod-dev installed, yet"):
        dev.check_go_for_ci()
    monkeypatch.setattr(dev, "GO_SUMDB", sumdb(tmp_path, "note", "tlog"))
    monkeypatch.setattr(dev, "run", Recorder([2]))  # the checker does not build
    with pytest.raises(SystemExit, match="could not be built"):
        dev.check_go_for_ci()


def test_chromium_goes_through_the_same_apt_get(
    dev: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setattr(dev.os, "geteuid", lambda: 0)
    monkeypatch.setattr(dev, "CHROMIUM", tmp_path / "chromium")
    monkeypatch.setattr(dev, "run", recorder := Recorder([1, 0, 1]))
    with pytest.raises(SystemExit, match="could not install chromium"):
        dev.check_chromium_for_ci()
    assert recorder.calls[1] == ["apt-get", "update"]


def test_nginx_goes_through_the_same_apt_get(dev: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setattr(dev.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(dev, "NGINX", tmp_path / "nginx")
    monkeypatch.setattr(dev, "run", recorder := Recorder([1, 0, 1]))
    with pytest.raises(SystemExit, match="could not install nginx"):
        dev.check_nginx_for_ci()
    assert recorder.calls[0] == ["sudo", "-n", "apt-get", "install", "-y", "--no-install-recommends", "nginx"]
    assert recorder.calls[1] == ["sudo", "-n", "apt-get", "update"]
    monkeypatch.setattr(dev, "run", Recorder([0]))  # apt-get says yes, yet there is no binary
    with pytest.raises(SystemExit, match="nginx was installed but"):
        dev.check_nginx_for_ci()
    (tmp_path / "nginx").touch()
    monkeypatch.setattr(dev, "run", recorder := Recorder([]))
    dev.check_nginx_for_ci()  # already there: nothing run
    monkeypatch.delenv("CI")
    monkeypatch.setattr(dev, "NGINX", tmp_path / "nowhere")
    dev.check_nginx_for_ci()  # outside CI: nothing installed
    assert recorder.calls == []
