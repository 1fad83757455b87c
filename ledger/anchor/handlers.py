"""Anchor commands: issue a challenge, validate an Odyssean Anchor proof (and its answer to the challenge) against
the authoritative project context, count and lock failed attempts, and let a person unlock a session.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from pathlib import Path

from ledger.anchor import challenge as challenges
from ledger.anchor import decisions as anchoring
from ledger.anchor import proof as anchor
from ledger.anchor.report import AnchorChallengeResult, AnchorResult, AnsweredChallenge
from ledger.core.canonical import require_utf8
from ledger.core.errors import InvalidInput
from ledger.kernel import Actor, Kernel
from ledger.sessions import decisions as sessions
from ledger.sessions import locks
from ledger.sessions import project as project_context
from ledger.sessions.grants import SessionGrants
from ledger.sessions.handlers import SessionCommands
from ledger.sessions.report import SessionState
from projections.sessions import SessionView


class AnchorCommands:
    """The Odyssean Anchor of seed 001 over a session."""

    def __init__(
        self,
        kernel: Kernel,
        grants: SessionGrants,
        sessions: SessionCommands,
        *,
        external_context: Sequence[str],
        challenge_ttl: _dt.timedelta,
        challenge_required: bool,
    ) -> None:
        """``external_context``: absolute directories or documents a CTX: citation may also name;
        ``challenge_ttl``: how long a proof may answer a challenge; ``challenge_required``: refuse proofs that
        answer none. The context files whose PHASE a proof is checked against are the sessions'."""
        self.kernel = kernel
        self.grants = grants
        self.sessions = sessions
        self.external_context = tuple(external_context)
        self.challenge_ttl = challenge_ttl
        self.challenge_required = challenge_required

    def anchor(
        self, actor: Actor, session_id: str, role: str, proof_candidate: str, tier: str = "default"
    ) -> AnchorResult:
        """Validate an anchor proof against the authoritative context; count, lock and record the attempt."""
        if not isinstance(proof_candidate, str) or not proof_candidate.strip():
            raise InvalidInput("proof_candidate is empty", "send the whole ===ODYSSEAN_ANCHOR_PROOF::v5.0=== block")
        if tier not in anchor.TIERS:
            raise InvalidInput(f"tier {tier!r} is not known", f"send one of {', '.join(anchor.TIERS)}")
        if len(proof_candidate) > anchor.MAX_PROOF_CHARS:
            raise InvalidInput(
                f"the proof is {len(proof_candidate)} characters; the limit is {anchor.MAX_PROOF_CHARS}",
                "send only the ===ODYSSEAN_ANCHOR_PROOF::v5.0=== block",
            )
        sessions.check_role(role)
        require_utf8(proof_candidate, "proof")
        answer = challenges.find_answer(proof_candidate)

        def attempt() -> AnchorResult:
            session = self.grants.open(actor, session_id, while_locked=True)  # a locked attempt is recorded
            view = session.view
            if view.anchor_locked:
                [rec], after = self.grants.append(actor, session, anchoring.decide_refusal(view))
                message = locks.locked_message(session_id)
                return AnchorResult(
                    validated=False,
                    canonical_proof="",
                    errors=[message],
                    guidance=f"VALIDATION FAILED: [{message}]. RETRY: [none until a person unlocks the session]",
                    enforcement=anchoring.Enforcement.of(after, view.anchor_attempt),
                    session_id=session_id,
                    position=rec.position,
                )
            if not view.working_dir:
                raise InvalidInput(
                    "this session has no working directory to anchor to",
                    "clock in again with working_dir set to your project directory",
                )
            root = Path(view.working_dir)
            spent, answered, challenge_problem = (
                (None, None, None) if answer is None else self._check_answer(view, root, answer)
            )
            ctx = project_context.read_context(root, self.sessions.context_paths)
            external = self.external_context
            workspace = project_context.Workspace(root, external)
            validation = anchor.validate_proof(
                proof_candidate,
                role=role,
                session_role=view.role,
                tier=tier,
                context=anchor.AuthoritativeContext(
                    working_dir=ctx.working_dir,
                    branch=ctx.branch,
                    phase=ctx.phase,
                    files=ctx.files,
                    external_context=tuple(external),
                ),
                check_citation=workspace.check_citation,
                parent_exists=self.grants.exists,
                challenge_required=self.challenge_required,
                challenge_problem=challenge_problem,
            )
            events = anchoring.decide_attempt(
                view,
                role=role,
                tier=tier,
                proof=proof_candidate,
                validation=validation,
                branch=ctx.branch,
                phase=ctx.phase,
                files=ctx.files,
                challenge_id=spent,
            )
            recorded, after = self.grants.append(actor, session, events)
            return AnchorResult(
                validated=validation.validated,
                canonical_proof=validation.canonical_proof,
                errors=validation.errors,
                guidance=validation.guidance,
                enforcement=anchoring.Enforcement.of(after, view.anchor_attempt + 1),
                warnings=validation.warnings,
                template="" if validation.validated else validation.template,
                challenge=answered,
                session_id=session_id,
                position=recorded[0].position,
            )

        return self.kernel.retrying(attempt)

    def _check_answer(
        self, view: SessionView, root: Path, answer: challenges.Answer
    ) -> tuple[str, AnsweredChallenge | None, tuple[str, str] | None]:
        """The open challenge the proof answers (refused if unknown, replaced, used, expired, or its line changed)
        and either what it proved or, for a quote that is not the line, the error the attempt fails with."""
        open_one = anchoring.open_challenge(view, answer.challenge_id, self.kernel.clock())
        secret = self.kernel.key.secret
        if not challenges.answers(secret, open_one.challenge_id, open_one.line_digest, answer.text):
            now = challenges.read_line(root, open_one.path, open_one.line)
            if now is None or not challenges.answers(secret, open_one.challenge_id, open_one.line_digest, now):
                raise anchoring.line_changed(open_one)
            return open_one.challenge_id, None, anchoring.wrong_quote(open_one)
        proved = AnsweredChallenge(challenge_id=open_one.challenge_id, path=open_one.path, line=open_one.line)
        return open_one.challenge_id, proved, None

    def challenge(self, actor: Actor, session_id: str) -> AnchorChallengeResult:
        """Issue a challenge for the session's next proof: a line of a tracked file the server picks and reads."""

        def attempt() -> AnchorChallengeResult:
            session = self.grants.open(actor, session_id)
            view = session.view
            if not view.working_dir:
                raise InvalidInput(
                    "this session has no working directory to ask about",
                    "clock in again with working_dir set to your project directory",
                )
            picked = challenges.pick_line(Path(view.working_dir))
            if picked is None:
                raise InvalidInput(
                    f"the ledger found no line to ask about in {view.working_dir}: a challenge needs a git repository "
                    f"with a tracked text file that has a line of {challenges.MIN_LINE_CHARS} or more characters",
                    "commit such a file to the repository and ask again",
                )
            cid = challenges.new_challenge_id()
            expires_at = self.kernel.clock() + self.challenge_ttl
            events = anchoring.decide_challenge(
                view,
                challenge_id=cid,
                path=picked.path,
                line=picked.line,
                line_digest=challenges.line_digest(self.kernel.key.secret, cid, picked.text),
                expires_at=expires_at,
            )
            [rec], _ = self.grants.append(actor, session, events)
            return AnchorChallengeResult(
                challenge_id=cid,
                session_id=session_id,
                path=picked.path,
                line=picked.line,
                expires_at=expires_at,
                answer_format=challenges.ANSWER_FORMAT.format(
                    challenge_id=cid, text=f"the text of line {picked.line} of {picked.path}"
                ),
                required=self.challenge_required,
                position=rec.position,
            )

        return self.kernel.retrying(attempt)

    def unlock_anchor(self, actor: Actor, session_id: str, reason: str) -> SessionState:
        """A person lifts an anchor lock; the unlock is an event naming who and why."""

        def attempt() -> SessionState:
            session = self.grants.administer(actor, session_id, "unlock a session")
            self.grants.append(actor, session, anchoring.decide_unlock(session.view, reason))
            return self.sessions.session_state(session_id)

        return self.kernel.retrying(attempt)
