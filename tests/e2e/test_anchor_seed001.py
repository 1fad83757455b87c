"""Seed 001 fidelity (issue 15): the challenge-response layer, allowed external context for CTX: citations, and
``retries_left`` after a success — through a real ledger, a real MCP client in memory and REST on loopback.

The challenge tests answer the way an agent would: they read the line the server names from the working tree.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from freezegun import freeze_time
from mcp import Client
from pydantic import ValidationError

from api.mcp.server import build_mcp
from api.settings import Settings
from ledger.core.errors import Conflict, InvalidInput
from ledger.service import Actor, Ledger
from tests.anchor_support import git, proof
from tests.conftest import LedgerFactory
from tests.mcp_support import call
from tests.server_support import HTTP_TIMEOUT, running

DEV = Actor("dev-1", "mcp")
T0 = "2026-01-05T09:00:00Z"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def answered(text: str, challenge_id: str, line: str) -> str:
    """``text`` (a proof) with the challenge answered under CONTEXT, as an agent writes it."""
    return text.replace("  FILES::1\n", f"  FILES::1\n  CHALLENGE::{challenge_id}[{line}]\n", 1)


def citing(path: str) -> str:
    """A valid proof whose first tension cites L1 of ``path``."""
    return proof().replace("CTX:src/app.py[line 1 ", f"CTX:{path}[line 1 ", 1)


def line_of(project: Path, issued: dict[str, Any]) -> str:
    """What an agent reads: the line the challenge names, from its own working tree."""
    return (project / issued["path"]).read_text().split("\n")[issued["line"] - 1]


def session_types(ledger: Ledger, sid: str) -> list[str]:
    return [r.type for r in ledger.store.iter_records(stream=f"session:{sid}")]


# --- the challenge-response layer ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_proof_quoting_the_challenged_line_is_validated_and_uses_the_challenge_up(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path, project: Path
) -> None:
    ledger = make_ledger(db_url, project_roots=[str(tmp_path / "projects")])
    async with Client(build_mcp(ledger, agent="dev-1")) as client:
        sid = (await call(client, "clock_in", {"role": "dev", "working_dir": str(project)}))["session_id"]
        issued = await call(client, "anchor_challenge", {"session_id": sid})
        text = line_of(project, issued)
        result = await call(
            client,
            "odyssean_anchor",
            {"session_id": sid, "role": "dev", "proof_candidate": answered(proof(), issued["challenge_id"], text)},
        )
    assert issued["challenge_id"].startswith("ach_") and issued["session_id"] == sid and issued["required"] is False
    assert issued["answer_format"] == (
        f"CHALLENGE::{issued['challenge_id']}[the text of line {issued['line']} of {issued['path']}]"
    )
    assert len(text.split()) >= 2  # a line worth quoting, not a brace
    assert result["validated"] is True, result["errors"]
    assert result["challenge"] == {k: issued[k] for k in ("challenge_id", "path", "line")}
    assert session_types(ledger, sid)[-2:] == ["AnchorChallengeIssued", "AnchorAttempted"]
    [issue] = ledger.store.iter_events(stream=f"session:{sid}", types=["AnchorChallengeIssued"])
    [attempt] = ledger.store.iter_events(stream=f"session:{sid}", types=["AnchorAttempted"])
    assert attempt.event.challenge_id == issued["challenge_id"]  # type: ignore[attr-defined]
    assert text.strip() not in json.dumps(issue.event.model_dump(mode="json"))  # the log holds a digest, not the line
    # the fold agrees: the challenge is used, by that attempt
    assert ledger.grants.view(sid)[2].anchor_challenge.used_position == attempt.position  # type: ignore[union-attr]


def test_replayed_replaced_foreign_and_malformed_answers_are_refused_and_change_nothing(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path, project: Path
) -> None:
    ledger = make_ledger(db_url, project_roots=[str(tmp_path / "projects")])
    sid = ledger.clock_in(DEV, "dev", str(project)).session_id
    other = ledger.clock_in(DEV, "dev", str(project)).session_id
    first = ledger.anchor_challenge(DEV, sid)
    second = ledger.anchor_challenge(DEV, sid)  # replaces the first
    foreign = ledger.anchor_challenge(DEV, other)
    good = (project / second.path).read_text().split("\n")[second.line - 1]
    refusals: list[tuple[str, type[Exception], str]] = [
        (answered(proof(), first.challenge_id, good), Conflict, f"was replaced by {second.challenge_id}"),
        (answered(proof(), foreign.challenge_id, good), InvalidInput, f"was not issued to session {sid}"),
        (answered(proof(), "ach_short", good), InvalidInput, "'ach_short' is not a challenge id"),
        (proof().replace("  FILES::1\n", "  FILES::1\n  CHALLENGE::\n"), InvalidInput, "is not in the form"),
        (
            answered(answered(proof(), second.challenge_id, good), second.challenge_id, good),
            InvalidInput,
            "the proof has 2 CHALLENGE:: lines",
        ),
    ]
    for candidate, error, says in refusals:
        head = ledger.store.head()
        with pytest.raises(error, match=None) as raised:
            ledger.anchor(DEV, sid, "dev", candidate)
        assert says in str(raised.value), str(raised.value)
        assert good.strip() not in str(raised.value)  # a refusal never shows the line
        assert raised.value.hint  # and says what to send instead
        assert ledger.store.head() == head, f"{says!r} recorded something"
    state = ledger.session_state(sid).anchor
    assert state.total_attempts == 0  # none of them counted as an attempt
    passed = ledger.anchor(DEV, sid, "dev", answered(proof(), second.challenge_id, good))
    assert passed.validated and passed.enforcement.attempt == 1
    head = ledger.store.head()
    with pytest.raises(Conflict, match=f"challenge {second.challenge_id} was already answered by the anchor attempt"):
        ledger.anchor(DEV, sid, "dev", answered(proof(), second.challenge_id, good))  # replayed
    assert ledger.store.head() == head


def test_a_wrong_quote_is_a_failed_attempt_that_spends_the_challenge(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path, project: Path
) -> None:
    ledger = make_ledger(db_url, project_roots=[str(tmp_path / "projects")])
    sid = ledger.clock_in(DEV, "dev", str(project)).session_id
    issued = ledger.anchor_challenge(DEV, sid)
    good = (project / issued.path).read_text().split("\n")[issued.line - 1]
    failed = ledger.anchor(DEV, sid, "dev", answered(proof(), issued.challenge_id, "a line nobody wrote"))
    says = f"the answer to challenge {issued.challenge_id} is not line {issued.line} of {issued.path} as the ledger"
    assert not failed.validated and failed.challenge is None
    assert any(says in e for e in failed.errors) and good.strip() not in failed.guidance  # never shows the line
    assert "anchor_challenge" in failed.guidance  # what to do: a new challenge
    assert ledger.session_state(sid).anchor.total_attempts == 1  # counted against the retries
    assert failed.enforcement.attempt == 1 and not failed.enforcement.locked  # the first of its tries (then retries)
    head = ledger.store.head()  # the challenge is spent: the right quote now is a replay, refused, recorded nothing
    with pytest.raises(Conflict, match=f"challenge {issued.challenge_id} was already answered by the anchor attempt"):
        ledger.anchor(DEV, sid, "dev", answered(proof(), issued.challenge_id, good))
    assert ledger.store.head() == head
    fresh = ledger.anchor_challenge(DEV, sid)
    line = (project / fresh.path).read_text().split("\n")[fresh.line - 1]
    assert ledger.anchor(DEV, sid, "dev", answered(proof(), fresh.challenge_id, line)).validated


def test_an_answer_after_the_challenge_expired_is_refused_by_the_ledger_clock(
    make_ledger: LedgerFactory, tmp_path: Path, project: Path
) -> None:
    with freeze_time(T0) as clock:
        ledger = make_ledger(project_roots=[str(tmp_path / "projects")], anchor_challenge_ttl_minutes=5)
        sid = ledger.clock_in(DEV, "dev", str(project)).session_id
        issued = ledger.anchor_challenge(DEV, sid)
        good = (project / issued.path).read_text().split("\n")[issued.line - 1]
        assert issued.expires_at == _dt.datetime(2026, 1, 5, 9, 5, tzinfo=_dt.UTC)
        clock.tick(_dt.timedelta(minutes=4, seconds=59))
        in_time = ledger.anchor(DEV, sid, "dev", answered(citing("src/app.py"), issued.challenge_id, good))
        late = ledger.anchor_challenge(DEV, sid)
        late_line = (project / late.path).read_text().split("\n")[late.line - 1]
        clock.tick(_dt.timedelta(minutes=5))
        head = ledger.store.head()
        with pytest.raises(Conflict) as raised:
            ledger.anchor(DEV, sid, "dev", answered(proof(), late.challenge_id, late_line))
    assert in_time.validated
    assert raised.value.message == f"challenge {late.challenge_id} expired at 2026-01-05T09:09:59+00:00"
    assert "anchor_challenge" in raised.value.hint
    assert ledger.store.head() == head


def test_a_line_changed_since_the_challenge_cannot_answer_it(
    make_ledger: LedgerFactory, tmp_path: Path, project: Path
) -> None:
    ledger = make_ledger(project_roots=[str(tmp_path / "projects")])
    sid = ledger.clock_in(DEV, "dev", str(project)).session_id
    issued = ledger.anchor_challenge(DEV, sid)
    target = project / issued.path
    lines = target.read_text().split("\n")
    lines[issued.line - 1] = "a line the agent wrote after the challenge was issued"
    target.write_text("\n".join(lines))
    head = ledger.store.head()
    with pytest.raises(Conflict, match=f"line {issued.line} of {issued.path} changed since challenge"):
        ledger.anchor(DEV, sid, "dev", answered(proof(), issued.challenge_id, lines[issued.line - 1]))
    assert ledger.store.head() == head


def test_one_challenge_answers_one_attempt_across_two_processes(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path, project: Path
) -> None:
    first = make_ledger(db_url, project_roots=[str(tmp_path / "projects")])
    second = make_ledger(db_url, project_roots=[str(tmp_path / "projects")])  # another node on the same store
    sid = first.clock_in(DEV, "dev", str(project)).session_id
    issued = first.anchor_challenge(DEV, sid)
    assert second.session_state(sid).session_id == sid  # the second node has folded the session already
    good = (project / issued.path).read_text().split("\n")[issued.line - 1]
    assert first.anchor(DEV, sid, "dev", answered(proof(), issued.challenge_id, good)).validated
    with pytest.raises(Conflict, match="was already answered"):
        second.anchor(DEV, sid, "dev", answered(proof(), issued.challenge_id, good))
    assert session_types(first, sid).count("AnchorAttempted") == 1


def test_a_ledger_that_requires_a_challenge_fails_a_proof_without_one_with_guidance(
    make_ledger: LedgerFactory, tmp_path: Path, project: Path
) -> None:
    ledger = make_ledger(project_roots=[str(tmp_path / "projects")], anchor_challenge_required=True)
    sid = ledger.clock_in(DEV, "dev", str(project)).session_id
    bare = ledger.anchor(DEV, sid, "dev", proof())
    issued = ledger.anchor_challenge(DEV, sid)
    good = (project / issued.path).read_text().split("\n")[issued.line - 1]
    passed = ledger.anchor(DEV, sid, "dev", answered(proof(), issued.challenge_id, good))
    assert bare.validated is False and bare.errors == ["CONTEXT has no CHALLENGE answer (this ledger requires one)"]
    assert (
        bare.guidance.startswith("VALIDATION FAILED: [CONTEXT has no CHALLENGE answer") and "RETRY: [" in bare.guidance
    )
    assert "Call anchor_challenge" in bare.guidance
    assert "CHALLENGE::{challenge_id}[" in bare.template
    assert issued.required is True
    assert passed.validated is True and passed.challenge is not None


def test_rest_issues_a_challenge_and_fails_a_wrong_answer_with_what_to_do(
    make_ledger: LedgerFactory, tmp_path: Path, project: Path
) -> None:
    ledger = make_ledger(project_roots=[str(tmp_path / "projects")])
    admin = Actor("operator", "cli", admin=True)
    key = {"X-API-Key": ledger.issue_api_key(admin, "dev-1").api_key}
    sid = ledger.clock_in(Actor("dev-1", "rest"), "dev", str(project)).session_id
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        issued = http.post("/anchors/challenges", json={"session_id": sid}, headers=key).json()
        wrong = http.post(
            "/anchors",
            json={"session_id": sid, "role": "dev", "proof_candidate": answered(proof(), issued["challenge_id"], "no")},
            headers=key,
        )
        again = http.post(
            "/anchors",
            json={
                "session_id": sid,
                "role": "dev",
                "proof_candidate": answered(proof(), issued["challenge_id"], line_of(project, issued)),
            },
            headers=key,
        )
        fresh = http.post("/anchors/challenges", json={"session_id": sid}, headers=key).json()
        right = http.post(
            "/anchors",
            json={
                "session_id": sid,
                "role": "dev",
                "proof_candidate": answered(proof(), fresh["challenge_id"], line_of(project, fresh)),
            },
            headers=key,
        )
    assert wrong.status_code == 200 and wrong.json()["validated"] is False  # a failed attempt, recorded
    assert f"the answer to challenge {issued['challenge_id']}" in wrong.json()["guidance"]
    assert wrong.json()["enforcement"]["attempt"] == 1
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"  # the challenge is spent
    assert right.status_code == 200 and right.json()["validated"] is True
    assert right.json()["challenge"]["challenge_id"] == fresh["challenge_id"]


def test_no_challenge_can_be_asked_in_a_working_tree_git_does_not_track(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    bare = tmp_path / "projects" / "plain"
    bare.mkdir(parents=True)
    (bare / "notes.md").write_text("A long enough line that git does not track at all.\n")
    ledger = make_ledger(project_roots=[str(tmp_path / "projects")])
    sid = ledger.clock_in(DEV, "dev", str(bare)).session_id
    head = ledger.store.head()
    with pytest.raises(InvalidInput, match="a challenge needs a git repository with a tracked text file"):
        ledger.anchor_challenge(DEV, sid)
    assert ledger.store.head() == head


def test_a_challenge_never_asks_about_an_untracked_or_secret_looking_file(
    make_ledger: LedgerFactory, tmp_path: Path, project: Path
) -> None:
    (project / ".env").write_text("DATABASE_PASSWORD_IS_IN_THIS_UNTRACKED_FILE=yes\n")
    (project / "config").mkdir()
    (project / "config" / "secrets.yaml").write_text("this committed file has a secret-looking name\n")
    git(project, "add", "config/secrets.yaml")
    git(project, "commit", "-q", "-m", "secrets")
    ledger = make_ledger(project_roots=[str(tmp_path / "projects")])
    sid = ledger.clock_in(DEV, "dev", str(project)).session_id
    asked = {ledger.anchor_challenge(DEV, sid).path for _ in range(30)}
    assert asked <= {"README.md"}  # src/app.py and the context file have no line long enough


# --- allowed external context for CTX: citations ------------------------------------------------------------


@pytest.fixture
def external(tmp_path: Path) -> dict[str, Path]:
    """An allowed specs directory and one allowed document, and things outside both."""
    specs = tmp_path / "shared" / "specs"
    specs.mkdir(parents=True)
    (specs / "design.md").write_text("# design\nthe API stays stable\n")
    doc = tmp_path / "shared" / "ADR-0036.md"
    doc.write_text("# ADR 0036\n")
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "exists.md").write_text("secret\n")
    (specs / "escape").symlink_to(outside / "exists.md")
    (specs / "dangling").symlink_to(outside / "missing.md")
    (tmp_path / "shared" / "specs-evil").mkdir()
    (tmp_path / "shared" / "specs-evil" / "x.md").write_text("x\n")
    return {"specs": specs, "doc": doc, "outside": outside}


@pytest.mark.anyio
async def test_a_citation_may_name_allowed_external_context_by_absolute_path(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path, project: Path, external: dict[str, Path]
) -> None:
    allowed = [str(external["specs"]), str(external["doc"])]
    ledger = make_ledger(db_url, project_roots=[str(tmp_path / "projects")], external_context=allowed)
    async with Client(build_mcp(ledger, agent="dev-1")) as client:
        sid = (await call(client, "clock_in", {"role": "dev", "working_dir": str(project)}))["session_id"]
        results = [
            await call(client, "odyssean_anchor", {"session_id": sid, "role": "dev", "proof_candidate": citing(p)})
            for p in (str(external["specs"] / "design.md"), str(external["doc"]), str(project / "src" / "app.py"))
        ]
        missing = await call(
            client,
            "odyssean_anchor",
            {"session_id": sid, "role": "dev", "proof_candidate": citing(str(external["specs"] / "nope.md"))},
        )
    assert [r["validated"] for r in results] == [True, True, True], [r["errors"] for r in results]
    assert missing["validated"] is False
    assert f"TENSION 1: CTX:{external['specs'] / 'nope.md'} does not exist" in missing["errors"]
    assert str(external["specs"]) in missing["guidance"]  # the fix names the allowed roots


def test_outside_the_allowed_roots_a_citation_gets_one_answer_whether_or_not_the_file_exists(
    make_ledger: LedgerFactory, tmp_path: Path, project: Path, external: dict[str, Path]
) -> None:
    specs, outside = external["specs"], external["outside"]
    ledger = make_ledger(project_roots=[str(tmp_path / "projects")], external_context=[str(specs)])
    sid = ledger.clock_in(DEV, "dev", str(project)).session_id
    pairs = [  # (exists, does not exist): each pair must get the same answer, but for the path it names
        (str(outside / "exists.md"), str(outside / "missing.md")),
        (str(specs / "escape"), str(specs / "dangling")),
        (f"{specs}/../../private/exists.md", f"{specs}/../../private/missing.md"),
        (str(tmp_path / "shared" / "specs-evil" / "x.md"), str(tmp_path / "shared" / "specs-evil" / "y.md")),
        (str(external["doc"]), str(tmp_path / "shared" / "ADR-9999.md")),  # a document not on the list
    ]
    for exists, missing in pairs:
        answers = []
        for path in (exists, missing):
            result = ledger.anchor(DEV, sid, "dev", citing(path))
            [error] = [e for e in result.errors if e.startswith("TENSION 1:")]
            answers.append(error.replace(path, "<path>"))
            if result.enforcement.locked:
                ledger.unlock_anchor(Actor("operator", "cli", admin=True), sid, "testing the oracle")
        assert (
            answers[0]
            == answers[1]
            == ("TENSION 1: CTX:<path> is outside the session's working directory and the allowed external context")
        )


def test_external_context_must_be_absolute_paths() -> None:
    with pytest.raises(ValidationError, match="is not an absolute path"):
        Settings(external_context=["specs"])
    assert Settings(external_context=["/srv/specs"]).external_context == ["/srv/specs"]


def test_rest_validates_a_proof_citing_external_context(
    make_ledger: LedgerFactory, tmp_path: Path, project: Path, external: dict[str, Path]
) -> None:
    ledger = make_ledger(project_roots=[str(tmp_path / "projects")], external_context=[str(external["specs"])])
    sid = ledger.clock_in(Actor("local", "rest"), "dev", str(project)).session_id
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        body = {"session_id": sid, "role": "dev", "proof_candidate": citing(str(external["specs"] / "design.md"))}
        inside = http.post("/anchors", json=body).json()
        body["proof_candidate"] = citing(str(external["outside"] / "exists.md"))
        outside = http.post("/anchors", json=body).json()
    assert inside["validated"] is True, inside["errors"]
    assert outside["validated"] is False
    assert any(
        "is outside the session's working directory and the allowed external context" in e for e in outside["errors"]
    )


# --- retries_left after a success -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_after_a_successful_proof_retries_left_equals_max_retries(
    make_ledger: LedgerFactory, db_url: str, tmp_path: Path, project: Path
) -> None:
    ledger = make_ledger(db_url, project_roots=[str(tmp_path / "projects")])
    bad = proof(artifact="my response")
    async with Client(build_mcp(ledger, agent="dev-1")) as client:
        sid = (await call(client, "clock_in", {"role": "dev", "working_dir": str(project)}))["session_id"]

        async def attempt(text: str) -> dict[str, Any]:
            result = await call(client, "odyssean_anchor", {"session_id": sid, "role": "dev", "proof_candidate": text})
            return dict(result["enforcement"])

        first_try = await attempt(proof())
        after_failures = [await attempt(bad), await attempt(bad), await attempt(proof())]
        next_failure = await attempt(bad)
    assert first_try == {"attempt": 1, "max_retries": 2, "retries_left": 2, "locked": False}
    assert [e["retries_left"] for e in after_failures] == [2, 1, 2]
    assert after_failures[-1] == {"attempt": 3, "max_retries": 2, "retries_left": 2, "locked": False}
    assert next_failure == {"attempt": 1, "max_retries": 2, "retries_left": 2, "locked": False}


def test_over_rest_a_success_reports_retries_left_equal_to_max_retries(
    make_ledger: LedgerFactory, tmp_path: Path, project: Path
) -> None:
    ledger = make_ledger(project_roots=[str(tmp_path / "projects")])
    sid = ledger.clock_in(Actor("local", "rest"), "dev", str(project)).session_id
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http:
        result = http.post("/anchors", json={"session_id": sid, "role": "dev", "proof_candidate": proof()}).json()
    assert result["validated"] is True
    assert result["enforcement"]["retries_left"] == result["enforcement"]["max_retries"] == 2


def test_the_cli_asks_for_a_challenge_and_validates_a_proof_answering_it(
    make_ledger: LedgerFactory, tmp_path: Path, project: Path
) -> None:
    from typer.testing import CliRunner

    from api.cli import app

    ledger = make_ledger(project_roots=[str(tmp_path / "projects")])
    sid = ledger.clock_in(DEV, "dev", str(project)).session_id
    base = ["--home", str(tmp_path), "--db", str(ledger.store.engine.url)]
    env = {"LEDGER_PROJECT_ROOTS": json.dumps([str(tmp_path / "projects")])}
    asked = CliRunner().invoke(
        app, [*base, "anchor", "challenge", "--session", sid, "--agent", "dev-1", "--json"], env=env
    )
    issued = json.loads(asked.stdout)
    proof_file = tmp_path / "proof.oct"
    proof_file.write_text(answered(proof(), issued["challenge_id"], line_of(project, issued)))
    done = CliRunner().invoke(
        app, [*base, "anchor", "validate", str(proof_file), "--session", sid, "--agent", "dev-1", "--json"], env=env
    )
    assert asked.exit_code == 0 and issued["session_id"] == sid
    assert done.exit_code == 0, done.stdout
    assert json.loads(done.stdout)["challenge"]["challenge_id"] == issued["challenge_id"]
    again = CliRunner().invoke(app, [*base, "anchor", "challenge", "--session", sid, "--agent", "dev-1"], env=env)
    assert again.exit_code == 0 and "CHALLENGE::ach_" in again.stdout and "quote line" in again.stdout
