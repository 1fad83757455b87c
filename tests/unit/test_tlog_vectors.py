"""transparency-dev/merkle's RFC 6962 test vectors (tests/golden/merkle_vectors, Apache-2.0): every happy path must
verify and every tampered case must fail, through ledger.core.tlog.merkle's verifiers."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from ledger.core.tlog import merkle

VECTORS = Path(__file__).resolve().parents[1] / "golden" / "merkle_vectors"


def _cases(kind: str) -> list[Path]:
    return sorted((VECTORS / kind).rglob("*.json"))


def _b(text: str | None) -> bytes:
    return base64.b64decode(text or "")


def test_the_vectors_are_there() -> None:
    inclusion, consistency = _cases("inclusion"), _cases("consistency")
    assert len(inclusion) >= 90 and len(consistency) >= 90
    wants = [json.loads(p.read_text())["wantErr"] for p in inclusion + consistency]
    assert wants.count(True) > 100 and wants.count(False) >= 10  # the tampered cases outnumber the happy ones


@pytest.mark.parametrize("path", _cases("inclusion"), ids=lambda p: str(p.relative_to(VECTORS)))
def test_inclusion_vector(path: Path) -> None:
    case = json.loads(path.read_text())
    proof = [_b(h) for h in case["proof"] or []]

    def check() -> None:
        merkle.verify_inclusion(case["leafIdx"], case["treeSize"], _b(case["leafHash"]), proof, _b(case["root"]))

    if case["wantErr"]:
        with pytest.raises(merkle.ProofError):
            check()
    else:
        check()


@pytest.mark.parametrize("path", _cases("consistency"), ids=lambda p: str(p.relative_to(VECTORS)))
def test_consistency_vector(path: Path) -> None:
    case = json.loads(path.read_text())
    proof = [_b(h) for h in case["proof"] or []]

    def check() -> None:
        merkle.verify_consistency(case["size1"], case["size2"], proof, _b(case["root1"]), _b(case["root2"]))

    if case["wantErr"]:
        with pytest.raises(merkle.ProofError):
            check()
    else:
        check()
