"""The Odyssean Anchor proof (OA5, seed 001): parse a candidate, check it against authoritative state, render it.

Pure: no file system, no git, no ledger. What needs the outside world comes in as a value
(:class:`AuthoritativeContext`) or a callable (:data:`CitationChecker`, :data:`ParentChecker`).
Liberal in whitespace and indentation, strict in content; every error carries a specific fix, and
:func:`validate_proof` never raises for any input string (a checker that raises is not caught: a ledger
that cannot answer must fail loudly).

:mod:`.oa5` holds the vocabulary and helpers, :mod:`.parse` cuts a candidate up, :mod:`.rules` checks it,
:mod:`.render` writes the canonical proof and the template, and :mod:`.validate` joins them in
:func:`validate_proof`; every public name is importable from here.
"""

from ledger.anchor.proof.oa5 import (
    CONTEXT_FILE,
    END_MARKER,
    FILES_GROSS_RATIO,
    FILES_SLACK,
    MAX_ERRORS,
    MAX_PROOF_CHARS,
    MAX_TENSIONS,
    PLACEHOLDER_WORDS,
    PROOF_SECTIONS,
    START_MARKER,
    TENSION_FORMAT,
    TIERS,
    TOP_SECTIONS,
    UNKNOWN,
    AuthoritativeContext,
    CitationChecker,
    ParentChecker,
)
from ledger.anchor.proof.render import proof_template
from ledger.anchor.proof.rules import artifact_is_concrete, files_grossly_off
from ledger.anchor.proof.validate import AnchorValidation, validate_proof
from ledger.sessions.locks import MAX_RETRIES  # the seed's retry limit, which the session's anchor lock counts

__all__ = [
    "CONTEXT_FILE",
    "END_MARKER",
    "FILES_GROSS_RATIO",
    "FILES_SLACK",
    "MAX_ERRORS",
    "MAX_PROOF_CHARS",
    "MAX_RETRIES",
    "MAX_TENSIONS",
    "PLACEHOLDER_WORDS",
    "PROOF_SECTIONS",
    "START_MARKER",
    "TENSION_FORMAT",
    "TIERS",
    "TOP_SECTIONS",
    "UNKNOWN",
    "AnchorValidation",
    "AuthoritativeContext",
    "CitationChecker",
    "ParentChecker",
    "artifact_is_concrete",
    "files_grossly_off",
    "proof_template",
    "validate_proof",
]
