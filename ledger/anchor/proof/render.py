"""Rendering an OA5 proof: the canonical proof with the authoritative CONTEXT, and the template to copy."""

from __future__ import annotations

from ledger.anchor.proof.oa5 import (
    END_MARKER,
    START_MARKER,
    TIERS,
    UNKNOWN,
    AuthoritativeContext,
)


def _render(
    *,
    identity: list[tuple[str, str | None]],
    context: AuthoritativeContext,
    tensions: list[str],
    commit: list[tuple[str, str | None]],
    challenge: str | None = None,
) -> str:
    lines = [START_MARKER, "IDENTITY:"]
    lines += [f"  {key}::{value}" for key, value in identity if value]
    lines += [
        "CONTEXT:",
        f"  PHASE::{context.phase or UNKNOWN}",
        f"  BRANCH::{context.branch or UNKNOWN}",
        f"  FILES::{context.files}",
        *([f"  CHALLENGE::{challenge}"] if challenge else []),
        "PROOF:",
        "  TENSIONS:",
    ]
    lines += [f"    {t}" for t in tensions]
    lines += ["  COMMIT:"] + [f"    {key}::{value}" for key, value in commit if value]
    return "\n".join([*lines, END_MARKER])


def proof_template(*, role: str, tier: str, context: AuthoritativeContext, challenge: bool = False) -> str:
    """A proof to copy: the real role and CONTEXT, one tension line per tier minimum, ``{slots}`` to fill.

    Sent back unchanged it fails: every ``{slot}`` counts as placeholder content.
    """
    tension = "L{N}::[{constraint}]⇌CTX:{path}[{state}]→TRIGGER[{action}]"
    return _render(
        identity=[("ROLE", role or "{role}"), ("COGNITION", "{cognition}"), ("AUTHORITY", "RESPONSIBLE[{scope}]")],
        context=context,
        tensions=[tension] * TIERS.get(tier, TIERS["default"]),
        commit=[("ARTIFACT", "{artifact}"), ("GATE", "{gate}")],
        challenge="{challenge_id}[{text of the line anchor_challenge names}]" if challenge else None,
    )
