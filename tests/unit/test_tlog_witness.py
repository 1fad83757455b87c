"""The witness's decisions (c2sp.org/tlog-witness add-checkpoint), pure: the request body's grammar, each status in
the spec's order, the cosignature it returns; and its files: the key file with its name, the state directory."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.core.errors import Conflict, InvalidInput, NotInitialised
from ledger.core.tlog import note
from ledger.core.tlog.witness import (
    Refusal,
    add_checkpoint,
    parse_request,
    render_request,
    trusted_logs,
)
from ledger.core.tlog.witness_state import StateDir, Witness, create_witness_key, read_witness_key
from tests.witness_support import Log, witness_signer

T = 1_780_000_000
H = base64.b64encode(bytes(32)).decode()


def refused(body: bytes, logs: note.Verifier | None = None, last: note.Checkpoint | None = None) -> Refusal:
    log = Log().grow(5)
    keys = trusted_logs([logs or log.signer.verifier])
    with pytest.raises(Refusal) as caught:
        add_checkpoint(parse_request(body), keys, last, witness_signer(), T)
    return caught.value


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"", "start with the line 'old <size>'"),
        (b"old 01\n\n", "no leading zeros"),
        (b"old -1\n\n", "old <size>"),
        (b"old 1 \n\n", "old <size>"),
        (b"OLD 1\n\n", "old <size>"),
        (b"old 1", "old <size>"),  # a line must end in a newline
        (b"old 12345678901234567890\n\n", "old <size>"),
        (b"old 0\n" + H.encode() + b"\n", "must end with an empty line"),
        (b"old 0\n!!!!\n\n", "line 1 is not standard base64"),
        (b"old 0\n" + base64.b64encode(bytes(31)) + b"\n\n", "31 bytes"),
        (b"old 0\n" + (H.encode() + b"\n") * 64 + b"\n", "more than 63"),
        (b"old 0\n\nnot a note", "checkpoint is malformed"),
        (b"old 0\n\nlog.example/x\n1\n\n\xe2\x80\x94 k AAAAAAAA\n", "checkpoint is malformed"),
    ],
)
def test_a_malformed_body_is_a_400_saying_what(body: bytes, why: str) -> None:
    with pytest.raises(Refusal, match=why) as caught:
        parse_request(body)
    assert caught.value.status == 400
    assert "\nhint: " in caught.value.body  # what to send instead


def test_a_well_formed_body_is_read_back() -> None:
    log = Log().grow(7)
    request = parse_request(log.body(3))
    assert (request.old, request.proof, request.checkpoint) == (3, tuple(log.prove(3)), log.checkpoint())
    assert len(parse_request(render_request(0, [bytes(32)] * 63, log.note())).proof) == 63  # 63 is allowed


def test_the_statuses_in_the_spec_s_order() -> None:
    log = Log().grow(5)
    stranger = Log("log.example/other").grow(5)
    assert refused(stranger.body(0)).status == 404  # an unknown origin, whatever else is wrong
    impostor = Log(log.origin).grow(5)  # same name, another key: its signature is ignored, none is trusted
    assert refused(impostor.body(0), log.signer.verifier).status == 403
    assert refused(render_request(9, [], log.note()), log.signer.verifier).status == 400  # old > size
    # old ≠ the last cosigned size: 409 with the size; when never cosigned, that size is 0
    conflict = refused(log.body(2), log.signer.verifier)
    assert (conflict.status, conflict.body, conflict.content_type) == (409, "0\n", "text/x.tlog.size")


def test_a_trusted_key_s_failing_signature_is_a_403() -> None:
    log = Log().grow(5)
    good = log.note()
    text, _, line = good.rpartition("\n\n")
    name, encoded = line.strip().split(" ")[1:]
    raw = bytearray(base64.b64decode(encoded))
    raw[-1] ^= 1  # same key name and ID, a signature that fails
    forged = f"{text}\n\n{note.DASH} {name} {base64.b64encode(bytes(raw)).decode()}\n"
    unknown = witness_signer("someone.example/else").signature_line(log.checkpoint().text, T)
    refusal = refused(render_request(0, [], forged + unknown), log.signer.verifier)
    assert refusal.status == 403
    assert "does not verify" in refusal.message


def test_the_422s() -> None:
    log = Log().grow(5)
    last = log.checkpoint(3)
    # a size-0 checkpoint without the empty tree's root
    empty = note.sign(note.Checkpoint(log.origin, 0, bytes(32)).text, log.signer)
    assert refused(render_request(0, [], empty), log.signer.verifier).status == 422
    # a proof with old size 0
    assert refused(log.body(0, proof=log.prove(3)), log.signer.verifier).status == 422
    # the same size as the last cosigned, another root
    fork = Log(key=log.signer.key).grow(3).rewritten(1)
    same = refused(fork.body(3), log.signer.verifier, last)
    assert (same.status, "forked" in same.message) == (422, True)
    # a consistency proof that fails
    bad = [bytes(32), *log.prove(3)[1:]]
    assert refused(log.body(3, proof=bad), log.signer.verifier, last).status == 422
    assert refused(log.body(3, proof=log.prove(3)[:-1]), log.signer.verifier, last).status == 422


def test_a_cosignature_verifies_and_covers_the_checkpoint() -> None:
    log = Log().grow(5)
    signer = witness_signer()
    request = parse_request(log.body(3))
    cosigned = add_checkpoint(request, trusted_logs([log.signer.verifier]), log.checkpoint(3), signer, T)
    assert cosigned.lines.startswith(f"{note.DASH} witness.example/w1 ") and cosigned.lines.count("\n") == 1
    opened = note.open_checkpoint(cosigned.note, log.signer.verifier, [signer.verifier])
    assert opened.checkpoint == log.checkpoint()
    assert [s.timestamp for _, s in opened.cosignatures] == [T]
    assert note.add_signatures(log.note(), note.parse_signature_lines(cosigned.lines)) == cosigned.note


def test_the_empty_tree_and_an_unchanged_tree_are_cosigned() -> None:
    log = Log()
    keys = trusted_logs([log.signer.verifier])
    signer = witness_signer()
    add_checkpoint(parse_request(log.body(0)), keys, None, signer, T)
    log.grow(4)
    add_checkpoint(parse_request(log.body(4)), keys, log.checkpoint(), signer, T)  # same size, same root


# --- the key file and the state ------------------------------------------------------------------------------


def test_the_key_file_holds_its_name_and_is_private(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "witness.key"
    signer, created = create_witness_key(path, "witness.example/w1")
    assert created and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_witness_key(path).verifier == signer.verifier
    assert signer.verifier.kind == note.COSIGNATURE_V1
    again, created = create_witness_key(path, "witness.example/w1")  # same name: kept, never overwritten
    assert (again.verifier, created) == (signer.verifier, False)
    before = path.read_bytes()
    with pytest.raises(Conflict, match=r"already holds the witness key of 'witness\.example/w1'"):
        create_witness_key(path, "witness.example/w2")
    assert path.read_bytes() == before


def test_a_file_that_is_not_a_witness_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotInitialised, match="does not exist"):
        read_witness_key(tmp_path / "missing.key")
    other = tmp_path / "other.pem"
    other.write_text("hello\n")
    with pytest.raises(InvalidInput, match="not a witness key file"):
        create_witness_key(other, "witness.example/w1")
    assert other.read_text() == "hello\n"
    with pytest.raises(InvalidInput, match="no spaces"):
        create_witness_key(tmp_path / "w.key", "a name")


def test_state_is_written_whole_and_read_back(tmp_path: Path) -> None:
    log = Log().grow(3)
    state = StateDir(tmp_path / "state")
    witness = Witness(witness_signer(), [log.signer.verifier], state)
    cosigned = witness.add_checkpoint(log.body(0))
    [stored] = [p for p in (tmp_path / "state").iterdir() if p.name != ".lock"]
    assert stored.read_text() == cosigned.note and stored.name.endswith(".checkpoint")
    with pytest.raises(Conflict, match="another witness process"):
        StateDir(tmp_path / "state")
    state.close()
    again = Witness(witness.signer, [log.signer.verifier], StateDir(tmp_path / "state"))
    assert again.size_of(log.origin) == 3


def test_a_state_file_that_cannot_be_read_stops_the_witness(tmp_path: Path) -> None:
    log = Log().grow(3)
    state = StateDir(tmp_path)
    state.write(log.origin, "garbage\n")
    with pytest.raises(NotInitialised, match="never delete it"):
        Witness(witness_signer(), [log.signer.verifier], state)
    state.write(log.origin, Log("log.example/else").grow(1).note())
    with pytest.raises(NotInitialised, match=r"not 'log\.example/ledger'"):
        Witness(witness_signer(), [log.signer.verifier], state)


def test_a_failed_write_cosigns_nothing_and_leaves_nothing(tmp_path: Path) -> None:
    log = Log().grow(3)
    state = StateDir(tmp_path)
    witness = Witness(witness_signer(), [log.signer.verifier], state)
    blocker = state.file_of(log.origin)
    blocker.mkdir()
    (blocker / "x").write_text("")  # the rename onto a non-empty directory fails, as a full disk would
    with pytest.raises(OSError):
        witness.add_checkpoint(log.body(0))
    assert witness.size_of(log.origin) is None and witness.latest(blocker.name.split(".")[0]) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", blocker.name]
    (blocker / "x").unlink()
    blocker.rmdir()
    witness.add_checkpoint(log.body(0))  # nothing was recorded, so the same request is the first again
    assert witness.size_of(log.origin) == 3


def test_a_witness_key_only() -> None:
    with pytest.raises(InvalidInput, match="type 0x04"):
        Witness(note.Signer("w", Ed25519PrivateKey.generate()), [], None)  # type: ignore[arg-type]
