"""The server reads the project's real state: real git repositories, real files and symlinks under tmp_path."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from ledger.core.errors import Forbidden, InvalidInput
from ledger.sessions import project as project_context
from ledger.sessions.project import (
    DEFAULT_CONTEXT_PATHS,
    ProjectContext,
    Workspace,
    check_working_dir,
    read_context,
)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(autouse=True)
def quiet_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No user or system git config, and no repository discovery above tmp_path."""
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)


def git(repo: Path, *args: str) -> str:
    command = ["git", "-C", str(repo), "-c", "user.name=Test", "-c", "user.email=test@example.com"]
    command += ["-c", "commit.gpgsign=false", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def new_repo(path: Path, branch: str = "main", *, commit: bool = True) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    if commit:
        (path / "README.md").write_text("# project\n")
        git(path, "add", "README.md")
        git(path, "commit", "-q", "--no-verify", "-m", "first")
    return path


def outside_message(path: str) -> str:
    return f"CTX:{path} is outside the session's working directory"


# --- branch and file count ----------------------------------------------------------------------------------


def test_a_repository_with_commits_reports_its_branch_and_a_clean_tree(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo", "feature/oa5")

    assert read_context(repo) == ProjectContext(str(repo), "feature/oa5", 0, None, ())


def test_a_fresh_repository_without_commits_reports_the_branch_it_will_commit_to(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "fresh", "trunk", commit=False)
    (repo / "draft.txt").write_text("x\n")

    ctx = read_context(repo)

    assert (ctx.branch, ctx.files) == ("trunk", 1)


def test_a_detached_head_is_reported_as_head(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    git(repo, "checkout", "-q", "--detach")

    assert read_context(repo).branch == "HEAD"


def test_a_branch_tracking_an_upstream_is_reported_without_the_upstream(tmp_path: Path) -> None:
    origin = new_repo(tmp_path / "origin", "main")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    (clone / "more.txt").write_text("more\n")
    git(clone, "add", "more.txt")
    git(clone, "commit", "-q", "--no-verify", "-m", "ahead")

    assert read_context(clone).branch == "main"  # git prints "## main...origin/main [ahead 1]"


def test_a_subdirectory_of_a_repository_reports_the_repository_state(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    (repo / "src").mkdir()
    (repo / "new.txt").write_text("x\n")

    ctx = read_context(repo / "src")

    assert (ctx.working_dir, ctx.branch, ctx.files) == (str(repo / "src"), "main", 1)


def test_a_directory_that_is_not_a_repository_has_no_branch_and_no_files(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "file.txt").write_text("x\n")

    assert read_context(plain) == ProjectContext(str(plain), None, 0, None, ())


def test_a_working_directory_that_has_disappeared_does_not_raise(tmp_path: Path) -> None:
    assert read_context(tmp_path / "gone") == ProjectContext(str(tmp_path / "gone"), None, 0, None, ())


def test_without_git_on_the_path_the_context_has_no_branch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = new_repo(tmp_path / "repo")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))

    ctx = read_context(repo)

    assert (ctx.branch, ctx.files) == (None, 0)


def test_a_git_call_that_hangs_is_abandoned_after_the_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = new_repo(tmp_path / "repo")
    index = repo / ".git" / "index"
    index.unlink()
    os.mkfifo(index)  # real git blocks opening an index with no writer
    monkeypatch.setattr(project_context, "GIT_TIMEOUT_SECONDS", 0.3)

    ctx = read_context(repo)

    assert (ctx.branch, ctx.files) == (None, 0)


def test_git_variables_of_the_server_process_do_not_redirect_the_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = new_repo(tmp_path / "repo", "mine")
    other = new_repo(tmp_path / "other", "theirs")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))

    assert read_context(repo).branch == "mine"


def test_the_file_count_follows_modified_added_deleted_and_untracked_files(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    (repo / "keep.txt").write_text("keep\n")
    git(repo, "add", "keep.txt")
    git(repo, "commit", "-q", "--no-verify", "-m", "second")
    assert read_context(repo).files == 0

    (repo / "README.md").write_text("# changed\n")
    assert read_context(repo).files == 1
    (repo / "staged.txt").write_text("new\n")
    git(repo, "add", "staged.txt")
    assert read_context(repo).files == 2
    (repo / "untracked.txt").write_text("u\n")
    assert read_context(repo).files == 3
    (repo / "keep.txt").unlink()
    assert read_context(repo).files == 4
    (repo / "newdir").mkdir()
    (repo / "newdir" / "a.txt").write_text("a\n")
    (repo / "newdir" / "b.txt").write_text("b\n")
    assert read_context(repo).files == 5  # an untracked directory is one entry (--untracked-files=normal)
    (repo / "ignored.log").write_text("i\n")
    (repo / ".gitignore").write_text("*.log\n")
    assert read_context(repo).files == 6  # .gitignore itself counts, the ignored file does not


def test_the_working_dir_is_reported_with_symlinks_resolved(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    link = tmp_path / "link"
    link.symlink_to(repo)

    ctx = read_context(link)

    assert (ctx.working_dir, ctx.branch) == (str(repo), "main")


# --- PHASE ----------------------------------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_phase_is_read_from_the_project_context_file_at_the_root(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    root_file = write(repo / "PROJECT-CONTEXT.oct.md", "===PROJECT_CONTEXT===\nPHASE::B1\n===END===\n")

    ctx = read_context(repo)

    assert (ctx.phase, ctx.context_files) == ("B1", (str(root_file),))


def test_phase_is_read_from_the_hestai_context_directory(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    hestai = write(repo / ".hestai/context/PROJECT-CONTEXT.oct.md", 'META:\n  TYPE::"CONTEXT"\n  PHASE::"B2"\n')

    ctx = read_context(repo)

    assert (ctx.phase, ctx.context_files) == ("B2", (str(hestai),))


def test_the_root_context_file_wins_when_both_exist_and_both_are_listed(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    root_file = write(repo / "PROJECT-CONTEXT.oct.md", "PHASE::B1\n")
    hestai = write(repo / ".hestai/context/PROJECT-CONTEXT.oct.md", "PHASE::B2\n")

    ctx = read_context(repo)

    assert (ctx.phase, ctx.context_files) == ("B1", (str(root_file), str(hestai)))


def test_a_context_file_without_phase_falls_through_to_the_next_one(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    write(repo / "PROJECT-CONTEXT.oct.md", "no phase here\n")
    write(repo / ".hestai/context/PROJECT-CONTEXT.oct.md", "PHASE::B3\n")

    ctx = read_context(repo)

    assert (ctx.phase, len(ctx.context_files)) == ("B3", 2)


def test_custom_lookup_paths_are_searched_in_their_order(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    write(repo / "PROJECT-CONTEXT.oct.md", "PHASE::B1\n")
    custom = write(repo / "docs/context.md", "PHASE::D4\n")

    ctx = read_context(repo, ("docs/missing.md", "docs/context.md", "PROJECT-CONTEXT.oct.md"))

    assert (ctx.phase, ctx.context_files[0]) == ("D4", str(custom))
    assert read_context(repo, ()).phase is None


@pytest.mark.parametrize(
    ("text", "phase"),
    [
        ("PHASE::B1\n", "B1"),
        ('PHASE::"B1"\n', "B1"),
        ("   PHASE :: B1   // the build phase\n", "B1"),
        ('META:\n  STATUS::ACTIVE\n  PHASE::"B2 — integration"\n', "B2 — integration"),
        ("\ufeffPHASE::B1\n", "B1"),
        ("PHASE::B1\nPHASE::B9\n", "B1"),
        ("CURRENT_PHASE::X9\nNEXT::PHASE::X8\nPHASE::C1,\n", "C1"),
        ('PHASE::""\nPHASE::B5\n', "B5"),
        ("PHASE::[\n", None),
        ("nothing to see\n", None),
    ],
)
def test_phase_lines_are_read_quoted_indented_or_inside_a_block_and_the_first_wins(
    tmp_path: Path, text: str, phase: str | None
) -> None:
    write(tmp_path / "PROJECT-CONTEXT.oct.md", text)

    assert read_context(tmp_path).phase == phase


def test_a_context_file_linked_from_outside_the_working_directory_is_ignored(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "repo")
    secret = write(tmp_path / "secret.md", "PHASE::LEAKED\n")
    (repo / "PROJECT-CONTEXT.oct.md").symlink_to(secret)

    ctx = read_context(repo, ("PROJECT-CONTEXT.oct.md", "../secret.md", str(secret)))

    assert (ctx.phase, ctx.context_files) == (None, ())


def test_a_context_file_that_is_a_fifo_or_a_directory_is_skipped_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "PROJECT-CONTEXT.oct.md")
    (tmp_path / ".hestai/context/PROJECT-CONTEXT.oct.md").mkdir(parents=True)

    assert read_context(tmp_path) == ProjectContext(str(tmp_path), None, 0, None, ())


def test_the_default_lookup_paths_are_the_root_then_hestai_context() -> None:
    assert DEFAULT_CONTEXT_PATHS == ("PROJECT-CONTEXT.oct.md", ".hestai/context/PROJECT-CONTEXT.oct.md")


# --- the working directory check ------------------------------------------------------------------------------


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    """An allowed root with a project in it, and a directory outside every root."""
    allowed, outside = tmp_path / "projects", tmp_path / "elsewhere"
    (allowed / "app").mkdir(parents=True)
    outside.mkdir()
    return allowed, outside


def test_a_working_dir_inside_a_root_is_returned_resolved(roots: tuple[Path, Path]) -> None:
    allowed, _ = roots

    assert check_working_dir(f"{allowed}/app/../app/", [str(allowed)]) == allowed / "app"
    assert check_working_dir(str(allowed), ["/nonexistent-root", str(allowed)]) == allowed


def test_a_root_given_through_a_symlink_is_resolved_too(tmp_path: Path, roots: tuple[Path, Path]) -> None:
    allowed, _ = roots
    (tmp_path / "alias").symlink_to(allowed)

    assert check_working_dir(str(allowed / "app"), [str(tmp_path / "alias")]) == allowed / "app"


def test_a_symlink_inside_a_root_pointing_into_the_root_is_accepted(roots: tuple[Path, Path]) -> None:
    allowed, _ = roots
    (allowed / "shortcut").symlink_to(allowed / "app")

    assert check_working_dir(str(allowed / "shortcut"), [str(allowed)]) == allowed / "app"


@pytest.mark.parametrize(
    "where",
    [
        lambda allowed, outside: str(outside),
        lambda allowed, outside: str(outside / "does-not-exist"),  # no oracle: missing outside is also Forbidden
        lambda allowed, outside: f"{allowed}/../elsewhere",
        lambda allowed, outside: f"{allowed}-evil",  # a sibling whose name starts with the root's name
        lambda allowed, outside: "/",
    ],
)
def test_a_working_dir_outside_every_root_is_forbidden(
    roots: tuple[Path, Path], where: Callable[[Path, Path], str]
) -> None:
    allowed, outside = roots
    Path(f"{allowed}-evil").mkdir()

    with pytest.raises(Forbidden) as err:
        check_working_dir(where(allowed, outside), [str(allowed)])

    assert "outside the allowed project roots" in err.value.message
    assert str(allowed) in err.value.hint


def test_a_symlinked_working_dir_that_resolves_outside_the_roots_is_forbidden(roots: tuple[Path, Path]) -> None:
    allowed, outside = roots
    (allowed / "escape").symlink_to(outside)

    with pytest.raises(Forbidden) as err:
        check_working_dir(str(allowed / "escape"), [str(allowed)])

    assert err.value.hint


def test_with_no_project_root_configured_every_working_dir_is_forbidden(roots: tuple[Path, Path]) -> None:
    allowed, _ = roots

    for configured in ([], ["relative/root"]):
        with pytest.raises(Forbidden) as err:
            check_working_dir(str(allowed / "app"), configured)
        assert "LEDGER_PROJECT_ROOTS" in err.value.hint


@pytest.mark.parametrize(
    ("working_dir", "message"),
    [
        ("", "working_dir is empty"),
        ("   ", "working_dir is empty"),
        ("app", "is not an absolute path"),
        ("./app", "is not an absolute path"),
        ("~/app", "is not an absolute path"),
        ("/tmp/app\x00", "is not a valid path"),
        ("/" + "a" * 5000, "is not a valid path"),
    ],
)
def test_an_empty_relative_or_malformed_working_dir_is_invalid(
    roots: tuple[Path, Path], working_dir: str, message: str
) -> None:
    allowed, _ = roots

    with pytest.raises(InvalidInput) as err:
        check_working_dir(working_dir, [str(allowed)])

    assert message in err.value.message
    assert "absolute path" in err.value.hint


def test_a_missing_working_dir_inside_a_root_is_invalid(roots: tuple[Path, Path]) -> None:
    allowed, _ = roots

    with pytest.raises(InvalidInput) as err:
        check_working_dir(str(allowed / "nope"), [str(allowed)])

    assert err.value.message == f"working_dir {allowed / 'nope'} does not exist"
    assert "existing project directory" in err.value.hint


def test_a_file_is_not_a_working_dir(roots: tuple[Path, Path]) -> None:
    allowed, _ = roots
    (allowed / "app" / "main.py").write_text("print()\n")

    with pytest.raises(InvalidInput) as err:
        check_working_dir(str(allowed / "app" / "main.py"), [str(allowed)])

    assert "is not a directory" in err.value.message
    assert err.value.hint


# --- CTX citations --------------------------------------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """A working directory ``tmp/box/proj`` with a few files, and ``tmp/box/secret.txt`` beside it."""
    root = tmp_path / "box" / "proj"
    write(root / "src/main.py", "one\ntwo\nthree\n")
    write(root / "notes.txt", "a\nb")  # two lines, the last without a newline
    write(root / "empty.txt", "")
    write(tmp_path / "box" / "secret.txt", "s\n")
    return Workspace(root)


def test_a_file_with_the_cited_line_passes(ws: Workspace) -> None:
    assert ws.check_citation("src/main.py", 1) is None
    assert ws.check_citation("src/main.py", 3) is None
    assert ws.check_citation("./src//main.py", 2) is None
    assert ws.check_citation("notes.txt", 2) is None


def test_a_line_past_the_end_of_the_file_is_reported_with_the_real_count(ws: Workspace) -> None:
    assert ws.check_citation("src/main.py", 4) == "CTX:src/main.py has 3 lines; L4 does not exist"
    assert ws.check_citation("notes.txt", 3) == "CTX:notes.txt has 2 lines; L3 does not exist"
    assert ws.check_citation("empty.txt", 1) == "CTX:empty.txt has 0 lines; L1 does not exist"
    write(ws.root / "one.txt", "only\n")
    assert ws.check_citation("one.txt", 2) == "CTX:one.txt has 1 line; L2 does not exist"


def test_a_directory_passes_for_any_line(ws: Workspace) -> None:
    assert ws.check_citation("src", 999_999) is None
    assert ws.check_citation("src/", 1) is None
    assert ws.check_citation(".", 7) is None


def test_a_missing_path_inside_the_working_directory_is_reported_as_missing(ws: Workspace) -> None:
    assert ws.check_citation("src/nope.py", 1) == "CTX:src/nope.py does not exist in the working directory"
    assert ws.check_citation("notes.txt/child", 1) == "CTX:notes.txt/child does not exist in the working directory"


def test_a_line_below_one_and_an_empty_path_are_reported(ws: Workspace) -> None:
    assert ws.check_citation("src/main.py", 0) == "CTX:src/main.py: lines are numbered from 1; L0 does not exist"
    assert ws.check_citation("", 1) == "CTX: names no path"


def test_a_path_that_goes_up_inside_the_working_directory_is_accepted(ws: Workspace) -> None:
    assert ws.check_citation("src/../notes.txt", 2) is None


def test_a_symlink_inside_the_working_directory_to_a_file_inside_it_is_followed(ws: Workspace) -> None:
    (ws.root / "alias.py").symlink_to(ws.root / "src/main.py")
    (ws.root / "dangling").symlink_to(ws.root / "src/gone.py")

    assert ws.check_citation("alias.py", 3) is None
    assert ws.check_citation("alias.py", 4) == "CTX:alias.py has 3 lines; L4 does not exist"
    assert ws.check_citation("dangling", 1) == "CTX:dangling does not exist in the working directory"


def test_a_working_directory_given_through_a_symlink_checks_the_real_directory(ws: Workspace, tmp_path: Path) -> None:
    (tmp_path / "via").symlink_to(ws.root)

    assert Workspace(tmp_path / "via").check_citation("src/main.py", 3) is None


# Each escape is checked twice with the same path: once while its target exists and once after it is removed.
# The answers must be the same text, or the check would tell an agent what exists outside its directory.
ESCAPES: dict[str, Callable[[Workspace], str]] = {
    "parent traversal": lambda ws: "../secret.txt",
    "deep traversal": lambda ws: "../../box/secret.txt",
    "absolute path": lambda ws: str(ws.root.parent / "secret.txt"),
    "out and back in": lambda ws: f"../{ws.root.name}/notes.txt",  # refused: no '..' may climb above the root
    "symlink to a file outside": lambda ws: "link-out",
    "up through a symlinked directory": lambda ws: "dirlink/../secret.txt",
    "NUL byte": lambda ws: "notes.txt\x00",
    "home directory": lambda ws: "~/secret.txt",
}


@pytest.mark.parametrize("make_path", ESCAPES.values(), ids=ESCAPES.keys())
def test_every_escape_gets_the_same_message_whether_or_not_its_target_exists(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch, make_path: Callable[[Workspace], str]
) -> None:
    box = ws.root.parent
    monkeypatch.setenv("HOME", str(box))
    (ws.root / "link-out").symlink_to(box / "secret.txt")
    (ws.root / "dirlink").symlink_to(box / "elsewhere")
    (box / "elsewhere").mkdir()
    path = make_path(ws)

    while_present = ws.check_citation(path, 1)
    (box / "secret.txt").unlink()
    (ws.root / "notes.txt").unlink()
    while_absent = ws.check_citation(path, 1)

    expected = outside_message(path.replace("\x00", "\\x00"))
    assert while_present == while_absent == expected


@pytest.mark.parametrize(
    "path",
    ["../../etc/passwd", "/etc/passwd", "/etc/no-such-file", "../../etc/no-such-file", "..", "../", "~", "~root/x"],
)
def test_system_paths_and_bare_escapes_are_outside(ws: Workspace, path: str) -> None:
    assert ws.check_citation(path, 1) == outside_message(path)


def test_a_symlinked_directory_leading_outside_is_outside_for_files_present_and_missing(
    ws: Workspace, tmp_path: Path
) -> None:
    (ws.root / "ext").symlink_to(tmp_path / "box")

    assert ws.check_citation("ext/secret.txt", 1) == outside_message("ext/secret.txt")
    assert ws.check_citation("ext/missing.txt", 1) == outside_message("ext/missing.txt")


def test_a_symlink_loop_inside_the_working_directory_does_not_exist(ws: Workspace) -> None:
    (ws.root / "loop-a").symlink_to(ws.root / "loop-b")
    (ws.root / "loop-b").symlink_to(ws.root / "loop-a")

    assert ws.check_citation("loop-a", 1) == "CTX:loop-a does not exist in the working directory"


def test_binary_files_count_lines_by_newline_bytes(ws: Workspace) -> None:
    (ws.root / "blob.bin").write_bytes(b"\xff\xfe\x00\n\x80\x81\n\x00")

    assert ws.check_citation("blob.bin", 3) is None
    assert ws.check_citation("blob.bin", 4) == "CTX:blob.bin has 3 lines; L4 does not exist"


def test_large_files_are_counted_in_chunks_across_chunk_boundaries(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(project_context, "READ_CHUNK_BYTES", 7)
    (ws.root / "big.txt").write_bytes(b"line\n" * 1000 + b"tail")

    assert ws.check_citation("big.txt", 1001) is None
    assert ws.check_citation("big.txt", 1002) == "CTX:big.txt has 1001 lines; L1002 does not exist"


def test_a_line_beyond_the_scanned_prefix_of_a_huge_file_is_reported_as_too_large(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(project_context, "READ_CHUNK_BYTES", 1 << 16)
    monkeypatch.setattr(project_context, "MAX_SCAN_BYTES", 1 << 20)
    (ws.root / "huge.txt").write_bytes(b"x" * 99 + b"\n" + b"y" * (1 << 20) + b"\n")

    assert ws.check_citation("huge.txt", 1) is None  # found inside the scanned prefix
    assert ws.check_citation("huge.txt", 2) == "CTX:huge.txt is too large to check L2: only its first 1 MiB are read"


def test_a_fifo_inside_the_working_directory_is_refused_without_blocking(ws: Workspace) -> None:
    os.mkfifo(ws.root / "pipe")

    assert ws.check_citation("pipe", 1) == "CTX:pipe is not a regular file or directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_inside_the_working_directory_is_reported(ws: Workspace) -> None:
    locked = write(ws.root / "locked.txt", "x\n")
    locked.chmod(0)
    try:
        assert ws.check_citation("locked.txt", 1) == "CTX:locked.txt cannot be read by the ledger"
    finally:
        locked.chmod(0o600)


def test_control_characters_in_a_cited_path_are_escaped_in_the_message(ws: Workspace) -> None:
    assert ws.check_citation("bad\nname", 1) == "CTX:bad\\nname does not exist in the working directory"
