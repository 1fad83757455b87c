"""The ledger as a transparency log (issue 24), on SQLite and PostgreSQL: C2SP checkpoints signed with the ledger's key
for its origin, inclusion proofs of every event and consistency proofs between checkpoints that verify with the
standard algorithms, offline bundles, and what an attacker with the database cannot hide from a kept checkpoint."""

from __future__ import annotations

import base64

import pytest

from ledger.audit.transparency import ORIGIN_PREFIX
from ledger.core.errors import InvalidInput, NotFound
from ledger.core.storage import SqlEventStore
from ledger.core.tlog import bundle, merkle, note
from ledger.service import Actor, Ledger
from tests.integration.test_tamper import INSERT, disable_chain_triggers, forged_search, raw, rewrite_from

ALICE = Actor("alice", "mcp")


def grow(ledger: Ledger, n: int, word: str = "note") -> None:
    sid = ledger.clock_in(ALICE, "dev").session_id
    for i in range(n):
        # the tag, a label, is stored in the clear (the text is encrypted): an insider's rewrite can find it
        ledger.remember(ALICE, f"what alice learned, {word} {i}", [f"{word}-{i}"], sid)


def opened(ledger: Ledger, text: str) -> note.Checkpoint:
    return note.open_checkpoint(text, note.parse_vkey(ledger.tlog_vkey())).checkpoint


def test_checkpoints_are_c2sp_notes_of_the_tree_of_chain_hashes(ledger: Ledger) -> None:
    grow(ledger, 5)
    head, _ = ledger.store.head()
    signed = ledger.sign_tlog_checkpoint()
    cp = opened(ledger, signed.note)
    first = ledger.store.get(1)
    assert first is not None
    assert cp.origin == ledger.tlog_origin() == ORIGIN_PREFIX + first.hash[:32]
    assert cp.size == head == ledger.store.tree_size() and signed.new
    # the root is RFC 6962's over the leaves "event p's 32-byte chain hash", recomputed here from the log itself
    acc = merkle.CompactRange()
    for rec in ledger.store.iter_records():
        acc.append(merkle.leaf_hash(bytes.fromhex(rec.hash)))
    assert cp.root == acc.root()
    lines = signed.note.split("\n")
    assert lines[:3] == [cp.origin, str(head), base64.b64encode(cp.root).decode()]
    assert lines[3] == "" and lines[4].startswith(f"— {cp.origin} ")
    vkey = ledger.tlog_vkey()
    assert vkey.startswith(cp.origin + "+") and note.parse_vkey(vkey).public == ledger.public_key().raw
    # nothing new: the same checkpoint comes back, unsigned again
    again = ledger.sign_tlog_checkpoint()
    assert again.note == signed.note and not again.new and ledger.latest_tlog_checkpoint() == again


def test_every_event_has_an_inclusion_proof_and_checkpoints_are_consistent(ledger: Ledger) -> None:
    grow(ledger, 7)
    first = ledger.sign_tlog_checkpoint()
    grow(ledger, 9, "more")
    second = ledger.sign_tlog_checkpoint()
    a, b = opened(ledger, first.note), opened(ledger, second.note)
    for position in range(1, b.size + 1):
        leaf, proof = ledger.tlog_inclusion(position - 1, b.size)
        record = ledger.store.get(position)
        assert record is not None and leaf == bytes.fromhex(record.hash)
        assert len(proof) <= (b.size - 1).bit_length()
        merkle.verify_inclusion(position - 1, b.size, merkle.leaf_hash(leaf), proof, b.root)
    merkle.verify_consistency(a.size, b.size, ledger.tlog_consistency(a.size, b.size), a.root, b.root)
    assert ledger.tlog_consistency(b.size, b.size) == []


@pytest.mark.parametrize(
    ("call", "why"),
    [
        (lambda lg, n: lg.tlog_inclusion(n, n), "not in a tree"),
        (lambda lg, n: lg.tlog_inclusion(-1, n), "not in a tree"),
        (lambda lg, n: lg.tlog_inclusion(0, n + 1), "past the log's tree"),
        (lambda lg, n: lg.tlog_consistency(0, n), "1 ≤ old ≤ size"),
        (lambda lg, n: lg.tlog_consistency(n, n - 1), "1 ≤ old ≤ size"),
        (lambda lg, n: lg.tlog_consistency(1, n + 5), "past the log's tree"),
    ],
)
def test_bad_proof_requests_say_what_to_send(ledger: Ledger, call, why: str) -> None:  # type: ignore[no-untyped-def]
    grow(ledger, 2)
    n = ledger.store.tree_size()
    with pytest.raises(InvalidInput, match=why) as caught:
        call(ledger, n)
    assert caught.value.hint


def test_bundles_verify_offline_for_every_covered_event(ledger: Ledger) -> None:
    grow(ledger, 4)
    covered = ledger.sign_tlog_checkpoint().size
    grow(ledger, 2, "later")
    log = note.parse_vkey(ledger.tlog_vkey())
    for position in (1, covered // 2, covered):
        text = ledger.tlog_bundle(position)
        assert text.startswith(f"{bundle.HEADER}\nindex {position - 1}\n")
        verified = bundle.verify(text, ledger.store.leaf_data(position), log)
        assert verified.checkpoint.checkpoint.size == covered
        with pytest.raises(merkle.ProofError):
            bundle.verify(text, ledger.store.leaf_data(position % covered + 1), log)
    with pytest.raises(NotFound, match="no checkpoint covers position") as caught:
        ledger.tlog_bundle(covered + 1)
    assert "tlog checkpoint" in caught.value.hint


def unprotect(store: SqlEventStore) -> None:
    """Drop the append-only and chain triggers of the events (whose rows hold their authenticators and the tree)."""
    disable_chain_triggers(store)


def raw_hashes(store: SqlEventStore) -> list[tuple[int, str]]:
    with store.engine.connect() as conn:
        return [
            (int(p), str(h)) for p, h in conn.exec_driver_sql("SELECT position, hash FROM events ORDER BY position")
        ]


def reseal(store: SqlEventStore) -> None:
    """What an insider holding the ledger's key files does after rewriting rows: authenticate every row again and
    rebuild the stored tree to match the log as it now is. The ledger then serves the forged log without a
    complaint; only what was kept outside it (checkpoints, witnesses, a follower's state) can tell."""
    key = store.row_key
    assert key is not None
    rows = raw_hashes(store)
    hashes: list[bytes] = []
    for i, (position, hex_hash) in enumerate(rows):
        leaf = merkle.leaf_hash(bytes.fromhex(hex_hash))
        stored = merkle.new_stored_hashes(i, leaf, lambda ix: [hashes[j] for j in ix])
        hashes.extend(stored)
        raw(
            store,
            "UPDATE events SET mac = ?, tree = ? WHERE position = ?",
            (key.mac(bytes.fromhex(hex_hash)), b"".join(stored), position),
        )
    store._head = None  # the writes bypassed the store's cached head


def holding(ledger: Ledger, text: str) -> int:
    """The position of the (first) event whose payload holds ``text``."""
    return next(r.position for r in ledger.store.iter_records() if text in r.data_json)


def insider_rewrite(ledger: Ledger, old: str, new: str, append: int = 0, sid: str | None = None) -> int:
    """Rewrite the event holding ``old``, re-hash the chain after it, append ``append`` forged searches for ``sid``,
    and reseal: an attacker with the database and the ledger's key files. Returns the rewritten position."""
    position = holding(ledger, old)
    unprotect(ledger.store)
    rewrite_from(ledger.store, position, old, new)
    for _ in range(append):
        head, head_hash = raw_hashes(ledger.store)[-1]
        with ledger.store.engine.connect() as conn:
            version = conn.exec_driver_sql(
                ledger.store.sql("SELECT MAX(version) FROM events WHERE stream = ?"), (f"session:{sid}",)
            ).scalar()
        raw(ledger.store, INSERT, forged_search(ledger.store, str(sid), head + 1, int(version) + 1, head_hash))
    reseal(ledger.store)
    return position


def test_a_rewrite_rehashed_to_the_end_cannot_hide_from_a_kept_checkpoint(ledger: Ledger) -> None:
    grow(ledger, 8)
    sid = ledger.clock_in(ALICE, "dev").session_id
    kept = ledger.sign_tlog_checkpoint()
    old = opened(ledger, kept.note)
    assert [f.problem for f in ledger.check_checkpoint_notes([("kept.note", kept.note)])] == [None]
    # an insider rewrites event 5, re-hashes the chain after it, appends two rows of its own, authenticates them
    # all and rebuilds the stored tree to match: everything an attacker with the database and the key files can do
    insider_rewrite(ledger, '"note-2"', '"note-x"', append=2, sid=sid)
    assert ledger.verify().ok  # the ledger itself sees nothing wrong
    size = ledger.store.tree_size()
    assert size == old.size + 2
    # the note kept elsewhere names the file and what broke
    [finding] = ledger.check_checkpoint_notes([("kept.note", kept.note)])
    assert finding.where == "kept.note" and finding.problem is not None and "rewritten" in finding.problem
    # no consistency proof the ledger can now give leads from the kept root to its new tree
    for new_size in (old.size, size):
        with pytest.raises(merkle.ProofError):
            merkle.verify_consistency(
                old.size,
                new_size,
                ledger.tlog_consistency(old.size, new_size),
                old.root,
                ledger.store.tree_root(new_size),
            )


def test_a_truncated_log_fails_a_kept_checkpoint_naming_the_file(ledger: Ledger) -> None:
    grow(ledger, 6)
    kept = ledger.sign_tlog_checkpoint()
    disable_chain_triggers(ledger.store)
    raw(ledger.store, "DELETE FROM events WHERE position > ?", (kept.size - 2,))
    [finding] = ledger.check_checkpoint_notes([("/kept/cp.note", kept.note)])
    assert finding.problem is not None and "removed" in finding.problem and finding.where == "/kept/cp.note"


def test_a_note_signed_by_another_key_is_not_this_ledgers(ledger: Ledger) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    grow(ledger, 2)
    size = ledger.store.tree_size()
    impostor = note.Signer(ledger.tlog_origin(), Ed25519PrivateKey.generate())
    forged = note.sign(note.Checkpoint(ledger.tlog_origin(), size, ledger.store.tree_root(size)).text, impostor)
    [finding] = ledger.check_checkpoint_notes([("forged.note", forged)])
    assert finding.problem is not None and "not a checkpoint of this ledger" in finding.problem
