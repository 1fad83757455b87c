"""The witness over real HTTP on loopback (c2sp.org/tlog-witness): every status of add-checkpoint, the cosignature
lines, the monitoring API, the spec's rollback race (concurrent requests from threads), a rewritten log refused and
never cosigned, and the log's client against it (409 then retry, a refusal quoted)."""

from __future__ import annotations

import datetime as _dt
import logging
import threading
from pathlib import Path

import httpx
import pytest

from api.witness import MAX_BODY_BYTES
from ledger.core.tlog import note
from ledger.core.tlog.witness import render_request
from ledger.core.tlog.witness_client import BadCosignature, WitnessRefused, WitnessUnreachable, request_cosignatures
from ledger.core.tlog.witness_state import StateDir, Witness, origin_hash
from tests.server_support import HTTP_TIMEOUT, READY_WITHIN, wait_until
from tests.witness_support import Log, witness_serving, witness_signer

T0 = _dt.datetime(2026, 3, 1, 12, 0, tzinfo=_dt.UTC)


def make_witness(tmp_path: Path, *logs: Log) -> Witness:
    return Witness(witness_signer(), [log.signer.verifier for log in logs], StateDir(tmp_path / "state"))


def post(http: httpx.Client, body: bytes) -> httpx.Response:
    return http.post("/add-checkpoint", content=body)


def test_every_status_of_add_checkpoint(tmp_path: Path) -> None:
    log, other = Log().grow(5), Log("log.example/other")
    witness = make_witness(tmp_path, log, other)
    with (
        witness_serving(witness, frozen_at=T0) as url,
        httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as http,
    ):
        assert post(http, Log("log.example/unknown").grow(1).body(0)).status_code == 404
        assert post(http, Log(log.origin).grow(5).body(0)).status_code == 403  # the origin's name, not its key
        malformed = post(http, b"old 0\nnot base64!\n\n" + log.note().encode())
        assert malformed.status_code == 400 and "not standard base64" in malformed.text
        assert post(http, render_request(6, [], log.note())).status_code == 400  # old > size
        assert post(http, log.body(3)).status_code == 409  # never cosigned: the witness holds 0

        first = post(http, log.body(0))
        assert first.status_code == 200 and first.headers["content-type"].startswith("text/plain")
        [line] = note.parse_signature_lines(first.text)
        assert line.timestamp == int(T0.timestamp())
        opened = note.open_note(log.note() + first.text, [witness.verifier])
        assert [(v.kind, s.line) for v, s in opened.verified] == [(note.COSIGNATURE_V1, first.text)]

        for old in (0, 3, 4):
            conflict = post(http, log.body(old))
            assert (conflict.status_code, conflict.text) == (409, "5\n")
            assert conflict.headers["content-type"] == "text/x.tlog.size"  # exactly, no charset

        fork = log.rewritten(2)
        assert post(http, fork.body(5)).status_code == 422  # same size, another root
        log.grow(3)
        bad_proof = [bytes(32), *log.prove(5)[1:]]
        assert post(http, log.body(5, proof=bad_proof)).status_code == 422
        assert post(http, log.body(5, proof=[])).status_code == 422
        # the other log, never cosigned: a proof with old 0, and a size-0 checkpoint with a root other than the empty
        other.grow(4)
        assert post(http, other.body(0, proof=other.prove(2))).status_code == 422
        empty = note.sign(note.Checkpoint(other.origin, 0, bytes(32)).text, other.signer)
        assert post(http, render_request(0, [], empty)).status_code == 422
        assert post(http, b"old 0\n\n" + b"x" * MAX_BODY_BYTES).status_code == 413

        monitor = http.get(f"/{origin_hash(log.origin)}/checkpoint")
        assert (
            monitor.status_code == 200 and note.open_checkpoint(monitor.text, log.signer.verifier).checkpoint.size == 5
        )

        second = post(http, log.body(5))
        assert second.status_code == 200
        monitor = http.get(f"/{origin_hash(log.origin)}/checkpoint")
        assert http.get(f"/{origin_hash(other.origin)}/checkpoint").status_code == 404  # never cosigned
        assert http.get(f"/{origin_hash('log.example/unknown')}/checkpoint").status_code == 404
        assert http.get("/not-a-hash/checkpoint").status_code == 404
    # the monitoring API: the log's signature the witness verified and its own cosignature, nothing else
    served = note.open_checkpoint(monitor.text, log.signer.verifier, [witness.verifier])
    assert served.checkpoint == log.checkpoint()
    assert [s.line for _, s in served.cosignatures] == [second.text]
    assert len(served.note.signatures) == 2


def test_other_signatures_are_ignored_and_dropped_from_the_state(tmp_path: Path) -> None:
    log = Log().grow(3)
    witness = make_witness(tmp_path, log)
    elsewhere = witness_signer("witness.example/other").signature_line(log.checkpoint().text, 1_700_000_000)
    with witness_serving(witness) as url, httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as http:
        answer = post(http, render_request(0, [], log.note() + elsewhere))
        assert answer.status_code == 200
        stored = http.get(f"/{origin_hash(log.origin)}/checkpoint").text
    assert elsewhere not in stored and stored == log.note() + answer.text


class GatedState(StateDir):
    """A state directory whose first write waits until every request of the burst is inside the witness: without
    the per-log lock, each of them would by then have checked the old size against the same state."""

    def __init__(self, path: Path, burst: int) -> None:
        super().__init__(path)
        self.burst = burst
        self.entered = 0
        self.gated = False
        self.guard = threading.Lock()

    def write(self, origin: str, text: str) -> None:
        if self.gated:
            wait_until(lambda: self.entered >= self.burst, "every request of the burst to reach the witness")
        super().write(origin, text)


class CountingWitness(Witness):
    def add_checkpoint(self, body: bytes):  # type: ignore[no-untyped-def]
        state = self.state
        assert isinstance(state, GatedState)
        with state.guard:
            state.entered += 1
        return super().add_checkpoint(body)


def test_the_spec_s_rollback_race_cannot_happen(tmp_path: Path) -> None:
    """tlog-witness's race: A (size N) and B (size N+K) both checked against the old state, B persisted, then A,
    rolling the witness back K leaves. Here eight requests for eight sizes, all from the same old size, arrive
    together: one is cosigned, every other gets 409 with the winner's size, and the state is the winner's."""
    log = Log().grow(10)
    burst = 8
    state = GatedState(tmp_path / "state", burst)
    witness = CountingWitness(witness_signer(), [log.signer.verifier], state)
    witness.add_checkpoint(log.body(0, size=2))  # before the burst, ungated
    state.entered, state.gated = 0, True
    log.grow(burst)
    bodies = {size: log.body(2, size=size) for size in range(11, 11 + burst)}
    start = threading.Barrier(burst, timeout=READY_WITHIN)
    answers: dict[int, httpx.Response] = {}

    def send(url: str, size: int) -> None:
        with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as http:
            start.wait()
            answers[size] = post(http, bodies[size])

    with witness_serving(witness) as url:
        threads = [threading.Thread(target=send, args=(url, size)) for size in bodies]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=READY_WITHIN)
    assert len(answers) == burst
    won = [size for size, answer in answers.items() if answer.status_code == 200]
    assert len(won) == 1, {size: (a.status_code, a.text) for size, a in answers.items()}
    assert {(a.status_code, a.text) for s, a in answers.items() if s != won[0]} == {(409, f"{won[0]}\n")}
    assert witness.size_of(log.origin) == won[0]
    restarted = Witness(witness.signer, [log.signer.verifier], _reopen(state))
    assert restarted.size_of(log.origin) == won[0]


def _reopen(state: StateDir) -> StateDir:
    state.close()
    return StateDir(state.path)


def test_a_rewritten_log_is_refused_and_never_cosigned(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """An attacker with the log's database and key rewrites leaf 3 and re-hashes everything after it. No proof
    from the cosigned tree leads to the rewritten one, the same size with another root is a fork, and starting
    over from 0 is a 409: the witness holds the honest size and cosigns nothing of the rewritten log."""
    honest = Log().grow(8)
    witness = make_witness(tmp_path, honest)
    with witness_serving(witness) as url, httpx.Client(base_url=url, timeout=HTTP_TIMEOUT) as http:
        assert post(http, honest.body(0)).status_code == 200
        cosigned = http.get(f"/{origin_hash(honest.origin)}/checkpoint").text
        forged = honest.rewritten(3).grow(4)
        with caplog.at_level(logging.WARNING):
            longer = post(http, forged.body(8))  # its own proof from 8, against the witness's size-8 root
            same = post(http, render_request(8, [], forged.note(8)))
        restart = post(http, forged.body(0))
        with pytest.raises(WitnessRefused, match="HTTP 422") as client:
            request_cosignatures(url, witness.verifier, forged.note(), 8, forged.prove, READY_WITHIN)
        after = http.get(f"/{origin_hash(honest.origin)}/checkpoint").text
    assert (longer.status_code, same.status_code) == (422, 422)
    assert "not consistent with the one of size 8" in longer.text and "forked" in same.text
    assert (restart.status_code, restart.text) == (409, "8\n")
    assert client.value.status == 422 and "not consistent" in str(client.value)
    assert after == cosigned and witness.size_of(honest.origin) == 8
    assert any("refused (422)" in r.getMessage() and forged.note() in r.getMessage() for r in caplog.records)


def test_the_client_retries_a_409_with_a_proof_from_the_witness_s_size(tmp_path: Path) -> None:
    log = Log().grow(5)
    witness = make_witness(tmp_path, log)
    asked: list[int] = []

    def prove(old: int) -> list[bytes]:
        asked.append(old)
        return log.prove(old)

    with witness_serving(witness, frozen_at=T0) as url:
        first, used = request_cosignatures(url, witness.verifier, log.note(), 0, prove, READY_WITHIN)
        assert (used, asked, [s.timestamp for s in first]) == (0, [], [int(T0.timestamp())])
        log.grow(6)
        again, used = request_cosignatures(url + "/", witness.verifier, log.note(), 0, prove, READY_WITHIN)
        assert (used, asked) == (5, [5])  # 409 "5": retried once, with the proof from 5
        opened = note.open_checkpoint(note.add_signatures(log.note(), again), log.signer.verifier, [witness.verifier])
        assert opened.checkpoint.size == 11 and len(opened.cosignatures) == 1
        # a witness whose key is not the one the log trusts: its lines are ignored, so none is left
        impostor = witness_signer(witness.verifier.name).verifier
        log.grow(1)
        with pytest.raises(BadCosignature, match="no cosignature by its key"):
            request_cosignatures(url, impostor, log.note(), 11, prove, READY_WITHIN)
        # the witness holds 12 now; a checkpoint of size 11 cannot be brought up to it
        with pytest.raises(WitnessRefused, match="has cosigned size 12, more than this checkpoint's 11") as back:
            request_cosignatures(url, witness.verifier, log.note(11), 0, prove, READY_WITHIN)
        assert (back.value.status, back.value.body) == (409, "12\n")
        with pytest.raises(WitnessRefused, match="refused the checkpoint of size 12: HTTP 404"):
            request_cosignatures(url, witness.verifier, Log("log.example/x").grow(12).note(), 0, prove, READY_WITHIN)
    with pytest.raises(WitnessUnreachable, match="did not answer"):
        request_cosignatures(url, witness.verifier, log.note(), 12, prove, 5.0)
