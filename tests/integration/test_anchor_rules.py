"""Seed 001's SUCCESS_CRITERIA and GUIDANCE_EXAMPLES through the service, on a real git repository.

The rules are the anchor handlers' and decisions', not the store's: the service runs on the in-memory store
(``MEMORY``); the CLI's test opens the ledger's SQLite file from a command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from ledger.anchor.report import AnchorResult
from ledger.service import Actor, Ledger
from tests.anchor_support import git, proof
from tests.conftest import MEMORY, LedgerFactory

WHO = Actor("dev-1", "mcp")
GOOD_TENSION = "L1::[keep the API stable]⇌CTX:src/app.py[line 1 is the entry point]→TRIGGER[add a test first]"


@pytest.fixture
def ledger(make_ledger: LedgerFactory, tmp_path: Path) -> Ledger:
    return make_ledger(MEMORY, project_roots=[str(tmp_path / "projects")])


@pytest.fixture
def file_ledger(make_ledger: LedgerFactory, tmp_path: Path) -> Ledger:
    """On the SQLite file under ``--home``, which a command line opens too."""
    return make_ledger(project_roots=[str(tmp_path / "projects")])


def anchor(ledger: Ledger, project: Path, text: str, *, role: str = "dev", tier: str = "default") -> AnchorResult:
    sid = ledger.clock_in(WHO, "dev", str(project)).session_id
    return ledger.anchor(WHO, sid, role, text, tier)


def with_tension(text: str, replacement: str) -> str:
    return text.replace(GOOD_TENSION, replacement)


def test_a_proof_with_a_missing_section_is_rejected(ledger: Ledger, project: Path) -> None:
    text = proof().replace("CONTEXT:\n  PHASE::B1\n  BRANCH::main\n  FILES::1\n", "")
    result = anchor(ledger, project, text)
    assert not result.validated
    assert any("CONTEXT" in e for e in result.errors)


def test_an_unknown_top_level_section_is_rejected(ledger: Ledger, project: Path) -> None:
    text = proof().replace("PROOF:\n", "EXTRAS:\n  NOTE::hello\nPROOF:\n")
    result = anchor(ledger, project, text)
    assert not result.validated and any("EXTRAS" in e for e in result.errors)


def test_missing_markers_are_rejected(ledger: Ledger, project: Path) -> None:
    result = anchor(ledger, project, proof().replace("===END_ODYSSEAN_ANCHOR_PROOF===", ""))
    assert not result.validated and result.errors


def test_guidance_tension_without_ctx(ledger: Ledger, project: Path) -> None:
    text = with_tension(proof(), "L315::[keep the API stable]⇌the module[is stable]→TRIGGER[add a test]")
    result = anchor(ledger, project, text)
    assert not result.validated
    assert (
        "TENSION 1 has L315 but no CTX citation. Add CTX:{path}[{state}] to prove context awareness." in result.guidance
    )


def test_guidance_abstract_commit(ledger: Ledger, project: Path) -> None:
    result = anchor(ledger, project, proof(artifact="my response"))
    assert not result.validated
    assert "COMMIT artifact is 'my response'. Name a concrete file (e.g., src/main.py) or tool output." in (
        result.guidance
    )


@pytest.mark.parametrize("abstract", ["response", "thoughts", "output", "my response"])
def test_abstract_artifacts_are_rejected(ledger: Ledger, project: Path, abstract: str) -> None:
    assert not anchor(ledger, project, proof(artifact=abstract)).validated


def test_guidance_tension_count(ledger: Ledger, project: Path) -> None:
    result = anchor(ledger, project, proof(tensions=1))
    assert not result.validated
    assert "TIER_DEFAULT requires 2 tensions, found 1. Add another tension." in result.guidance
    assert anchor(ledger, project, proof(tensions=1), tier="quick").validated
    assert not anchor(ledger, project, proof(tensions=2), tier="deep").validated


def test_guidance_context_mismatch_detects_a_hallucinated_phase(ledger: Ledger, project: Path) -> None:
    result = anchor(ledger, project, proof(phase="B2"))
    assert not result.validated
    assert "CONTEXT shows PHASE::B2 but PROJECT-CONTEXT.oct.md shows B1. Update PHASE to match context." in (
        result.guidance
    )


def test_a_branch_that_is_not_gits_fails(ledger: Ledger, project: Path) -> None:
    git(project, "checkout", "-q", "-b", "feature/x")
    result = anchor(ledger, project, proof())
    assert not result.validated and any("BRANCH" in e for e in result.errors)
    assert "BRANCH::feature/x" in result.template and "PHASE::B1" in result.template


def test_a_grossly_wrong_files_count_fails_and_the_template_carries_the_real_count(
    ledger: Ledger, project: Path
) -> None:
    result = anchor(ledger, project, proof().replace("FILES::1", "FILES::40"))
    assert not result.validated
    assert any("FILES::40 but git status shows 1 files" in e for e in result.errors), result.errors
    assert "Set FILES::1" in result.guidance and "FILES::1" in result.template
    assert result.enforcement.attempt == 1  # a counted attempt, like any other failure


def test_a_moderately_wrong_files_count_warns_and_the_canonical_proof_uses_the_real_context(
    ledger: Ledger, project: Path
) -> None:
    for n in range(11):  # git status now shows 12 files: the modified src/app.py and 11 new ones
        (project / f"notes-{n}.txt").write_text("draft\n")
    result = anchor(ledger, project, proof().replace("FILES::1", "FILES::19"))
    assert result.validated, result.errors
    assert result.warnings and any("FILES::19 but git status shows 12" in w for w in result.warnings)
    assert "FILES::12" in result.canonical_proof and "FILES::19" not in result.canonical_proof


def test_failed_attempts_give_retry_guidance_and_a_template_of_the_real_context(ledger: Ledger, project: Path) -> None:
    result = anchor(ledger, project, proof(phase="B2", artifact="thoughts"))
    assert result.guidance.startswith("VALIDATION FAILED: [")
    assert ". RETRY: [" in result.guidance
    for expected in ("===ODYSSEAN_ANCHOR_PROOF::v5.0===", "PHASE::B1", "BRANCH::main", "FILES::1", "ROLE::dev"):
        assert expected in result.template


def test_ascii_operators_are_accepted_and_normalised(ledger: Ledger, project: Path) -> None:
    ascii_tension = "L1::[keep the API stable]<->CTX:src/app.py[line 1 is the entry point]->TRIGGER[add a test first]"
    result = anchor(ledger, project, with_tension(proof(), ascii_tension))
    assert result.validated, result.errors
    assert GOOD_TENSION in result.canonical_proof and "<->" not in result.canonical_proof


def test_a_cited_line_must_exist_in_the_file(ledger: Ledger, project: Path) -> None:
    text = with_tension(proof(), GOOD_TENSION.replace("L1::", "L999::"))
    result = anchor(ledger, project, text)
    assert not result.validated and any("L999" in e for e in result.errors)


def test_a_cited_path_must_exist_in_the_working_directory(ledger: Ledger, project: Path) -> None:
    result = anchor(ledger, project, with_tension(proof(), GOOD_TENSION.replace("src/app.py", "src/nope.py")))
    assert not result.validated and any("does not exist" in e for e in result.errors)


@pytest.mark.parametrize("word", ["TODO", "TBD", "FIXME", "PLACEHOLDER", "EXAMPLE"])
def test_placeholder_content_is_rejected(ledger: Ledger, project: Path, word: str) -> None:
    text = with_tension(proof(), GOOD_TENSION.replace("add a test first", f"{word} later"))
    assert not anchor(ledger, project, text).validated


def test_the_role_must_match_the_argument_and_the_session(ledger: Ledger, project: Path) -> None:
    assert not anchor(ledger, project, proof(role="qa")).validated
    assert not anchor(ledger, project, proof(role="qa"), role="qa").validated  # the session's role is dev


def test_a_delegated_authority_must_name_a_real_session(ledger: Ledger, project: Path) -> None:
    parent = ledger.clock_in(Actor("lead", "mcp"), "lead").session_id
    real = proof().replace("RESPONSIBLE[build_phase_execution]", f"DELEGATED[{parent}::review_task]")
    fake = proof().replace("RESPONSIBLE[build_phase_execution]", "DELEGATED[ses_00000000000000000000::review]")
    assert anchor(ledger, project, real).validated
    failed = anchor(ledger, project, fake)
    assert not failed.validated and any("ses_00000000000000000000" in e for e in failed.errors)


@pytest.mark.parametrize(
    ("existing", "missing"),
    [
        ("../../../../../../etc/passwd", "../../../../../../etc/no-such-file-here"),
        ("/etc/passwd", "/etc/no-such-file-here"),
        ("../app-sibling/secret.txt", "../app-sibling/missing.txt"),
        ("link-out/secret.txt", "link-out/missing.txt"),
    ],
)
def test_paths_escaping_the_working_directory_are_rejected_without_revealing_existence(
    ledger: Ledger, project: Path, existing: str, missing: str
) -> None:
    sibling = project.parent / "app-sibling"
    sibling.mkdir(exist_ok=True)
    (sibling / "secret.txt").write_text("secret\n")
    if not (project / "link-out").exists():
        (project / "link-out").symlink_to(sibling)
    results = [
        anchor(ledger, project, with_tension(proof(), GOOD_TENSION.replace("src/app.py", p)))
        for p in (existing, missing)
    ]
    assert not any(r.validated for r in results)
    messages = [[e.replace(p, "<path>") for e in r.errors] for r, p in zip(results, (existing, missing), strict=True)]
    assert messages[0] == messages[1]
    assert any("outside" in e for e in results[0].errors)


def test_the_cli_validates_a_proof_file_and_unlocks_a_locked_session(
    file_ledger: Ledger, project: Path, tmp_path: Path
) -> None:
    ledger = file_ledger
    import json

    from typer.testing import CliRunner

    from api.cli import app

    sid = ledger.clock_in(WHO, "dev", str(project)).session_id
    good, bad = tmp_path / "good.oct", tmp_path / "bad.oct"
    good.write_text(proof())
    bad.write_text(proof(phase="B7"))
    base = ["--home", str(tmp_path), "--db", str(ledger.store.engine.url)]
    env = {"LEDGER_PROJECT_ROOTS": json.dumps([str(tmp_path / "projects")])}

    def run(*args: str) -> tuple[int, str]:
        result = CliRunner().invoke(app, [*base, *args], env=env)
        return result.exit_code, result.stdout

    failures = [run("anchor", "validate", str(bad), "--session", sid, "--agent", "dev-1") for _ in range(3)]
    locked_code, locked_out = run("anchor", "validate", str(good), "--session", sid, "--agent", "dev-1", "--json")
    unlock_code, unlock_out = run("anchor", "unlock", sid, "--reason", "paired with the agent")
    good_code, good_out = run("anchor", "validate", str(good), "--session", sid, "--agent", "dev-1")
    foreign_code, _ = run("anchor", "validate", str(good), "--session", sid, "--agent", "mallory")
    assert [code for code, _ in failures] == [1, 1, 1]
    assert "PHASE::B7" in failures[0][1] and "LOCKED" in failures[2][1]
    assert locked_code == 1 and json.loads(locked_out)["enforcement"]["locked"] is True
    assert unlock_code == 0 and "unlocked" in unlock_out
    assert good_code == 0 and "VALIDATED" in good_out
    assert foreign_code == 1


@pytest.mark.parametrize(
    ("kwargs", "text"),
    [
        ({"proof_candidate": "x" * 20_001}, "the limit is 20000"),
        ({"proof_candidate": "  "}, "proof_candidate is empty"),
        ({"tier": "extreme"}, "tier 'extreme' is not known"),
        ({"role": "not a role!"}, "is not valid"),
        ({"proof_candidate": "bad \ud800"}, "lone surrogate"),
    ],
)
def test_bad_anchor_input_is_refused_without_counting_an_attempt(
    ledger: Ledger, project: Path, kwargs: dict[str, str], text: str
) -> None:
    from ledger.core.errors import InvalidInput

    sid = ledger.clock_in(WHO, "dev", str(project)).session_id
    head = ledger.store.head()
    args = {"role": "dev", "proof_candidate": proof(), "tier": "default", **kwargs}
    with pytest.raises(InvalidInput) as caught:
        ledger.anchor(WHO, sid, args["role"], args["proof_candidate"], args["tier"])
    assert text in caught.value.message and caught.value.hint
    assert ledger.store.head() == head


def test_a_session_without_a_working_directory_cannot_anchor(ledger: Ledger) -> None:
    from ledger.core.errors import InvalidInput

    sid = ledger.clock_in(WHO, "dev").session_id
    with pytest.raises(InvalidInput) as caught:
        ledger.anchor(WHO, sid, "dev", proof())
    assert "working_dir" in caught.value.hint
