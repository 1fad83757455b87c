"""The anchor validator never raises and never answers ambiguously, whatever text it is sent."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.anchor import proof as anchor
from ledger.anchor.proof import AnchorValidation, AuthoritativeContext, validate_proof
from tests.unit.test_anchor import CTX, ROLE, T1, T2, T3, proof

VALID = proof(tensions=(T1, T2, T3))
LINES = VALID.splitlines()
FAST = settings(max_examples=300, deadline=None)
SNIPPETS = [
    anchor.START_MARKER,
    anchor.END_MARKER,
    "IDENTITY:",
    "CONTEXT::",
    "PROOF:",
    "TENSIONS:",
    "COMMIT:",
    "ROLE::",
    "FILES::",
    "L1::",
    "CTX:",
    "TRIGGER",
    "⇌",
    "→",
    "<->",
    "->",
    "[",
    "]",
    "::",
    "\n",
    "\r",
    " ",
    "\t",
    "TODO",
    "{path}",
    "DELEGATED[",
    "\ufeff",
    "\x00",
]


def citation(path: str, line: int) -> str | None:
    return None if path.endswith(".py") and line < 1000 else f"CTX:{path} has no line {line}"


def check(text: str, tier: str = "default", context: AuthoritativeContext = CTX) -> AnchorValidation:
    result = validate_proof(
        text,
        role=ROLE,
        session_role=ROLE,
        tier=tier,
        context=context,
        check_citation=citation,
        parent_exists=lambda session_id: session_id.startswith("parent"),
    )
    assert isinstance(result, AnchorValidation)
    if result.validated:
        assert result.errors == [] and result.guidance == ""
        assert result.canonical_proof.startswith(anchor.START_MARKER)
        assert result.canonical_proof.endswith(anchor.END_MARKER)
    else:
        assert result.errors and all(isinstance(e, str) and e for e in result.errors)
        assert result.guidance.startswith("VALIDATION FAILED: [") and "]. RETRY: [" in result.guidance
    assert result.template.startswith(anchor.START_MARKER)
    assert len(result.errors) <= anchor.MAX_ERRORS
    return result


text_like = st.text(alphabet=st.one_of(st.characters(), st.sampled_from("[]:→⇌<->\n ")), max_size=400)
snippet_soup = st.lists(st.one_of(st.sampled_from(SNIPPETS), st.text(max_size=8)), max_size=60).map("".join)


@FAST
@given(st.one_of(text_like, snippet_soup))
def test_arbitrary_text_is_answered_unambiguously(text: str) -> None:
    check(text)


@FAST
@given(
    st.lists(st.sampled_from(LINES), max_size=40).map("\n".join),
    st.sampled_from([*sorted(anchor.TIERS), "", "bogus"]),
)
def test_lines_of_a_valid_proof_in_any_arrangement_are_answered_unambiguously(text: str, tier: str) -> None:
    check(text, tier)


def _mutate(lines: list[str], op: str, i: int, j: int, insert: str) -> list[str]:
    lines = list(lines)
    i, j = i % len(lines), j % len(lines)
    if op == "delete":
        del lines[i]
    elif op == "duplicate":
        lines.insert(j, lines[i])
    elif op == "swap":
        lines[i], lines[j] = lines[j], lines[i]
    else:
        at = j % (len(lines[i]) + 1)
        lines[i] = lines[i][:at] + insert + lines[i][at:]
    return lines or [""]


mutation = st.tuples(
    st.sampled_from(["delete", "duplicate", "swap", "insert"]),
    st.integers(min_value=0, max_value=10_000),
    st.integers(min_value=0, max_value=10_000),
    st.one_of(st.sampled_from(SNIPPETS), st.text(min_size=1, max_size=3)),
)


@FAST
@given(st.lists(mutation, min_size=1, max_size=6))
def test_mutated_valid_proofs_are_answered_unambiguously(mutations: list[tuple[str, int, int, str]]) -> None:
    lines = LINES
    for op, i, j, insert in mutations:
        lines = _mutate(lines, op, i, j, insert)
    check("\n".join(lines))


@FAST
@given(st.integers(min_value=0, max_value=10_000), st.sampled_from(["quick", "default", "deep"]))
def test_the_canonical_proof_always_carries_the_authoritative_context(files: int, tier: str) -> None:
    context = AuthoritativeContext(working_dir="/w", branch="main", phase="B1", files=files)
    result = check(VALID, tier, context)
    if anchor.files_grossly_off(3, files):  # VALID claims FILES::3: grossly off fails, with the real count to send
        assert not result.validated and any("FILES::3" in e for e in result.errors)
        assert f"  FILES::{files}\n" in result.template
        return
    assert result.validated
    assert f"  PHASE::B1\n  BRANCH::main\n  FILES::{files}\n" in result.canonical_proof
    assert check(result.canonical_proof, tier, context).canonical_proof == result.canonical_proof


@settings(max_examples=20, deadline=None)
@given(st.text(min_size=1, max_size=5))
def test_oversized_text_gets_exactly_one_error(filler: str) -> None:
    text = (filler * (anchor.MAX_PROOF_CHARS // len(filler) + 2))[: anchor.MAX_PROOF_CHARS + 1]
    result = check(text)
    assert len(result.errors) == 1 and result.canonical_proof == ""


def test_a_proof_just_under_the_limit_is_processed_quickly() -> None:
    # many brackets and operators on one line are the costliest shape for the tension parser
    heavy = "L1::" + "[⇌]→<->" * ((anchor.MAX_PROOF_CHARS - len(VALID)) // 8)
    text = VALID.replace(T3, heavy)
    assert len(text) <= anchor.MAX_PROOF_CHARS
    rejected = check(text)
    assert not rejected.validated
