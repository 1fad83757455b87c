"""The OA5 validator: a candidate parsed and checked against every rule, with one verdict and its guidance."""

from __future__ import annotations

from dataclasses import dataclass

from ledger.anchor.proof.oa5 import (
    MAX_PROOF_CHARS,
    START_MARKER,
    TIERS,
    AuthoritativeContext,
    CitationChecker,
    ParentChecker,
    _clip,
    _Findings,
)
from ledger.anchor.proof.parse import _fields, _structure, _Tension
from ledger.anchor.proof.render import _render, proof_template
from ledger.anchor.proof.rules import _check_commit, _check_context, _check_identity, _check_tensions


@dataclass(frozen=True)
class AnchorValidation:
    """The verdict on one proof candidate: validated with no errors, or at least one error and its guidance."""

    validated: bool
    errors: list[str]
    warnings: list[str]
    guidance: str  # "" when validated; else "VALIDATION FAILED: [e1, e2]. RETRY: [fix1, fix2]"
    canonical_proof: str  # with the AUTHORITATIVE context; "" if the candidate's structure could not be parsed
    template: str  # a copy-paste proof with the real context and slots to fill (always set)
    authority: str | None  # "RESPONSIBLE[...]" / "DELEGATED[...]" as parsed, or None


def validate_proof(
    text: str,
    *,
    role: str,
    session_role: str,
    tier: str,
    context: AuthoritativeContext,
    check_citation: CitationChecker,
    parent_exists: ParentChecker,
    challenge_required: bool = False,
    challenge_problem: tuple[str, str] | None = None,
) -> AnchorValidation:
    """Validate an OA5 proof candidate against the authoritative context (seed 001).

    Returns ``validated=True`` with no errors, or at least one error with guidance in the seed's
    format ``VALIDATION FAILED: [errors]. RETRY: [fixes]``. The canonical proof carries the authoritative
    CONTEXT, never the candidate's, and is empty only when the structure itself could not be parsed.

    A ``CHALLENGE::`` line under CONTEXT is accepted here and checked by the caller (``ledger.anchor.challenge``),
    which alone can read the challenge: a quote that is not the line comes back as ``challenge_problem`` (error,
    fix) and fails the proof; with ``challenge_required`` a proof without one fails.
    """
    template = proof_template(role=role, tier=tier, context=context, challenge=challenge_required)
    f = _Findings()
    if len(text) > MAX_PROOF_CHARS:
        f.fail(
            f"the proof is {len(text)} characters; the limit is {MAX_PROOF_CHARS}",
            f"Send only the {START_MARKER} block (at most {MAX_PROOF_CHARS} characters).",
        )
        return _verdict(f, canonical="", template=template, authority=None)
    if challenge_problem is not None:
        f.fail(*challenge_problem)
    if tier not in TIERS:
        f.fail(f"tier '{_clip(tier, 40)}' is not known", f"Use one of the tiers {', '.join(TIERS)}.")
    if role.strip() != session_role.strip():
        f.fail(
            f"role '{_clip(role)}' does not match this session's role '{_clip(session_role)}'",
            f"Anchor as '{_clip(session_role)}', the role this session clocked in with, or clock in again.",
        )
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    found = _structure(text, f)
    identity: dict[str, str] = {}
    authority = None
    if "IDENTITY" in found.sections:
        identity = _fields("IDENTITY", found.sections["IDENTITY"], ("ROLE", "COGNITION", "AUTHORITY"), f)
        authority = _check_identity(identity, role=role, parent_exists=parent_exists, f=f)
    if "CONTEXT" in found.sections:
        values = _fields("CONTEXT", found.sections["CONTEXT"], ("PHASE", "BRANCH", "FILES", "CHALLENGE"), f)
        _check_context(values, context, f)
        if challenge_required and "CHALLENGE" not in values:
            f.fail(
                "CONTEXT has no CHALLENGE answer (this ledger requires one)",
                "Call anchor_challenge, read the line it names, and add "
                "CHALLENGE::<challenge_id>[<the text of that line>] under CONTEXT.",
            )
    if loose := found.sections.get("PROOF"):
        f.fail(
            f"PROOF has a line outside TENSIONS and COMMIT: '{_clip(loose[0], 60)}'",
            "Put every tension under TENSIONS: and ARTIFACT::/GATE:: under COMMIT:.",
        )
    commit = _fields("COMMIT", found.subsections.get("COMMIT", []), ("ARTIFACT", "GATE"), f)
    if "COMMIT" in found.subsections:
        _check_commit(commit, f)
    tensions: list[_Tension] = []
    if "TENSIONS" in found.subsections:
        tensions = _check_tensions(
            found.subsections["TENSIONS"], tier=tier, context=context, check_citation=check_citation, f=f
        )
    canonical = ""
    if found.complete:
        canonical = _render(
            identity=[
                ("ROLE", identity.get("ROLE")),
                ("COGNITION", identity.get("COGNITION")),
                ("AUTHORITY", authority or identity.get("AUTHORITY")),
            ],
            context=context,
            tensions=[t.canonical for t in tensions],
            commit=[("ARTIFACT", commit.get("ARTIFACT")), ("GATE", commit.get("GATE"))],
        )
    return _verdict(f, canonical=canonical, template=template, authority=authority)


def _verdict(f: _Findings, *, canonical: str, template: str, authority: str | None) -> AnchorValidation:
    if not f.errors:
        return AnchorValidation(True, [], f.capped(f.warnings), "", canonical, template, authority)
    errors, fixes = f.capped(f.errors), f.capped(f.fixes)
    guidance = f"VALIDATION FAILED: [{', '.join(errors)}]. RETRY: [{', '.join(fixes)}]"
    return AnchorValidation(False, errors, f.capped(f.warnings), guidance, canonical, template, authority)
