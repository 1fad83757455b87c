"""The transparency log's notes, checkpoints and proof bundles checked by an implementation nobody here wrote.

The Go team's ``golang.org/x/mod/sumdb/note`` opens our signed notes (``note.Open``) and ``sumdb/tlog`` hashes the
same leaves (``tlog.StoredHashes``, ``tlog.TreeHash``) and checks our bundles' inclusion proofs (``tlog.CheckRecord``),
through ``tests/go/tlogcheck`` (see tests/go_support.py). Go's note package verifies Ed25519 (type 0x01) signatures
only, not cosignatures (type 0x04): those are checked by our own code (tests/unit/test_tlog_note.py); here Go must
open a cosigned checkpoint with the log's key and list the cosignatures as unknown keys.
Without Go the module skips, saying why; under ``CI=true`` it fails.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.core.tlog import bundle, merkle, note
from tests.go_support import GoChecker, MemoryTree, b64

NAMES = ["example.com/log", "witness.example/ünïcode", "sum.golang.org", "a"]
TEXT = "example.com/log\n7\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"


def signer(name: str, kind: int = note.ED25519, seed: str = "") -> note.Signer:
    """A fixed key per (name, kind, seed), so that runs are repeatable."""
    private = hashlib.sha256(f"{name}|{kind}|{seed}".encode()).digest()
    return note.Signer(name, Ed25519PrivateKey.from_private_bytes(private), kind)


def leaf(i: int) -> bytes:
    """Leaf data: mostly 32-byte hashes (what the ledger logs), with empty and long leaves among them."""
    if i % 97 == 13:
        return b""
    if i % 89 == 5:
        return hashlib.sha256(b"long %d" % i).digest() * 40
    return hashlib.sha256(b"leaf %d" % i).digest()


def ours(text: str, verifiers: list[note.Verifier]) -> note.Opened | note.NoteError:
    try:
        return note.open_note(text, verifiers)
    except note.NoteError as exc:
        return exc


# --- signed notes ------------------------------------------------------------------------------------------


def test_notes_signed_by_several_keys_open_in_go(go_checker: GoChecker) -> None:
    signers = [signer(n) for n in NAMES]
    text = note.sign(TEXT, *signers)
    everyone = go_checker.check("note", vkeys=[s.verifier.vkey for s in signers], note=text)
    assert everyone == {"ok": True, "text": TEXT, "signers": NAMES, "unverified": []}
    for one in signers:
        answer = go_checker.check("note", vkeys=[one.verifier.vkey], note=text)
        assert answer["ok"] and answer["signers"] == [one.name], answer
        assert answer["unverified"] == [n for n in NAMES if n != one.name]
        opened = note.open_note(text, [one.verifier])
        assert [v.name for v, _ in opened.verified] == [one.name]


def test_an_unknown_extra_signature_is_ignored_by_go_and_by_us(go_checker: GoChecker) -> None:
    log, stranger = signer("example.com/log"), signer("stranger.example")
    impostor = signer("example.com/log", seed="another key")  # the log's name, another key: another key ID
    text = note.sign(TEXT, log, stranger, impostor)
    answer = go_checker.check("note", vkeys=[log.verifier.vkey], note=text)
    assert answer == {"ok": True, "text": TEXT, "signers": [log.name], "unverified": [stranger.name, log.name]}
    assert [v for v, _ in note.open_note(text, [log.verifier]).verified] == [log.verifier]


def test_tampered_notes_are_rejected_by_go_and_by_us(go_checker: GoChecker) -> None:
    log, other = signer("example.com/log"), signer("other.example")
    good = note.sign(TEXT, log)
    body = note.parse(good).signatures[0].body
    flipped = bytes([body[0] ^ 1]) + body[1:]
    forged_line = f"— {log.name} {b64(log.verifier.id + flipped)}\n"
    others = note.parse(note.sign(TEXT, other)).signatures[0].body
    cases = {
        "text changed": (good.replace("\n7\n", "\n8\n"), "InvalidSignatureError"),
        "signature bit flipped": (TEXT + "\n" + forged_line, "InvalidSignatureError"),
        "another key's signature under the log's key ID": (
            f"{TEXT}\n— {log.name} {b64(log.verifier.id + others)}\n",
            "InvalidSignatureError",
        ),
        "signed by an unknown key only": (note.sign(TEXT, other), "UnverifiedNoteError"),
        "no blank line": (good.replace("\n\n", "\n"), "malformed note"),
        "no final newline": (good[:-1], "malformed note"),
    }
    for what, (text, error_type) in cases.items():
        answer = go_checker.check("note", vkeys=[log.verifier.vkey], note=text)
        assert not answer["ok"] and answer["error_type"] == error_type, (what, answer)
        assert isinstance(ours(text, [log.verifier]), note.NoteError), what


def _mutations(text: str, rng: random.Random, count: int) -> list[str]:
    alphabet = ["\n", " ", "—", "+", "=", "/", "A", "a", "0", "\u2028", "\u0085", "\u00a0", "\t", "\x00", "é"]
    out = []
    for _ in range(count):
        chars = list(text)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(chars))
            op = rng.random()
            if op < 0.4:
                del chars[at]
            elif op < 0.7:
                chars.insert(at, rng.choice(alphabet))
            else:
                chars[at] = rng.choice(alphabet)
        out.append("".join(chars))
    lines = text.splitlines(keepends=True)
    sigs = lines[lines.index("\n") + 1 :]
    out.append(text + sigs[0])  # a repeated signature line
    out.append("".join(lines[: lines.index("\n") + 1] + sigs[::-1]))  # the signatures in another order
    return out


def _verdict(result: note.Opened | note.NoteError) -> tuple[bool, str, list[str]]:
    if isinstance(result, note.NoteError):
        return False, "", []
    names = list(dict.fromkeys(v.name for v, _ in result.verified))  # Go drops a repeated signature
    return True, result.text.decode(), names


def test_go_and_we_agree_on_thousands_of_mutated_notes(go_checker: GoChecker) -> None:
    """Deterministic fuzzing: a signed note with a few characters deleted, inserted or replaced (newlines, spaces,
    em dashes, U+2028, U+0085, NUL among them) gets the same verdict from note.Open as from ours."""
    signers = [signer(n) for n in NAMES[:3]]
    text = note.sign(TEXT, *signers)
    mutated = _mutations(text, random.Random(24), 3000)
    vkeys = [s.verifier.vkey for s in signers[:2]]  # the third is an unknown key
    answers = go_checker.check_many([{"kind": "note", "vkeys": vkeys, "note": m} for m in mutated])
    differ = []
    for m, answer in zip(mutated, answers, strict=True):
        go = (answer["ok"], answer.get("text", ""), answer.get("signers", []))
        if go != _verdict(ours(m, [s.verifier for s in signers[:2]])):
            differ.append((m, answer))
    assert not differ, f"{len(differ)} notes get another verdict from Go; the first: {differ[:3]}"
    assert sum(a["ok"] for a in answers) > 10  # some mutations (e.g. reordered signatures) must still open


def test_a_cosigned_checkpoint_opens_in_go_with_the_logs_key(go_checker: GoChecker) -> None:
    log, witness = signer("example.com/log"), signer("witness.example", note.COSIGNATURE_V1)
    cosigned = note.add_signatures(
        note.sign(TEXT, log), note.parse_signature_lines(witness.signature_line(TEXT.encode(), timestamp=1_700_000_000))
    )
    answer = go_checker.check("note", vkeys=[log.verifier.vkey], note=cosigned)
    assert answer == {"ok": True, "text": TEXT, "signers": [log.name], "unverified": [witness.name]}
    # Go's note package knows no type 0x04 key, which is why our code checks cosignatures itself:
    refused = go_checker.check("note", vkeys=[log.verifier.vkey, witness.verifier.vkey], note=cosigned)
    assert not refused["ok"] and "unknown verifier algorithm" in refused["error"], refused
    opened = note.open_checkpoint(cosigned, log.verifier, [witness.verifier])
    assert [v.name for v, _ in opened.cosignatures] == [witness.name]


# --- tree hashes and checkpoints -----------------------------------------------------------------------------


def test_our_roots_and_stored_hashes_equal_gos_for_every_size_to_300(go_checker: GoChecker) -> None:
    leaves = [leaf(i) for i in range(300)]
    tree = MemoryTree(leaves)
    answer = go_checker.check("treehash", leaves=[b64(d) for d in leaves], stored=True)
    assert answer["stored"] == [b64(h) for h in tree.stored]
    assert answer["roots"] == {str(n): b64(tree.root(n)) for n in range(1, 301)}


def test_our_roots_equal_gos_at_larger_sizes(go_checker: GoChecker) -> None:
    sizes = [511, 512, 513, 1000, 1023, 1024, 1025, 4095, 4096, 4097, 10_000, 65_535, 65_536, 65_537]
    leaves = [leaf(i) for i in range(sizes[-1])]
    tree = MemoryTree(leaves)
    answer = go_checker.check("treehash", leaves=[b64(d) for d in leaves], sizes=sizes)
    assert answer["roots"] == {str(n): b64(tree.root(n)) for n in sizes}


def _bundle(tree: MemoryTree, index: int, size: int, log: note.Signer, *cosigners: note.Signer, **kw: Any) -> str:
    checkpoint = note.Checkpoint(kw.pop("origin", log.name), size, tree.root(size))
    text = note.sign(checkpoint.text, log)
    for w in cosigners:
        text = note.add_signatures(text, note.parse_signature_lines(w.signature_line(checkpoint.text, 1_700_000_000)))
    return bundle.Bundle(index, tuple(tree.inclusion(index, size)), text, kw.pop("extra", None)).render()


def test_our_bundles_verify_in_go(go_checker: GoChecker) -> None:
    log, witness = signer("example.com/log"), signer("witness.example", note.COSIGNATURE_V1)
    tree = MemoryTree([leaf(i) for i in range(1030)])
    checks, expected = [], []
    for size in (1, 2, 3, 7, 8, 9, 100, 256, 257, 1024, 1030):
        for index in sorted({0, size // 2, size - 1}):
            extra = b"extra %d" % index if index % 2 else None
            text = _bundle(tree, index, size, log, witness, extra=extra)
            verified = bundle.verify(text, leaf(index), log.verifier, [witness.verifier], min_cosignatures=1)
            assert verified.witnesses == [witness.name]
            checks.append({"kind": "bundle", "bundle": text, "vkey": log.verifier.vkey, "data_hex": leaf(index).hex()})
            expected.append(
                {
                    "ok": True,
                    "origin": log.name,
                    "size": size,
                    "root": b64(tree.root(size)),
                    "index": index,
                    "extra": None if extra is None else b64(extra),
                    "signers": [log.name],
                    "unverified": [witness.name],
                }
            )
    assert go_checker.check_many(checks) == expected


def test_tampered_bundles_fail_in_go_and_in_ours(go_checker: GoChecker) -> None:
    log = signer("example.com/log")
    tree = MemoryTree([leaf(i) for i in range(100)])
    good = _bundle(tree, 37, 100, log)
    lines = good.split("\n")
    flipped = b64(bytes([tree.inclusion(37, 100)[2][0] ^ 0x80]) + tree.inclusion(37, 100)[2][1:])
    cases: dict[str, tuple[str, bytes, note.Signer]] = {
        "another leaf's data": (good, leaf(38), log),
        "another index": (good.replace("index 37\n", "index 36\n"), leaf(37), log),
        "a proof hash changed": (good.replace(lines[4], flipped), leaf(37), log),
        "a proof hash dropped": (good.replace(lines[4] + "\n", ""), leaf(37), log),
        "a proof hash added": (good.replace("index 37\n", "index 37\n" + lines[2] + "\n"), leaf(37), log),
        "another log's key": (good, leaf(37), signer("example.com/log", seed="another")),
        "a checkpoint of another origin": (_bundle(tree, 37, 100, log, origin="elsewhere.example"), leaf(37), log),
        "the checkpoint's size changed": (good.replace("\n100\n", "\n99\n"), leaf(37), log),
        "index past the tree": (_bundle(tree, 37, 100, log).replace("index 37", "index 100"), leaf(37), log),
        "no header": (good.replace(bundle.HEADER + "\n", ""), leaf(37), log),
    }
    assert go_checker.check("bundle", bundle=good, vkey=log.verifier.vkey, data_hex=leaf(37).hex())["ok"]
    for what, (text, data, key) in cases.items():
        answer = go_checker.check("bundle", bundle=text, vkey=key.verifier.vkey, data_hex=data.hex())
        assert not answer["ok"], (what, answer)
        with pytest.raises((note.NoteError, merkle.ProofError)):
            bundle.verify(text, data, key.verifier)


def test_go_and_we_agree_on_thousands_of_mutated_bundles(go_checker: GoChecker) -> None:
    """The same fuzzing for a cosigned tlog-proof with an extra line: Go's verdict (our bundle lines parsed by the
    spec in Go, note.Open, tlog.CheckRecord) equals bundle.verify's."""
    log, witness = signer("example.com/log"), signer("witness.example", note.COSIGNATURE_V1)
    tree = MemoryTree([leaf(i) for i in range(100)])
    mutated = _mutations(_bundle(tree, 37, 100, log, witness, extra=b"extra"), random.Random(5), 3000)
    checks = [{"kind": "bundle", "bundle": m, "vkey": log.verifier.vkey, "data_hex": leaf(37).hex()} for m in mutated]
    differ, held = [], 0
    for m, answer in zip(mutated, go_checker.check_many(checks), strict=True):
        held += answer["ok"]
        try:
            bundle.verify(m, leaf(37), log.verifier)
            verdict = True
        except (note.NoteError, merkle.ProofError):
            verdict = False
        if answer["ok"] != verdict:
            differ.append((m, answer))
    assert not differ, f"{len(differ)} bundles get another verdict from Go; the first: {differ[:3]}"
    assert held > 10  # some mutations (in the unsigned extra line, reordered signatures) must still hold
