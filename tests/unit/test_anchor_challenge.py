"""The anchor challenge's pure parts: reading an answer out of a proof, the digest, the fold, the decisions that
refuse an answer, and ``retries_left`` as the server counts it."""

from __future__ import annotations

import datetime as _dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.anchor import challenge as ch
from ledger.anchor import decisions as anchoring
from ledger.core.errors import Conflict, InvalidInput
from ledger.core.events import AnchorAttempted, AnchorChallengeIssued, AnchorLocked, RecordedEvent, SessionStarted
from projections import codec
from projections.sessions import SessionView, fold
from tests.anchor_support import proof

T0 = _dt.datetime(2026, 1, 5, 9, 0, tzinfo=_dt.UTC)
A, B = "ach_" + "A" * 22, "ach_" + "B" * 22
SECRET = b"k" * 32


def with_answer(line: str) -> str:
    return proof().replace("  FILES::1\n", f"  FILES::1\n{line}\n", 1)


def rec(position: int, event: object) -> RecordedEvent:
    return RecordedEvent(position, "session:s1", position, T0, {"agent": "dev-1"}, event, "0" * 64)  # type: ignore[arg-type]


def session(*events: object) -> SessionView:
    started = SessionStarted(session_id="s1", agent="dev-1", role="dev", working_dir="/p")
    view = fold([rec(n, e) for n, e in enumerate([started, *events], start=1)])
    assert view is not None
    return view


def issued(cid: str, minutes: int = 10) -> AnchorChallengeIssued:
    return AnchorChallengeIssued(
        session_id="s1", challenge_id=cid, path="README.md", line=3, line_digest="d" * 64,
        expires_at=T0 + _dt.timedelta(minutes=minutes),
    )  # fmt: skip


def attempt(n: int, *, validated: bool, challenge_id: str | None = None) -> AnchorAttempted:
    return AnchorAttempted(
        session_id="s1", role="dev", tier="default", attempt=n, first_in_session=n == 1, validated=validated,
        errors=[], warnings=[], proof_candidate="p", canonical_proof="p", challenge_id=challenge_id,
    )  # fmt: skip


# --- reading the answer ---------------------------------------------------------------------------------------


def test_an_answer_is_read_from_context_whole_up_to_the_last_bracket() -> None:
    answer = ch.find_answer(with_answer(f"  CHALLENGE::{A}[  x = items[0]  # [sic]  ]"))
    assert answer == ch.Answer(A, "  x = items[0]  # [sic]  ")
    assert ch.find_answer(proof()) is None


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("  CHALLENGE::", "is not in the form"),
        (f"  CHALLENGE::{A}", "is not in the form"),
        ("  CHALLENGE::ach_x[text]", "'ach_x' is not a challenge id"),
        (f"  CHALLENGE::{A}[one]\n  CHALLENGE::{A}[two]", "the proof has 2 CHALLENGE:: lines"),
    ],
)
def test_an_answer_that_cannot_be_read_is_bad_input(line: str, says: str) -> None:
    with pytest.raises(InvalidInput, match=None) as raised:
        ch.find_answer(with_answer(line))
    assert says in raised.value.message
    assert "challenge_id" in raised.value.hint  # what to send instead


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"CHALENG:[]ach_AB =\t\n", "CHALLENGE::", "CONTEXT:\n", "  CHALLENGE::", A]), max_size=40
    ).map("".join)
)
def test_any_text_gives_an_answer_none_or_invalid_input_never_another_error(noise: str) -> None:
    for text in (noise, with_answer(noise)):
        try:
            found = ch.find_answer(text)
        except InvalidInput as refused:
            assert refused.hint
        else:
            assert found is None or ch.CHALLENGE_ID.fullmatch(found.challenge_id)


def test_the_digest_is_bound_to_the_challenge_and_forgiving_only_of_whitespace() -> None:
    digest = ch.line_digest(SECRET, A, "    return tokens.refresh(user)\n")
    assert ch.answers(SECRET, A, digest, "return   tokens.refresh(user)")
    assert not ch.answers(SECRET, A, digest, "return tokens.refresh(users)")
    assert not ch.answers(SECRET, B, digest, "return tokens.refresh(user)")  # another challenge, another digest
    assert not ch.answers(b"x" * 32, A, digest, "return tokens.refresh(user)")  # another ledger key
    assert "refresh" not in digest


# --- the fold and the decisions -------------------------------------------------------------------------------


def test_the_fold_keeps_the_latest_challenge_and_remembers_used_and_replaced_ones() -> None:
    view = session(issued(A), attempt(1, validated=False, challenge_id=A), issued(B))
    assert view.anchor_challenge is not None and view.anchor_challenge.challenge_id == B
    assert view.past_challenges == {A: "used"}
    replaced = session(issued(A), issued(B))
    assert replaced.past_challenges == {A: "replaced"}
    used = session(issued(A), attempt(1, validated=True, challenge_id=A))
    assert used.anchor_challenge is not None and used.anchor_challenge.used_position == 3
    assert codec.loads(codec.dumps({"s1": view})) == {"s1": view}  # snapshots carry it


def test_only_the_open_unexpired_challenge_may_be_answered() -> None:
    open_one = session(issued(A))
    assert anchoring.open_challenge(open_one, A, T0).challenge_id == A
    refusals = [
        (session(issued(A), attempt(1, validated=False, challenge_id=A)), A, Conflict, "was already answered"),
        (session(issued(A), attempt(1, validated=False, challenge_id=A), issued(B)), A, Conflict, "already answered"),
        (session(issued(A), issued(B)), A, Conflict, f"was replaced by {B}"),
        (open_one, B, InvalidInput, "was not issued to session s1"),
        (session(), A, InvalidInput, "was not issued to session s1"),
    ]
    for view, cid, error, says in refusals:
        with pytest.raises(error, match=says):
            anchoring.open_challenge(view, cid, T0)
    with pytest.raises(Conflict, match="expired at 2026-01-05T09:10:00"):
        anchoring.open_challenge(open_one, A, T0 + _dt.timedelta(minutes=10))


def test_a_wrong_answer_never_shows_the_line_and_says_what_to_do() -> None:
    challenge = session(issued(A)).anchor_challenge
    assert challenge is not None
    error, fix = anchoring.wrong_quote(challenge)  # a failed attempt's error, not a refusal
    changed = anchoring.line_changed(challenge)
    assert "is not line 3 of README.md" in error and "anchor_challenge" in fix and "spent" in fix
    assert isinstance(changed, Conflict) and "changed since challenge" in changed.message
    assert "anchor_challenge" in changed.hint


# --- retries_left ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("events", "retries_left"),
    [
        ((), 2),
        ((attempt(1, validated=True),), 2),
        ((attempt(1, validated=False),), 2),
        ((attempt(1, validated=False), attempt(2, validated=False)), 1),
        ((attempt(1, validated=False), attempt(2, validated=False), attempt(3, validated=True)), 2),
        (
            (
                attempt(1, validated=False),
                attempt(2, validated=False),
                attempt(3, validated=False),
                AnchorLocked(session_id="s1", failed_attempts=3),
            ),
            0,
        ),
    ],
)
def test_retries_left_never_exceeds_max_retries(events: tuple[object, ...], retries_left: int) -> None:
    enforcement = anchoring.Enforcement.of(session(*events), attempt=1)
    assert enforcement.max_retries == 2
    assert enforcement.retries_left == retries_left
