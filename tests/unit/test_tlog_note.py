"""Signed notes, checkpoints, cosignatures and proof bundles against the C2SP specs' own examples and their rules."""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.core.tlog import bundle, merkle, note

# c2sp.org/signed-note's example: this verifier key verifies this note.
SPEC_VKEY = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
SPEC_NOTE = (
    "This is an example message.\n\n"
    "— example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n"
)


def signer(name: str, kind: int = note.ED25519) -> note.Signer:
    return note.Signer(name, Ed25519PrivateKey.generate(), kind)


def test_the_spec_example_opens_with_its_verifier_key() -> None:
    verifier = note.parse_vkey(SPEC_VKEY)
    assert verifier.vkey == SPEC_VKEY
    opened = note.open_note(SPEC_NOTE, [verifier])
    assert opened.text == b"This is an example message.\n"


def test_a_changed_text_fails_and_an_unknown_key_is_not_enough() -> None:
    verifier = note.parse_vkey(SPEC_VKEY)
    with pytest.raises(note.NoteError, match="does not verify"):
        note.open_note(SPEC_NOTE.replace("example message", "exemplary message"), [verifier])
    other = signer("example.com/foo").verifier  # same name, another key (so another ID): ignored, not trusted
    with pytest.raises(note.NoteError, match="no known key"):
        note.open_note(SPEC_NOTE, [other])


def test_key_ids_follow_the_spec() -> None:
    s = signer("log.example/a")
    v = s.verifier
    import hashlib

    assert v.id == hashlib.sha256(b"log.example/a\n\x01" + v.public).digest()[:4]
    assert note.parse_vkey(v.vkey) == v
    w = signer("witness.example/w", note.COSIGNATURE_V1).verifier
    assert w.id == hashlib.sha256(b"witness.example/w\n\x04" + w.public).digest()[:4]
    assert base64.b64decode(w.vkey.split("+", 2)[2]) == b"\x04" + w.public


@pytest.mark.parametrize(
    ("vkey", "why"),
    [
        ("a+b", "three parts"),
        ("na me+00000000+AQ==", "no spaces"),
        ("name+0000000g+AQ==", "hex"),
        ("name+00000000+AQ", "base64"),
        ("name+00000000+" + base64.b64encode(b"\x02" + bytes(32)).decode(), "type 0x01"),
        ("name+00000000+" + base64.b64encode(b"\x01" + bytes(32)).decode(), "does not match"),
    ],
)
def test_bad_vkeys_say_why(vkey: str, why: str) -> None:
    with pytest.raises(note.NoteError, match=why):
        note.parse_vkey(vkey)


def test_checkpoint_round_trip_with_cosignatures() -> None:
    log = signer("ledger.example/log")
    w1, w2 = signer("w1.example", note.COSIGNATURE_V1), signer("w2.example", note.COSIGNATURE_V1)
    cp = note.Checkpoint("ledger.example/log", 20852163, bytes(range(32)))
    signed = note.sign(cp.text, log)
    assert signed.startswith("ledger.example/log\n20852163\nAAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n\n— ")
    cosigs = note.parse_signature_lines(w1.signature_line(cp.text, 1679315147))
    full = note.add_signatures(signed, cosigs)
    opened = note.open_checkpoint(full, log.verifier, [w1.verifier, w2.verifier])
    assert opened.checkpoint == cp
    assert [v.name for v, _ in opened.cosignatures] == ["w1.example"]
    assert opened.cosignatures[0][1].timestamp == 1679315147
    # the cosignature signs the header, the time and the checkpoint text: another time does not verify
    v, sig = opened.cosignatures[0]
    forged = sig.body[:7] + b"\x00" + sig.body[8:]
    assert not v.verify(cp.text, forged)


def test_a_checkpoint_signed_by_another_key_or_origin_is_refused() -> None:
    log, impostor = signer("ledger.example/log"), signer("ledger.example/log")
    cp = note.Checkpoint("ledger.example/log", 3, bytes(32))
    with pytest.raises(note.NoteError, match="no known key"):
        note.open_checkpoint(note.sign(cp.text, impostor), log.verifier)
    other_origin = note.Checkpoint("elsewhere.example/log", 3, bytes(32))
    with pytest.raises(note.NoteError, match="origin"):
        note.open_checkpoint(note.sign(other_origin.text, log), log.verifier)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (b"o\n01\n" + base64.b64encode(bytes(32)) + b"\n", "leading zeros"),
        (b"o\n1\nAAAA\n", "3 bytes"),
        (b"o\n1\n", "each on its own line"),
        (b"\n1\n" + base64.b64encode(bytes(32)) + b"\n", "origin line is empty"),
        (b"o\n0\n" + base64.b64encode(bytes(32)) + b"\n", "empty tree"),
    ],
)
def test_malformed_checkpoints(text: bytes, why: str) -> None:
    with pytest.raises(note.NoteError, match=why):
        note.parse_checkpoint(text)


def test_a_witness_can_leave_the_empty_root_check_to_itself() -> None:
    text = b"o\n0\n" + base64.b64encode(bytes(32)) + b"\n"
    checkpoint = note.parse_checkpoint(text, check_empty_root=False)
    assert (checkpoint.size, checkpoint.root) == (0, bytes(32))
    with pytest.raises(note.NoteError, match="each on its own line"):  # every other check still holds
        note.parse_checkpoint(b"o\n0\n", check_empty_root=False)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("no newline", "end in a newline"),
        ("text\n", "blank line"),
        ("text\n\n", "no signature lines"),
        ("text\n\n- name AAAAAAA=\n", "em dash"),
        ("te\x07xt\n\n— name AAAAAAA=\n", "control characters"),
        ("text\n\n— name !!!!\n", "base64"),
    ],
)
def test_malformed_notes(text: str, why: str) -> None:
    with pytest.raises(note.NoteError, match=why):
        note.parse(text)


def _tree(n: int) -> tuple[list[bytes], list[bytes]]:
    leaves = [bytes([i % 256]) * 32 for i in range(n)]
    stored: list[bytes] = []
    for i, leaf in enumerate(leaves):
        stored.extend(merkle.new_stored_hashes(i, merkle.leaf_hash(leaf), lambda ix: [stored[j] for j in ix]))
    return leaves, stored


def test_bundle_round_trip_and_policy() -> None:
    leaves, stored = _tree(37)

    def read(ix):  # type: ignore[no-untyped-def]
        return [stored[j] for j in ix]

    log = signer("ledger.example/log")
    w = signer("w.example", note.COSIGNATURE_V1)
    cp = note.Checkpoint("ledger.example/log", 37, merkle.tree_hash(37, read))
    checkpoint = note.add_signatures(note.sign(cp.text, log), note.parse_signature_lines(w.signature_line(cp.text, 5)))
    b = bundle.Bundle(12, tuple(merkle.prove_inclusion(12, 37, read)), checkpoint)
    text = b.render()
    assert text.startswith("c2sp.org/tlog-proof@v1\nindex 12\n")
    assert bundle.parse(text) == b
    ok = bundle.verify(text, leaves[12], log.verifier, [w.verifier], min_cosignatures=1)
    assert ok.witnesses == ["w.example"]
    with pytest.raises(merkle.ProofError):
        bundle.verify(text, leaves[13], log.verifier)  # another leaf's data
    with pytest.raises(note.NoteError, match="policy asks for 2"):
        bundle.verify(text, leaves[12], log.verifier, [w.verifier], min_cosignatures=2)
    with pytest.raises(note.NoteError, match="policy asks for 1"):
        bundle.verify(text, leaves[12], log.verifier, [], min_cosignatures=1)  # the witness is not trusted
    with pytest.raises(merkle.ProofError):
        bundle.verify(text.replace("index 12", "index 13"), leaves[12], log.verifier)
    with pytest.raises(note.NoteError, match="index line"):
        bundle.parse(text.replace("index 12", "index 012"))


@pytest.mark.parametrize(
    "encoded", ["QUJD====", "QUJDRA===", "QUJDRA", "QUJDRA=", "QU JD", "QUJD\n", "=QUJD", "QUJD=RA="]
)
def test_base64_is_read_as_strictly_as_gos_std_encoding(encoded: str) -> None:
    # Python's b64decode(validate=True) takes "QUJD====" (excess padding); Go's note.Open rejects a note whole for
    # it, so a line we accepted and passed on would make every Go verifier reject our checkpoint.
    with pytest.raises(note.NoteError, match="not standard base64"):
        note.decode_base64(encoded, "the data")
    assert note.decode_base64("QUJDRA==", "the data") == b"ABCD"
    assert note.decode_base64("", "the data") == b""


def test_a_signature_line_with_excess_padding_makes_the_note_malformed() -> None:
    log, other = signer("example.com/log"), signer("other.example")
    text = note.sign("hello\n", log, other)
    other_line = text.splitlines()[-1]
    raw = base64.b64decode(other_line.split(" ")[2]) + b"\0"  # 69 bytes: 92 characters, no padding needed
    padded = text.replace(other_line, f"\u2014 other.example {base64.b64encode(raw).decode()}=")
    with pytest.raises(note.NoteError, match="not standard base64"):
        note.open_note(padded, [log.verifier])  # even an unknown key's line: Go calls the note malformed


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\x1c"])
def test_signature_lines_are_split_at_newlines_only(separator: str) -> None:
    # str.splitlines() breaks at these too; the spec and Go's note.Open do not, so two lines joined by one of them
    # are one malformed line, not two signatures.
    log, other = signer("example.com/log"), signer("other.example")
    text = note.sign("hello\n", log, other)
    joined = text.replace("\n\u2014 other.example", separator + "\u2014 other.example")
    with pytest.raises(note.NoteError):
        note.open_note(joined, [log.verifier])
    with pytest.raises(note.NoteError):
        note.parse_signature_lines(text.split("\n\n")[1].replace("\n\u2014 other", separator + "\u2014 other"))
