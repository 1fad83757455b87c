"""What an anchor attempt returns."""

from __future__ import annotations

from pydantic import BaseModel, Field

from ledger.anchor.decisions import Enforcement


class AnchorResult(BaseModel):
    """The server's verdict on an anchor proof, with guidance and where the session stands."""

    validated: bool
    canonical_proof: str
    errors: list[str]
    guidance: str
    enforcement: Enforcement
    warnings: list[str] = Field(default_factory=list)
    template: str = ""
    session_id: str
    position: int
