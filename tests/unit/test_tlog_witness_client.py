"""The log's witness client against answers a real witness never gives (a fake transport; the real server is in
tests/e2e/test_witness.py): a cosignature of the witness's key that fails, one with a zero timestamp, a 409 that is
not the protocol's, a second 409, lines of other keys ignored."""

from __future__ import annotations

import base64
from collections.abc import Callable

import httpx
import pytest

from ledger.core.tlog import note
from ledger.core.tlog.witness import parse_request
from ledger.core.tlog.witness_client import BadCosignature, WitnessError, WitnessRefused, request_cosignatures
from tests.witness_support import Log, witness_signer

T = 1_780_000_000
URL = "http://witness.test/prefix"


def answering(*answers: httpx.Response) -> tuple[httpx.Client, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(answers)

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    return httpx.Client(transport=httpx.MockTransport(handle)), seen


def ask(log: Log, witness: note.Signer, client: httpx.Client, old: int = 0) -> tuple[list[note.Signature], int]:
    prove: Callable[[int], list[bytes]] = log.prove
    return request_cosignatures(URL, witness.verifier, log.note(), old, prove, 1.0, client=client)


def test_lines_of_other_keys_are_ignored_and_the_witness_s_own_returned() -> None:
    log, witness = Log().grow(4), witness_signer()
    text = log.checkpoint().text
    other = witness_signer("witness.example/other").signature_line(text, T)
    mine = witness.signature_line(text, T)
    client, seen = answering(httpx.Response(200, text=other + mine))
    signatures, used = ask(log, witness, client)
    assert ([s.line for s in signatures], used) == ([mine], 0)
    assert str(seen[0].url) == URL + "/add-checkpoint"
    assert parse_request(seen[0].content).checkpoint == log.checkpoint()


def test_a_failing_or_untimed_cosignature_of_the_witness_s_key_fails_the_call() -> None:
    log, witness = Log().grow(4), witness_signer()
    line = witness.signature_line(log.checkpoint().text, T)
    raw = bytearray(base64.b64decode(line.split(" ")[2]))
    raw[-1] ^= 1
    broken = f"{note.DASH} {witness.name} {base64.b64encode(bytes(raw)).decode()}\n"
    with pytest.raises(BadCosignature, match="does not verify"):
        ask(log, witness, answering(httpx.Response(200, text=broken))[0])
    # a valid signature over time 0: the spec forbids omitting the timestamp ("MUST NOT be zero")
    signed = witness.key.sign(note.cosigned_message(log.checkpoint().text, 0))
    untimed = witness.verifier.id + bytes(8) + signed
    assert witness.verifier.verify(log.checkpoint().text, untimed[4:])
    zero = f"{note.DASH} {witness.name} {base64.b64encode(untimed).decode()}\n"
    with pytest.raises(BadCosignature, match="timestamp 0"):
        ask(log, witness, answering(httpx.Response(200, text=zero))[0])
    with pytest.raises(WitnessRefused, match="something other than signature lines"):
        ask(log, witness, answering(httpx.Response(200, text="ok"))[0])


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ({"content-type": "text/plain"}, "3\n"),
        ({"content-type": "text/x.tlog.size"}, "3"),
        ({"content-type": "text/x.tlog.size"}, "03\n"),
        ({"content-type": "text/x.tlog.size"}, ""),
    ],
)
def test_a_409_that_is_not_the_protocol_s_is_a_refusal(headers: dict[str, str], body: str) -> None:
    log, witness = Log().grow(4), witness_signer()
    client, seen = answering(httpx.Response(409, headers=headers, text=body))
    with pytest.raises(WitnessRefused, match="409 without its size") as refused:
        ask(log, witness, client)
    assert (refused.value.status, refused.value.body, len(seen)) == (409, body, 1)


def test_one_retry_only_with_the_proof_from_the_witness_s_size() -> None:
    log, witness = Log().grow(9), witness_signer()
    size = {"content-type": "text/x.tlog.size"}
    client, seen = answering(
        httpx.Response(409, headers=size, text="4\n"), httpx.Response(409, headers=size, text="6\n")
    )
    with pytest.raises(WitnessRefused, match="refused the checkpoint of size 9: HTTP 409, '6\\\\n'"):
        ask(log, witness, client, old=2)
    first, second = (parse_request(r.content) for r in seen)
    assert (first.old, first.proof) == (2, tuple(log.prove(2)))
    assert (second.old, second.proof) == (4, tuple(log.prove(4)))


def test_what_is_not_a_checkpoint_is_not_sent() -> None:
    client, seen = answering()
    with pytest.raises(WitnessError, match="not a checkpoint"):
        request_cosignatures(URL, witness_signer().verifier, "hello\n\n— x AAAAAAA=\n", 0, list, 1.0, client=client)
    assert seen == []
