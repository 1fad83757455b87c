"""What an anchor attempt and an anchor challenge return."""

from __future__ import annotations

import datetime as _dt

from pydantic import BaseModel, Field

from ledger.anchor.decisions import Enforcement

# The constants of the interface, which adapters publish (limits in schemas, texts in answers).
from ledger.anchor.proof import MAX_PROOF_CHARS as MAX_PROOF_CHARS
from ledger.anchor.proof import TIERS as TIERS


class AnsweredChallenge(BaseModel):
    """The challenge a proof answered correctly, and the line it quoted (as the server read it itself)."""

    challenge_id: str
    path: str
    line: int


class AnchorResult(BaseModel):
    """The server's verdict on an anchor proof, with guidance and where the session stands."""

    validated: bool
    canonical_proof: str
    errors: list[str]
    guidance: str
    enforcement: Enforcement
    warnings: list[str] = Field(default_factory=list)
    template: str = ""
    challenge: AnsweredChallenge | None = Field(
        default=None,
        description="the challenge the proof answered (used up by this attempt); null when it answered none",
    )
    session_id: str
    position: int


class AnchorChallengeResult(BaseModel):
    """A challenge for the session's next proof: quote a line of a file in the working tree the server picked."""

    challenge_id: str
    session_id: str
    path: str = Field(description="a file git tracks, relative to the session's working directory")
    line: int = Field(description="the line to quote, numbered from 1")
    expires_at: _dt.datetime
    answer_format: str = Field(description="the line to add under CONTEXT in the proof")
    required: bool = Field(description="whether this ledger refuses proofs that answer no challenge")
    position: int
