"""Our inclusion and consistency proofs checked by Go's ``golang.org/x/mod/sumdb/tlog`` (``tlog.CheckRecord``,
``tlog.CheckTree``), and tampered proofs refused by Go as by us, through ``tests/go/tlogcheck`` (tests/go_support.py).

Deterministic sweeps: every (index, size) and (old, size) pair up to 64 leaves, edge pairs at powers of two and a
seeded random sample up to 5,000 leaves; each proof tampered a dozen ways. Without Go it skips; under CI it fails.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ledger.core.tlog import merkle
from tests.go_support import GoChecker, MemoryTree, b64

LEAVES = 5000


def leaf(i: int) -> bytes:
    return hashlib.sha256(b"proof leaf %d" % i).digest()


@pytest.fixture(scope="module")
def tree() -> MemoryTree:
    return MemoryTree([leaf(i) for i in range(LEAVES)])


def _flip(h: bytes, bit: int = 0) -> bytes:
    return bytes([h[0] ^ (1 << bit)]) + h[1:]


def pairs(rng: random.Random, small: int, sample: int, upto: int) -> list[tuple[int, int]]:
    """(a, n) with a ≤ n: every pair to ``small``, pairs at powers of two ± 1, then a random ``sample`` to ``upto``."""
    out = {(a, n) for n in range(1, small + 1) for a in range(1, n + 1)}
    edges = sorted({p + d for p in (2**k for k in range(13)) for d in (-1, 0, 1)} & set(range(1, upto + 1)))
    out |= {(a, n) for n in edges for a in edges if a <= n}
    for _ in range(sample):
        n = rng.randint(1, upto)
        out.add((rng.randint(1, n), n))
    return sorted(out)


def ours(check: Callable[[], None]) -> bool:
    try:
        check()
    except merkle.ProofError:
        return False
    return True


# --- inclusion ---------------------------------------------------------------------------------------------


def inclusion(tree: MemoryTree, index: int, size: int) -> dict[str, Any]:
    """Our proof for leaf ``index`` in the tree of ``size``, with what checking it needs."""
    return {
        "size": size,
        "root": tree.root(size),
        "index": index,
        "data": leaf(index),
        "proof": tree.inclusion(index, size),
    }


def record(base: dict[str, Any], /, **changes: Any) -> dict[str, Any]:
    """The record check of ``base`` (with any field replaced), and our own verdict on the same inputs under the key
    ``ours``."""
    c = {**base, **changes}
    verdict = ours(
        lambda: merkle.verify_inclusion(c["index"], c["size"], merkle.leaf_hash(c["data"]), c["proof"], c["root"])
    )
    return {
        "kind": "record",
        "size": c["size"],
        "root": b64(c["root"]),
        "index": c["index"],
        "data": b64(c["data"]),
        "proof": [b64(h) for h in c["proof"]],
        "ours": verdict,
    }


def test_our_inclusion_proofs_pass_tlog_check_record(go_checker: GoChecker, tree: MemoryTree) -> None:
    checks = [record(inclusion(tree, i - 1, n)) for i, n in pairs(random.Random(1), 64, 3000, LEAVES)]
    assert all(c.pop("ours") for c in checks)
    answers = go_checker.check_many(checks)
    failed = [(c["index"], c["size"], a["error"]) for c, a in zip(checks, answers, strict=True) if not a["ok"]]
    assert not failed, f"Go refused {len(failed)} of {len(checks)} inclusion proofs, e.g. {failed[:5]}"
    assert len(checks) > 5000


def inclusion_tampered(tree: MemoryTree, index: int, size: int) -> Iterator[tuple[str, bool, dict[str, Any]]]:
    """(what, must fail, check) for one proof: changes that must make it fail, and changes whose verdict Go and we
    must merely agree on (a proof can hold for another size: the root is what binds the size)."""
    base = inclusion(tree, index, size)
    proof, root = base["proof"], base["root"]
    for at in range(len(proof)):
        changed = [*proof[:at], _flip(proof[at], at % 8), *proof[at + 1 :]]
        yield f"hash {at} changed", True, record(base, proof=changed)
    if proof:
        yield "last hash dropped", True, record(base, proof=proof[:-1])
        yield "first hash dropped", True, record(base, proof=proof[1:])
        yield "hashes reversed", len(proof) > 1, record(base, proof=proof[::-1])
    yield "a hash added", True, record(base, proof=[*proof, root])
    yield "a hash prepended", True, record(base, proof=[merkle.leaf_hash(leaf(index)), *proof])
    yield "another leaf's data", True, record(base, data=leaf(index + 1))
    yield "the leaf hash as data", True, record(base, data=merkle.leaf_hash(leaf(index)))
    yield "another root", True, record(base, root=_flip(root))
    yield "index past the tree", True, record(base, index=size)
    yield "size zero", True, record(base, size=0)
    for d in (-1, 1):
        if 0 <= index + d < size:
            yield f"index {d:+}", False, record(base, index=index + d)
        if index < size + d:
            yield f"size {d:+}", False, record(base, size=size + d)


def test_tampered_inclusion_proofs_fail_in_go_as_in_ours(go_checker: GoChecker, tree: MemoryTree) -> None:
    cases = [t for i, n in pairs(random.Random(2), 40, 400, LEAVES) for t in inclusion_tampered(tree, i - 1, n)]
    answers = go_checker.check_many([c for _, _, c in cases])
    disagree, accepted = [], []
    for (what, must_fail, check), answer in zip(cases, answers, strict=True):
        if answer["ok"] != check["ours"]:
            disagree.append((what, check["index"], check["size"], answer))
        if must_fail and (answer["ok"] or check["ours"]):
            accepted.append((what, check["index"], check["size"], answer["ok"], check["ours"]))
    assert not disagree, f"{len(disagree)} of {len(cases)} verdicts differ from Go's, e.g. {disagree[:5]}"
    assert not accepted, f"{len(accepted)} tampered proofs held, e.g. {accepted[:5]}"
    assert sum(c["ours"] for _, _, c in cases) > 0  # some size ± 1 changes hold, in both


# --- consistency -------------------------------------------------------------------------------------------


def consistency(tree: MemoryTree, old: int, size: int) -> dict[str, Any]:
    """Our consistency proof from ``old`` leaves to ``size``, with what checking it needs."""
    return {
        "old_size": old,
        "old_root": tree.root(old),
        "size": size,
        "root": tree.root(size),
        "proof": tree.consistency(old, size),
    }


def tree_check(base: dict[str, Any], /, **changes: Any) -> dict[str, Any]:
    """The tree check of ``base`` (with any field replaced), and our own verdict under the key ``ours``."""
    c = {**base, **changes}
    verdict = ours(lambda: merkle.verify_consistency(c["old_size"], c["size"], c["proof"], c["old_root"], c["root"]))
    return {
        "kind": "tree",
        "old_size": c["old_size"],
        "old_root": b64(c["old_root"]),
        "size": c["size"],
        "root": b64(c["root"]),
        "proof": [b64(h) for h in c["proof"]],
        "ours": verdict,
    }


def test_our_consistency_proofs_pass_tlog_check_tree(go_checker: GoChecker, tree: MemoryTree) -> None:
    checks = [tree_check(consistency(tree, m, n)) for m, n in pairs(random.Random(3), 64, 3000, LEAVES)]
    assert all(c.pop("ours") for c in checks)
    answers = go_checker.check_many(checks)
    failed = [(c["old_size"], c["size"], a["error"]) for c, a in zip(checks, answers, strict=True) if not a["ok"]]
    assert not failed, f"Go refused {len(failed)} of {len(checks)} consistency proofs, e.g. {failed[:5]}"
    assert len(checks) > 5000


def consistency_tampered(tree: MemoryTree, old: int, size: int) -> Iterator[tuple[str, bool, dict[str, Any]]]:
    base = consistency(tree, old, size)
    proof, old_root, root = base["proof"], base["old_root"], base["root"]
    for at in range(len(proof)):
        changed = [*proof[:at], _flip(proof[at], at % 8), *proof[at + 1 :]]
        yield f"hash {at} changed", True, tree_check(base, proof=changed)
    if proof:
        yield "last hash dropped", True, tree_check(base, proof=proof[:-1])
        yield "first hash dropped", True, tree_check(base, proof=proof[1:])
        yield "hashes reversed", len(proof) > 1, tree_check(base, proof=proof[::-1])
    yield "a hash added", True, tree_check(base, proof=[*proof, root])
    yield "the old root prepended", True, tree_check(base, proof=[old_root, *proof])
    yield "another old root", True, tree_check(base, old_root=_flip(old_root))
    yield "another new root", True, tree_check(base, root=_flip(root))
    yield "the roots swapped", old != size, tree_check(base, old_root=root, root=old_root)
    yield "from size zero", True, tree_check(base, old_size=0, old_root=merkle.EMPTY_ROOT)
    if old < size:
        yield "sizes swapped", True, tree_check(base, old_size=size, size=old)
    for d in (-1, 1):
        if 0 < old + d <= size:
            yield f"old size {d:+}", False, tree_check(base, old_size=old + d)
        if old <= size + d:
            yield f"size {d:+}", False, tree_check(base, size=size + d)


def test_tampered_consistency_proofs_fail_in_go_as_in_ours(go_checker: GoChecker, tree: MemoryTree) -> None:
    cases = [t for m, n in pairs(random.Random(4), 40, 400, LEAVES) for t in consistency_tampered(tree, m, n)]
    answers = go_checker.check_many([c for _, _, c in cases])
    disagree, accepted = [], []
    for (what, must_fail, check), answer in zip(cases, answers, strict=True):
        if answer["ok"] != check["ours"]:
            disagree.append((what, check["old_size"], check["size"], answer))
        if must_fail and (answer["ok"] or check["ours"]):
            accepted.append((what, check["old_size"], check["size"], answer["ok"], check["ours"]))
    assert not disagree, f"{len(disagree)} of {len(cases)} verdicts differ from Go's, e.g. {disagree[:5]}"
    assert not accepted, f"{len(accepted)} tampered proofs held, e.g. {accepted[:5]}"
