"""The Odyssean Anchor proof validator (seed 001): every SUCCESS_CRITERIA rule and GUIDANCE_EXAMPLE, with fakes."""

from __future__ import annotations

import pytest

from ledger.anchor import proof as anchor
from ledger.anchor.proof import (
    AnchorValidation,
    AuthoritativeContext,
    artifact_is_concrete,
    proof_template,
    validate_proof,
)

CTX = AuthoritativeContext(working_dir="/work/app", branch="main", phase="B1", files=3)
ROLE = "implementation-lead"
T1 = "L12::[no direct DB writes]⇌CTX:src/app.py[uses repository layer]→TRIGGER[route writes via repo]"
T2 = "L3::[tests first]<->CTX:tests/test_app.py[covers happy path]->TRIGGER[add failing test]"
T3 = "L7::[typed errors]⇌CTX:src/errors.py[one class per failure]→TRIGGER[raise NotFound]"


def proof(
    *,
    role: str | None = ROLE,
    cognition: str | None = "LOGOS",
    authority: str | None = "RESPONSIBLE[build_phase_execution]",
    phase: str | None = "B1",
    branch: str | None = "main",
    files: str | None = "3",
    tensions: tuple[str, ...] = (T1, T2),
    artifact: str | None = "src/app.py",
    gate: str | None = "pytest tests/test_app.py",
    extra: tuple[str, ...] = (),
) -> str:
    """The seed's example proof; a field set to None leaves its line out."""

    def field(key: str, value: str | None, indent: str) -> list[str]:
        return [] if value is None else [f"{indent}{key}::{value}"]

    return "\n".join(
        [
            anchor.START_MARKER,
            "IDENTITY:",
            *field("ROLE", role, "  "),
            *field("COGNITION", cognition, "  "),
            *field("AUTHORITY", authority, "  "),
            "CONTEXT:",
            *field("PHASE", phase, "  "),
            *field("BRANCH", branch, "  "),
            *field("FILES", files, "  "),
            "PROOF:",
            "  TENSIONS:",
            *[f"    {t}" for t in tensions],
            "  COMMIT:",
            *field("ARTIFACT", artifact, "    "),
            *field("GATE", gate, "    "),
            *extra,
            anchor.END_MARKER,
        ]
    )


class Citations:
    """A fake citation checker: records every call, rejects the paths it is told to."""

    def __init__(self, bad: dict[str, str] | None = None) -> None:
        self.calls: list[tuple[str, int]] = []
        self.bad = bad or {}

    def __call__(self, path: str, line: int) -> str | None:
        self.calls.append((path, line))
        return self.bad.get(path)


def validate(
    text: str,
    *,
    role: str = ROLE,
    session_role: str = ROLE,
    tier: str = "default",
    context: AuthoritativeContext = CTX,
    citations: Citations | None = None,
    parents: frozenset[str] = frozenset({"parent_abc123"}),
) -> AnchorValidation:
    return validate_proof(
        text,
        role=role,
        session_role=session_role,
        tier=tier,
        context=context,
        check_citation=citations or Citations(),
        parent_exists=lambda session_id: session_id in parents,
    )


def rejected(result: AnchorValidation, *fragments: str) -> None:
    """The proof failed, and every fragment appears in one of its errors."""
    assert not result.validated
    assert result.errors
    for fragment in fragments:
        assert any(fragment in e for e in result.errors), (fragment, result.errors)


# --- the interface --------------------------------------------------------------------------------------------


def test_the_constants_are_the_seeds() -> None:
    assert anchor.TIERS == {"quick": 1, "default": 2, "deep": 3}
    assert anchor.MAX_RETRIES == 2
    assert anchor.START_MARKER == "===ODYSSEAN_ANCHOR_PROOF::v5.0==="
    assert anchor.END_MARKER == "===END_ODYSSEAN_ANCHOR_PROOF==="
    assert anchor.MAX_PROOF_CHARS == 20_000


def test_the_seeds_example_proof_is_validated_with_no_errors_and_no_guidance() -> None:
    result = validate(proof())
    assert result.validated is True
    assert (result.errors, result.warnings, result.guidance) == ([], [], "")
    assert result.authority == "RESPONSIBLE[build_phase_execution]"
    assert result.template.startswith(anchor.START_MARKER)


def test_the_canonical_proof_normalises_ascii_operators_to_unicode() -> None:
    canonical = validate(proof()).canonical_proof
    assert canonical == "\n".join(
        [
            "===ODYSSEAN_ANCHOR_PROOF::v5.0===",
            "IDENTITY:",
            "  ROLE::implementation-lead",
            "  COGNITION::LOGOS",
            "  AUTHORITY::RESPONSIBLE[build_phase_execution]",
            "CONTEXT:",
            "  PHASE::B1",
            "  BRANCH::main",
            "  FILES::3",
            "PROOF:",
            "  TENSIONS:",
            "    L12::[no direct DB writes]⇌CTX:src/app.py[uses repository layer]→TRIGGER[route writes via repo]",
            "    L3::[tests first]⇌CTX:tests/test_app.py[covers happy path]→TRIGGER[add failing test]",
            "  COMMIT:",
            "    ARTIFACT::src/app.py",
            "    GATE::pytest tests/test_app.py",
            "===END_ODYSSEAN_ANCHOR_PROOF===",
        ]
    )
    assert "<->" not in canonical and "->" not in canonical


def test_the_canonical_proof_is_a_fixed_point() -> None:
    canonical = validate(proof()).canonical_proof
    again = validate(canonical)
    assert again.validated and again.canonical_proof == canonical


# --- markers and sections ("Rejects proofs with missing sections") --------------------------------------------


def test_a_proof_without_the_start_marker_is_rejected() -> None:
    result = validate(proof().replace(anchor.START_MARKER + "\n", ""))
    rejected(result, "START marker is missing")
    assert result.canonical_proof == ""


def test_a_proof_without_the_end_marker_is_rejected() -> None:
    result = validate(proof().replace(anchor.END_MARKER, ""))
    rejected(result, "END marker is missing")
    assert result.canonical_proof == ""


def test_markers_out_of_order_are_rejected() -> None:
    body = proof().replace(anchor.START_MARKER, "").replace(anchor.END_MARKER, "")
    rejected(validate(f"{anchor.END_MARKER}\n{body}\n{anchor.START_MARKER}"), "END marker comes before the START")


def test_an_oa4_or_other_version_marker_is_named() -> None:
    result = validate(proof().replace("::v5.0===", "::v4.0==="))
    rejected(result, "START marker is for version v4.0, not v5.0")


def test_text_around_the_markers_is_ignored() -> None:
    assert validate(f"Here is my proof:\n```\n{proof()}\n```\nThanks.").validated


@pytest.mark.parametrize("section", ["IDENTITY", "CONTEXT", "PROOF"])
def test_a_proof_missing_a_top_level_section_is_rejected(section: str) -> None:
    lines = proof().splitlines()
    start = lines.index(f"{section}:")
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")), len(lines))
    result = validate("\n".join(lines[:start] + lines[end:]))
    rejected(result, f"the {section} section is missing")
    assert result.canonical_proof == ""
    assert f"Add the {section}: section" in result.guidance


@pytest.mark.parametrize("section", ["TENSIONS", "COMMIT"])
def test_a_proof_section_missing_tensions_or_commit_is_rejected(section: str) -> None:
    text = proof(tensions=()) if section == "TENSIONS" else proof(artifact=None, gate=None)
    result = validate(text.replace(f"  {section}:\n", ""))
    rejected(result, f"PROOF has no {section}")
    assert result.canonical_proof == ""


def test_an_unknown_top_level_section_is_rejected() -> None:
    text = proof().replace("PROOF:\n", "NOTES:\n  anything at all\nPROOF:\n")
    result = validate(text)
    rejected(result, "unknown top-level section NOTES")
    assert not any("anything at all" in e for e in result.errors)  # its content is not reported line by line


def test_a_deprecated_oa4_header_is_an_unknown_section() -> None:
    rejected(validate(proof().replace("IDENTITY:", "BIND:")), "unknown top-level section BIND")


def test_a_section_twice_is_rejected() -> None:
    rejected(validate(proof(extra=("CONTEXT:", "  PHASE::B1"))), "the CONTEXT section appears twice")


def test_tensions_outside_proof_are_rejected() -> None:
    text = proof().replace("CONTEXT:\n", "TENSIONS:\n  " + T3 + "\nCONTEXT:\n")
    rejected(validate(text), "TENSIONS appears outside PROOF")


def test_a_proof_line_outside_tensions_and_commit_is_rejected() -> None:
    rejected(validate(proof().replace("PROOF:\n", "PROOF:\n  stray words\n")), "PROOF has a line outside TENSIONS")


def test_an_unrecognised_line_in_a_section_is_rejected() -> None:
    result = validate(proof().replace("  COGNITION::LOGOS\n", "  COGNITION::LOGOS\n  MOOD::sunny\n"))
    rejected(result, "IDENTITY has an unrecognised line 'MOOD::sunny'")


def test_a_field_twice_is_rejected() -> None:
    rejected(validate(proof().replace("  FILES::3\n", "  FILES::3\n  FILES::4\n")), "CONTEXT lists FILES twice")


def test_whitespace_indentation_colons_comments_and_line_endings_are_free() -> None:
    text = "\r\n".join(
        "    " + line.replace("IDENTITY:", "IDENTITY::").replace("ROLE::", "ROLE ::  ")
        for line in proof().replace("CONTEXT:\n", "// the context\n\nCONTEXT:\n").splitlines()
    )
    result = validate(text)
    assert result.validated, result.errors
    assert result.canonical_proof == validate(proof()).canonical_proof


def test_unindented_fields_and_subsections_are_accepted() -> None:
    flat = "\n".join(line.strip() for line in proof().splitlines())
    assert validate(flat).validated


def test_quoted_values_are_unquoted() -> None:
    assert validate(proof(role=f'"{ROLE}"', phase="'B1'", artifact="`src/app.py`")).validated


# --- IDENTITY -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("missing", ["role", "cognition", "authority"])
def test_an_identity_field_missing_is_rejected(missing: str) -> None:
    result = validate(proof(**{missing: None}))  # type: ignore[arg-type]
    rejected(result, f"IDENTITY has no {missing.upper()}")


def test_an_empty_identity_field_counts_as_missing() -> None:
    rejected(validate(proof(cognition="")), "IDENTITY has no COGNITION")


def test_the_role_must_be_the_requested_role() -> None:
    result = validate(proof(role="reviewer"))
    rejected(result, "IDENTITY shows ROLE::reviewer but the anchor is for role implementation-lead")
    assert "Set ROLE::implementation-lead under IDENTITY." in result.guidance


def test_the_role_must_be_the_sessions_role() -> None:
    result = validate(proof(role="reviewer"), role="reviewer", session_role=ROLE)
    rejected(result, "role 'reviewer' does not match this session's role 'implementation-lead'")


def test_a_role_matching_neither_names_both() -> None:
    result = validate(proof(role="tester"), role="reviewer", session_role=ROLE)
    rejected(result, "this session's role 'implementation-lead'", "IDENTITY shows ROLE::tester")


@pytest.mark.parametrize(
    "authority",
    [
        "RESPONSIBLE[system_coherence_orchestration]",
        "DELEGATED[parent_abc123::review_task]",
        "DELEGATED[parent_abc123]",
    ],
)
def test_the_seeds_authority_forms_are_accepted(authority: str) -> None:
    result = validate(proof(authority=authority))
    assert result.validated, result.errors
    assert result.authority == authority


@pytest.mark.parametrize(
    "authority", ["RESPONSIBLE", "RESPONSIBLE[]", "RESPONSIBLE[  ]", "OWNER[everything]", "responsible[x]", "DELEGATED"]
)
def test_an_authority_without_a_scope_in_brackets_is_rejected(authority: str) -> None:
    rejected(validate(proof(authority=authority)), "AUTHORITY::")


def test_a_delegated_authority_must_name_a_parent_session_the_ledger_knows() -> None:
    asked: list[str] = []

    def parents(session_id: str) -> bool:
        asked.append(session_id)
        return False

    result = validate_proof(
        proof(authority="DELEGATED[s-404::review_task]"),
        role=ROLE,
        session_role=ROLE,
        tier="default",
        context=CTX,
        check_citation=Citations(),
        parent_exists=parents,
    )
    rejected(result, "parent session 's-404', which the ledger does not know")
    assert asked == ["s-404"]
    assert result.authority == "DELEGATED[s-404::review_task]"


def test_a_delegated_authority_with_no_parent_before_the_task_is_rejected() -> None:
    rejected(validate(proof(authority="DELEGATED[::review_task]")), "names no parent session")


# --- CONTEXT ("Detects CONTEXT hallucination vs git reality") -------------------------------------------------


def test_a_phase_that_differs_from_project_context_is_rejected_with_the_seeds_guidance() -> None:
    result = validate(proof(phase="B2"))
    rejected(result, "CONTEXT shows PHASE::B2 but PROJECT-CONTEXT.oct.md shows B1")
    assert (
        "CONTEXT shows PHASE::B2 but PROJECT-CONTEXT.oct.md shows B1. Update PHASE to match context." in result.guidance
    )
    assert "PHASE::B1" in result.canonical_proof and "PHASE::B2" not in result.canonical_proof


def test_a_branch_that_differs_from_git_is_rejected() -> None:
    result = validate(proof(branch="feature/x"))
    rejected(result, "CONTEXT shows BRANCH::feature/x but git shows main")
    assert "CONTEXT shows BRANCH::feature/x but git shows main. Update BRANCH to match git." in result.guidance


def test_files_that_is_not_a_whole_number_is_rejected() -> None:
    for files in ("three", "-1", "3.5", "9" * 30):
        rejected(validate(proof(files=files)), "which is not a whole number")


def test_a_grossly_wrong_files_count_is_an_error_with_the_real_count_to_send() -> None:
    result = validate(proof(files="40"))
    rejected(result, "CONTEXT shows FILES::40 but git status shows 3 files: that is not a miscount")
    assert "Set FILES::3 (the git status file count)." in result.guidance


def test_a_moderately_wrong_files_count_is_a_warning_not_an_error() -> None:
    context = AuthoritativeContext(working_dir="/w", branch="main", phase="B1", files=12)
    result = validate(proof(files="19"), context=context)
    assert result.validated and result.errors == []
    assert result.warnings == ["CONTEXT shows FILES::19 but git status shows 12 files; the canonical proof uses 12"]
    assert "FILES::12" in result.canonical_proof and "FILES::19" not in result.canonical_proof


# (git status count, FILES:: claimed, outcome): gross = more than 2x off either way AND more than 5 apart;
# otherwise a difference of more than max(5, half the real count) warns, and a smaller one passes silently.
FILES_CASES = [
    (3, "8", "ok"),
    (3, "9", "fail"),
    (0, "5", "ok"),
    (0, "6", "fail"),
    (10, "5", "ok"),
    (10, "4", "fail"),
    (12, "6", "ok"),
    (12, "5", "fail"),
    (12, "19", "warn"),
    (100, "150", "ok"),
    (100, "151", "warn"),
    (100, "200", "warn"),
    (100, "201", "fail"),
    (100, "50", "ok"),
    (100, "49", "fail"),
]


@pytest.mark.parametrize(("authoritative", "claimed", "outcome"), FILES_CASES)
def test_files_fails_when_grossly_off_and_warns_when_moderately_off(
    authoritative: int, claimed: str, outcome: str
) -> None:
    context = AuthoritativeContext(working_dir="/w", branch="main", phase="B1", files=authoritative)
    result = validate(proof(files=claimed), context=context)
    assert result.validated is (outcome != "fail"), result.errors
    assert any("FILES" in e for e in result.errors) is (outcome == "fail")
    assert bool(result.warnings) is (outcome == "warn")


def test_the_canonical_proof_carries_the_authoritative_context_never_the_candidates() -> None:
    context = AuthoritativeContext(working_dir="/w", branch="main", phase="B1", files=5)
    result = validate(proof(phase="b1", files="7"), context=context)
    assert result.validated
    assert "  PHASE::B1\n  BRANCH::main\n  FILES::5\n" in result.canonical_proof


def test_an_unknown_authoritative_phase_or_branch_gives_a_warning_not_an_error() -> None:
    context = AuthoritativeContext(working_dir="/w", branch=None, phase=None, files=3)
    result = validate(proof(phase="B7", branch="dev"), context=context)
    assert result.validated and result.errors == []
    assert any("PHASE::B7 cannot be checked" in w for w in result.warnings)
    assert any("BRANCH::dev cannot be checked" in w for w in result.warnings)
    assert "PHASE::UNKNOWN" in result.canonical_proof and "BRANCH::UNKNOWN" in result.canonical_proof


@pytest.mark.parametrize(("field", "fix"), [("phase", "Add PHASE::B1"), ("branch", "Add BRANCH::main")])
def test_a_missing_phase_or_branch_says_what_to_add(field: str, fix: str) -> None:
    result = validate(proof(**{field: None}))  # type: ignore[arg-type]
    rejected(result, f"CONTEXT has no {field.upper()}")
    assert fix in result.guidance


def test_a_missing_files_line_says_what_to_add() -> None:
    result = validate(proof(files=None))
    rejected(result, "CONTEXT has no FILES")
    assert "Add FILES::3 under CONTEXT" in result.guidance


# --- TENSIONS ("Rejects tensions without CTX citations") ------------------------------------------------------


@pytest.mark.parametrize(
    ("tier", "tensions", "guidance"),
    [
        ("default", (T1,), "TIER_DEFAULT requires 2 tensions, found 1. Add another tension."),
        ("deep", (T1, T2), "TIER_DEEP requires 3 tensions, found 2. Add another tension."),
        ("quick", (), "TIER_QUICK requires 1 tension, found 0. Add another tension."),
        ("default", (), "TIER_DEFAULT requires 2 tensions, found 0. Add 2 more tensions."),
    ],
)
def test_too_few_tensions_for_the_tier_are_rejected_with_the_seeds_guidance(
    tier: str, tensions: tuple[str, ...], guidance: str
) -> None:
    result = validate(proof(tensions=tensions), tier=tier)
    rejected(result, guidance.split(". ")[0])
    assert guidance in result.guidance


@pytest.mark.parametrize(("tier", "tensions"), [("quick", (T1,)), ("default", (T1, T2)), ("deep", (T1, T2, T3))])
def test_each_tier_accepts_its_minimum(tier: str, tensions: tuple[str, ...]) -> None:
    assert validate(proof(tensions=tensions), tier=tier).validated


def test_an_unknown_tier_is_rejected_naming_the_valid_tiers() -> None:
    result = validate(proof(), tier="extreme")
    rejected(result, "tier 'extreme' is not known")
    assert "quick, default, deep" in result.guidance


def test_a_tension_without_a_ctx_citation_gets_the_seeds_guidance() -> None:
    result = validate(proof(tensions=("L315::[keep the API stable]→TRIGGER[add a test]", T2)))
    rejected(result, "TENSION 1 has L315 but no CTX citation")
    assert (
        "TENSION 1 has L315 but no CTX citation. Add CTX:{path}[{state}] to prove context awareness." in result.guidance
    )


def test_tensions_are_numbered_from_one_in_their_order() -> None:
    result = validate(proof(tensions=(T1, "L9::[a constraint]⇌[some state]→TRIGGER[act]")))
    rejected(result, "TENSION 2 has L9 but no CTX citation")


def test_ctx_inside_a_bracket_is_not_a_citation() -> None:
    rejected(validate(proof(tensions=(T1, "L9::[see CTX:src/app.py]→TRIGGER[act]"))), "TENSION 2 has L9 but no CTX")


def test_a_tension_without_a_line_citation_is_rejected() -> None:
    result = validate(proof(tensions=(T1, "[tests first]⇌CTX:tests/test_app.py[covers]→TRIGGER[add]")))
    rejected(result, "TENSION 2 has no L{N} line citation")


def test_a_tension_with_neither_citation_names_both() -> None:
    rejected(validate(proof(tensions=(T1, "[tests first]→TRIGGER[add]"))), "no L{N}", "TENSION 2 has no CTX citation")


def test_line_zero_is_rejected() -> None:
    rejected(validate(proof(tensions=(T1, T2.replace("L3::", "L0::")))), "TENSION 2 cites L0")


@pytest.mark.parametrize(
    "tension",
    [
        "L3::[tests first]⇌CTX:tests/test_app.py[covers happy path]",
        "L3::tests first⇌CTX:tests/test_app.py[covers]→TRIGGER[add]",
        "L3::[tests first]⇌CTX:tests/test_app.py→TRIGGER[add]",
        "L3::[tests first]⇌CTX:[covers]→TRIGGER[add]",
        "L3::[]⇌CTX:tests/test_app.py[covers]→TRIGGER[add]",
        "L3::[tests first]→CTX:tests/test_app.py[covers]⇌TRIGGER[add]",
        "L3::[tests [first]⇌CTX:tests/test_app.py[covers]→TRIGGER[add]",
        "L3::[tests first]⇌CTX:tests/test_app.py[covers]→TRIGGER[]",
    ],
)
def test_a_malformed_tension_is_rejected(tension: str) -> None:
    rejected(validate(proof(tensions=(T1, tension))), "TENSION 2 is malformed")


def test_nested_brackets_and_bullets_are_accepted() -> None:
    tension = "- L4::[return list[str]]⇌CTX:src/app.py[def names() -> list[str]]→TRIGGER[keep the type]"
    result = validate(proof(tensions=(T1, tension)))
    assert result.validated, result.errors
    assert "L4::[return list[str]]⇌CTX:src/app.py[def names() -> list[str]]→TRIGGER[keep the type]" in (
        result.canonical_proof
    )


def test_every_citation_is_checked_with_its_path_and_line() -> None:
    citations = Citations()
    assert validate(proof(tensions=(T1, T2, T3)), citations=citations).validated
    assert citations.calls == [("src/app.py", 12), ("tests/test_app.py", 3), ("src/errors.py", 7)]


def test_a_failed_citation_is_an_error_for_that_tension_in_the_checkers_words() -> None:
    citations = Citations(bad={"tests/test_app.py": "CTX:tests/test_app.py does not exist in /work/app"})
    result = validate(proof(), citations=citations)
    assert result.errors == ["TENSION 2: CTX:tests/test_app.py does not exist in /work/app"]


@pytest.mark.parametrize("word", ["TODO", "tbd", "FixMe", "PLACEHOLDER", "example"])
def test_placeholder_content_in_a_tension_is_rejected(word: str) -> None:
    result = validate(proof(tensions=(T1, T2.replace("add failing test", f"{word} later"))))
    rejected(result, f"TENSION 2 contains placeholder content '{word}'")


@pytest.mark.parametrize("word", ["TODO", "TBD", "fixme", "Placeholder", "EXAMPLE"])
def test_placeholder_content_in_the_commit_is_rejected(word: str) -> None:
    rejected(validate(proof(gate=f"pytest {word}")), "COMMIT GATE contains placeholder")
    rejected(validate(proof(artifact=f"tool:{word}")), "COMMIT ARTIFACT contains placeholder")


def test_placeholder_words_count_only_as_whole_words() -> None:
    tension = "L5::[follow the examples]⇌CTX:docs/example.md[todos are tracked]→TRIGGER[read the todolist]"
    assert validate(proof(tensions=(T1, tension))).validated


@pytest.mark.parametrize(
    "tension",
    [
        "L3::[constraint]⇌CTX:tests/test_app.py[covers]→TRIGGER[add]",
        "L3::[tests first]⇌CTX:tests/test_app.py[...]→TRIGGER[add]",
        "L3::[tests first]⇌CTX:{path}[covers]→TRIGGER[add]",
        "L3::[{constraint}]⇌CTX:tests/test_app.py[covers]→TRIGGER[add]",
    ],
)
def test_unfilled_template_slots_are_placeholders(tension: str) -> None:
    rejected(validate(proof(tensions=(T1, tension))), "TENSION 2 contains placeholder content")


def test_a_repeated_tension_is_rejected() -> None:
    rejected(validate(proof(tensions=(T1, T1))), "TENSION 2 repeats TENSION 1")


def test_an_ascii_and_a_unicode_copy_of_one_tension_are_a_repeat() -> None:
    ascii_t1 = T1.replace("⇌", "<->").replace("→", "->")
    rejected(validate(proof(tensions=(T1, ascii_t1))), "TENSION 2 repeats TENSION 1")


def test_too_many_tensions_are_rejected_and_only_the_first_are_checked() -> None:
    citations = Citations()
    many = tuple(T1.replace("L12::", f"L{n}::") for n in range(1, anchor.MAX_TENSIONS + 6))
    rejected(validate(proof(tensions=many), citations=citations), f"at most {anchor.MAX_TENSIONS} are allowed")
    assert len(citations.calls) == anchor.MAX_TENSIONS


# --- COMMIT ("Rejects abstract COMMIT artifacts") --------------------------------------------------------------

ABSTRACT = [
    "response",
    "my response",
    "thoughts",
    "output",
    "answer",
    "the response",
    "analysis",
    "my thoughts",
    "reply",
    "text",
    "My Response",
    "final output",
    "n/a",
]


@pytest.mark.parametrize("artifact", ABSTRACT)
def test_an_abstract_artifact_is_rejected_with_the_seeds_guidance(artifact: str) -> None:
    result = validate(proof(artifact=artifact))
    rejected(result, f"COMMIT artifact '{artifact}' is not concrete")
    assert f"COMMIT artifact is '{artifact}'. Name a concrete file (e.g., src/main.py) or tool output." in (
        result.guidance
    )


@pytest.mark.parametrize("artifact", ['"my response"', "'Thoughts.'", "`the answer!`"])
def test_quotes_and_punctuation_do_not_make_an_artifact_concrete(artifact: str) -> None:
    assert not artifact_is_concrete(artifact)
    rejected(validate(proof(artifact=artifact)), "is not concrete")


def test_the_abstract_value_is_quoted_without_its_quotes() -> None:
    assert "COMMIT artifact is 'my response'." in validate(proof(artifact='"my response"')).guidance


@pytest.mark.parametrize(
    "artifact",
    [
        "src/app.py",
        "README.md",
        "docs/",
        "src\\win\\app.py",
        "https://github.com/o/r/pull/12",
        "pytest output",
        "ruff check output",
        "my pytest output",
        "mypy report",
        "git diff",
        "git commit abc1234",
        "tool:pytest",
        "tool: ruff",
    ],
)
def test_a_path_or_a_named_tool_output_is_concrete(artifact: str) -> None:
    assert artifact_is_concrete(artifact)
    assert validate(proof(artifact=artifact)).validated


@pytest.mark.parametrize("artifact", ["design notes", "git", "tool:", "the output of my work", "results"])
def test_anything_else_is_abstract(artifact: str) -> None:
    assert not artifact_is_concrete(artifact)


def test_a_missing_artifact_is_rejected() -> None:
    rejected(validate(proof(artifact=None)), "COMMIT has no ARTIFACT")
    rejected(validate(proof(artifact="")), "COMMIT has no ARTIFACT")


@pytest.mark.parametrize("gate", [None, "", "  ", "none", "N/A", "-"])
def test_a_missing_or_empty_gate_is_rejected(gate: str | None) -> None:
    rejected(validate(proof(gate=gate)), "COMMIT has no GATE")


# --- guidance and template ("Provides specific retry guidance") -------------------------------------------------


def test_guidance_lists_the_errors_then_the_specific_fixes_in_the_seeds_format() -> None:
    result = validate(proof(phase="B2", artifact="my response"))
    assert result.errors == [
        "CONTEXT shows PHASE::B2 but PROJECT-CONTEXT.oct.md shows B1",
        "COMMIT artifact 'my response' is not concrete",
    ]
    assert result.guidance == (
        "VALIDATION FAILED: [CONTEXT shows PHASE::B2 but PROJECT-CONTEXT.oct.md shows B1, "
        "COMMIT artifact 'my response' is not concrete]. "
        "RETRY: [CONTEXT shows PHASE::B2 but PROJECT-CONTEXT.oct.md shows B1. Update PHASE to match context., "
        "COMMIT artifact is 'my response'. Name a concrete file (e.g., src/main.py) or tool output.]"
    )
    assert result.template not in result.guidance


def test_all_four_guidance_examples_come_back_together() -> None:
    result = validate(
        proof(phase="B2", tensions=("L315::[keep the API stable]→TRIGGER[add a test]",), artifact="my response")
    )
    for example in [
        "CONTEXT shows PHASE::B2 but PROJECT-CONTEXT.oct.md shows B1. Update PHASE to match context.",
        "TENSION 1 has L315 but no CTX citation. Add CTX:{path}[{state}] to prove context awareness.",
        "COMMIT artifact is 'my response'. Name a concrete file (e.g., src/main.py) or tool output.",
        "TIER_DEFAULT requires 2 tensions, found 1. Add another tension.",
    ]:
        assert example in result.guidance


def test_the_template_carries_the_real_context_and_one_tension_per_tier_minimum() -> None:
    template = proof_template(role=ROLE, tier="deep", context=CTX)
    assert template.startswith(anchor.START_MARKER) and template.endswith(anchor.END_MARKER)
    assert "ROLE::implementation-lead" in template
    assert "  PHASE::B1\n  BRANCH::main\n  FILES::3\n" in template
    assert template.count("⇌CTX:{path}[{state}]→TRIGGER[{action}]") == 3


def test_the_template_sent_back_unfilled_fails() -> None:
    template = proof_template(role=ROLE, tier="default", context=CTX)
    result = validate(template)
    rejected(result, "placeholder", "no L{N} line citation")
    assert result.canonical_proof  # parseable, just not filled in


def test_the_template_is_set_on_every_result() -> None:
    for text in (proof(), "", "nonsense", "x" * (anchor.MAX_PROOF_CHARS + 1)):
        assert validate(text).template == proof_template(role=ROLE, tier="default", context=CTX)


# --- robustness -----------------------------------------------------------------------------------------------


def test_an_oversized_proof_gets_one_error() -> None:
    result = validate(proof() + " " * anchor.MAX_PROOF_CHARS)
    assert not result.validated
    assert result.errors == [f"the proof is {len(proof()) + anchor.MAX_PROOF_CHARS} characters; the limit is 20000"]
    assert result.canonical_proof == ""


@pytest.mark.parametrize("text", ["", " ", "\n\n", "\x00", anchor.START_MARKER, anchor.END_MARKER])
def test_degenerate_input_is_rejected_without_raising(text: str) -> None:
    rejected(validate(text))


def test_many_problems_are_capped_with_a_summary() -> None:
    junk = "\n".join(f"NOISE{i}:" for i in range(60))
    result = validate(proof().replace("PROOF:\n", junk + "\nPROOF:\n"))
    assert len(result.errors) == anchor.MAX_ERRORS
    assert result.errors[-1].startswith("... and ")
