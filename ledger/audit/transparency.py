"""The ledger as a standard transparency log: its origin and verifier key, C2SP checkpoints signed with the ledger's
key and cosigned by its witnesses, inclusion and consistency proofs, and offline proof bundles.

* **The tree** is the store's (``SqlEventStore.tree_*``): leaf p − 1 is the 32 raw bytes of event p's chain hash.
* **The origin** is ``compliance-ledger/<the first 32 hex digits of position 1's chain hash>``: unique to this
  ledger (position 1 is its ``LedgerInitialised``, whose hash covers the moment it was created and its receipt key
  ID) and stable (position 1 never changes). It is also the key name of the ledger's signatures.
* **Checkpoints** are kept in the table ``tlog_checkpoints`` (one row per signed size, the note with its
  cosignatures), so every node of one database serves the same ones. A checkpoint is kept only once it carries the
  cosignatures the policy asks for; when the witnesses refuse, nothing is kept and the refusal is raised, quoted.
  One node signs at a time (the lease ``TLOG_LEASE``, :mod:`ledger.core.storage.leases`), so witnesses see the
  sizes in order; the background signer of each node skips its turn while another holds it, and measures its
  interval from the newest kept checkpoint, whoever signed it (:meth:`TransparencyCommands.sign_checkpoint_if`).
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ledger.core.canonical import format_ts
from ledger.core.errors import InvalidInput, LedgerError, NotFound, NotInitialised
from ledger.core.storage import TLOG_LEASE, translate_errors
from ledger.core.tlog import bundle, merkle, note
from ledger.core.tlog.policy import Witness, required_cosignatures
from ledger.kernel import Kernel

ORIGIN_PREFIX = "compliance-ledger/"
WITNESS_SECONDS = 20.0
"""The longest one witness may take to cosign: two requests (the second with the size it holds) of the witness
client's 10 s timeout each."""
SIGN_SECONDS = 30.0
"""The longest signing takes besides the witnesses (the tree's root and the consistency proof)."""

_DDL = {
    "sqlite": """CREATE TABLE IF NOT EXISTS tlog_checkpoints (
        size INTEGER PRIMARY KEY, note TEXT NOT NULL, signed_at TEXT NOT NULL)""",
    "postgresql": """CREATE TABLE IF NOT EXISTS tlog_checkpoints (
        size BIGINT PRIMARY KEY, note TEXT NOT NULL, signed_at TEXT NOT NULL)""",
}


class WitnessQuorumFailed(LedgerError):
    """The witnesses did not cosign enough: the checkpoint is not kept. Each witness's answer is quoted."""

    code = "witness_quorum_failed"
    status = 502


@dataclass(frozen=True)
class Signed:
    """A checkpoint: its note (with cosignatures), its size, who cosigned, whether this call signed it, and when it
    was kept (``signed_at``, the ledger's timestamp format)."""

    note: str
    size: int
    cosigned_by: tuple[str, ...]
    new: bool
    signed_at: str = ""


@dataclass(frozen=True)
class NoteFinding:
    """A C2SP checkpoint note checked against the log: ``problem`` is None when the log still holds its tree."""

    where: str
    size: int | None
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None


def origin_of(first_hash: str) -> str:
    return ORIGIN_PREFIX + first_hash[:32]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


Cosigner = Callable[[Witness, str, int, Callable[[int], list[bytes]]], list[note.Signature]]
"""Asks one witness to cosign a note: (witness, note, old size, consistency prover) → its verified cosignatures."""


class TransparencyCommands:
    """Checkpoints, proofs and bundles of this ledger's tree."""

    def __init__(
        self,
        kernel: Kernel,
        witnesses: Sequence[Witness] = (),
        min_cosignatures: int | None = None,
        cosigner: Cosigner | None = None,
    ) -> None:
        self.kernel = kernel
        self.witnesses = tuple(witnesses)
        self.required = required_cosignatures(self.witnesses, min_cosignatures)
        self._cosigner = cosigner
        self._origin: str | None = None
        self._lock = threading.Lock()  # one signer at a time in this process: witnesses see sizes in order

    # --- identity --------------------------------------------------------------------------------------------

    def create_schema(self) -> None:
        store = self.kernel.store
        with translate_errors(store.dialect), store.engine.begin() as conn:
            conn.exec_driver_sql(_DDL[store.dialect])

    @property
    def origin(self) -> str:
        if self._origin is None:
            first = self.kernel.store.get(1)
            if first is None:
                raise NotInitialised(
                    "the ledger holds no events yet, so it has no origin", "run `compliance-ledger init`"
                )
            self._origin = origin_of(first.hash)
        return self._origin

    def verifier(self) -> note.Verifier:
        """The ledger's note verifier key (type 0x01, named by the origin), from its public key."""
        public = self.kernel.verifying_key()
        if public is None:
            raise NotInitialised("this ledger has no signing key", "run `compliance-ledger init` to create one")
        return note.Verifier(self.origin, note.ED25519, public.raw)

    def vkey(self) -> str:
        return self.verifier().vkey

    def _signer(self) -> note.Signer:
        return note.Signer(self.origin, self.kernel.require_signer().key)

    # --- checkpoints -----------------------------------------------------------------------------------------

    def latest(self) -> Signed | None:
        """The newest kept checkpoint (None before the first)."""
        row = self._query("SELECT size, note, signed_at FROM tlog_checkpoints ORDER BY size DESC LIMIT 1")
        return self._kept(row[0]) if row else None

    def covering(self, size: int) -> Signed | None:
        """The smallest kept checkpoint whose tree holds ``size`` leaves or more."""
        row = self._query(
            "SELECT size, note, signed_at FROM tlog_checkpoints WHERE size >= ? ORDER BY size LIMIT 1", (size,)
        )
        return self._kept(row[0]) if row else None

    def _kept(self, row: tuple[int, str, str]) -> Signed:
        size, text = int(row[0]), str(row[1])
        opened = note.open_checkpoint(text, self.verifier(), [w.verifier for w in self.witnesses])
        return Signed(text, size, tuple(v.name for v, _ in opened.cosignatures), False, str(row[2]))

    def _query(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[int, str, str]]:
        store = self.kernel.store
        with translate_errors(store.dialect), store.engine.connect() as conn:
            return [tuple(r) for r in conn.exec_driver_sql(store.sql(sql), params).fetchall()]  # type: ignore[misc]

    def sign_checkpoint(self) -> Signed:
        """Sign a checkpoint of the whole tree, get the witnesses' cosignatures, keep it and return it. When the tree
        has not grown since the newest kept checkpoint, that one is returned (``new`` False). Waits while another
        node signs one (as long as signing may take, :meth:`_bound`; then ``StoreBusy``)."""
        bound = self._bound()
        with self.kernel.store.lease(TLOG_LEASE, wait=True, hold=bound, patience=bound):
            return self._sign()

    def sign_head(self, size: int) -> str:
        """A checkpoint note of the tree of ``size`` leaves signed with the ledger's key, kept nowhere and sent to no
        witness: the log stays as it was (``carry`` records the note in the ledger it carries this one to). The tree
        is the stored one: verify the log first (:meth:`~ledger.audit.handlers.AuditCommands.verify` recomputes it)."""
        self._sizes(size)
        if size < 1:
            raise InvalidInput("the ledger holds no events to checkpoint", "run `compliance-ledger init` first")
        checkpoint = note.Checkpoint(self.origin, size, self.kernel.store.tree_root(size))
        return note.sign(checkpoint.text, self._signer())

    def sign_checkpoint_if(self, due: Callable[[Signed | None, int], bool]) -> Signed | None:
        """Sign a checkpoint when ``due(newest kept checkpoint, tree size)`` says so, as the one node doing it: a
        node that finds another signing skips (``None``), as it does when nothing is due. ``due`` sees the newest
        checkpoint kept by any node, read under the lease, so nodes sign at the configured rate between them."""
        with self.kernel.store.lease(TLOG_LEASE, hold=self._bound()) as held:
            if not held:
                return None
            if not due(self.latest(), self.kernel.store.tree_size()):
                return None
            return self._sign()

    def _bound(self) -> float:
        """How long a node may rightly hold the signing lease, and another wait for it: the witnesses' answers."""
        return SIGN_SECONDS + WITNESS_SECONDS * len(self.witnesses)

    def _sign(self) -> Signed:
        with self._lock:
            last = self.latest()
            size = self.kernel.store.tree_size()
            if size < 1:
                raise InvalidInput("the ledger holds no events to checkpoint", "run `compliance-ledger init` first")
            if last is not None and size < last.size:
                raise InvalidInput(
                    f"the log's tree holds {size} leaves, fewer than the {last.size} of the last checkpoint: events "
                    "were removed",
                    "check it with `compliance-ledger verify`; do not sign a checkpoint of a shorter log",
                )
            if last is not None and size == last.size:
                return last
            checkpoint = note.Checkpoint(self.origin, size, self.kernel.store.tree_root(size))
            if last is not None:  # the log never signs a tree its last checkpoint is not a prefix of
                proof = self.kernel.store.prove_consistency(last.size, size)
                last_root = note.parse_checkpoint(note.parse(last.note).text).root
                merkle.verify_consistency(last.size, size, proof, last_root, checkpoint.root)
            signed = note.sign(checkpoint.text, self._signer())

            def prove(old: int) -> list[bytes]:
                return self.kernel.store.prove_consistency(old, size) if old else []

            cosigned, names = self._cosign(signed, last.size if last is not None else 0, prove)
            at = self._keep(size, cosigned)
            return Signed(cosigned, size, names, True, at)

    def _cosign(self, signed: str, old_size: int, prove: Callable[[int], list[bytes]]) -> tuple[str, tuple[str, ...]]:
        if not self.witnesses:
            return signed, ()
        cosigner = self._cosigner or _default_cosigner
        lines: list[note.Signature] = []
        names: list[str] = []
        refusals: list[str] = []
        for witness in self.witnesses:
            try:
                got = cosigner(witness, signed, old_size, prove)
            except (note.NoteError, merkle.ProofError, LedgerError, OSError) as exc:
                refusals.append(f"{witness.name} ({witness.url}): {exc}")
                continue
            lines.extend(got)
            names.append(witness.name)
        if len(names) < self.required:
            raise WitnessQuorumFailed(
                f"{len(names)} of the {len(self.witnesses)} witnesses cosigned the checkpoint, "
                f"{self.required} are required: " + "; ".join(refusals),
                "a witness that refuses a consistency proof has seen another version of this log: check it with "
                "`compliance-ledger verify --checkpoint` and the witness's last checkpoint; a witness that cannot be "
                "reached must be brought back",
            )
        return note.add_signatures(signed, lines), tuple(names)

    def _keep(self, size: int, text: str) -> str:
        store = self.kernel.store
        at = format_ts(self.kernel.clock())
        upsert = {
            "sqlite": "INSERT OR IGNORE INTO tlog_checkpoints (size, note, signed_at) VALUES (?, ?, ?)",
            "postgresql": "INSERT INTO tlog_checkpoints (size, note, signed_at) VALUES (?, ?, ?) "
            "ON CONFLICT (size) DO NOTHING",
        }[store.dialect]
        with translate_errors(store.dialect), store.engine.begin() as conn:
            conn.exec_driver_sql(store.sql(upsert), (size, text, at))
        return at

    # --- proofs ----------------------------------------------------------------------------------------------

    def _sizes(self, size: int) -> None:
        tree = self.kernel.store.tree_size()
        if size > tree:
            raise InvalidInput(
                f"size {size} is past the log's tree, which holds {tree} leaves", f"ask for a size from 1 to {tree}"
            )

    def inclusion(self, index: int, size: int) -> tuple[bytes, list[bytes]]:
        """The leaf data of leaf ``index`` (event ``index + 1``'s chain hash) and its inclusion proof in the tree of
        ``size`` leaves."""
        if index < 0 or size < 1 or index >= size:
            raise InvalidInput(
                f"leaf index {index} is not in a tree of {size} leaves",
                "send 0 ≤ index < size (the event at position p is leaf p - 1)",
            )
        self._sizes(size)
        return self.kernel.store.leaf_data(index + 1), self.kernel.store.prove_inclusion(index, size)

    def consistency(self, old: int, size: int) -> list[bytes]:
        """The proof that the tree of ``old`` leaves is a prefix of the tree of ``size`` leaves."""
        if old < 1 or old > size:
            raise InvalidInput(
                f"no consistency proof from size {old} to size {size}", "send 1 ≤ old ≤ size (both tree sizes)"
            )
        self._sizes(size)
        return self.kernel.store.prove_consistency(old, size)

    def bundle(self, position: int) -> str:
        """A c2sp.org/tlog-proof@v1 bundle for the event at ``position``, against the smallest kept checkpoint that
        covers it."""
        if position < 1:
            raise InvalidInput(f"position {position} is not an event's", "send a position of the log, 1 or more")
        kept = self.covering(position)
        if kept is None:
            latest = self.latest()
            covered = f"the newest checkpoint covers positions 1 to {latest.size}" if latest else "none is kept yet"
            raise NotFound(
                f"no checkpoint covers position {position} ({covered})",
                "sign one with `compliance-ledger tlog checkpoint` (serve signs them as the log grows)",
            )
        proof = self.kernel.store.prove_inclusion(position - 1, kept.size)
        return bundle.Bundle(position - 1, tuple(proof), kept.note).render()

    # --- checking notes against the log ----------------------------------------------------------------------

    def check_notes(self, notes: Sequence[tuple[str, str]], verifier: note.Verifier | None = None) -> list[NoteFinding]:
        """Check checkpoint notes (``(where, text)``) against the log: each must be signed by the ledger's key
        (``verifier``, default this ledger's) for this origin, and the log's events 1..size must still hash to its
        root. The roots are recomputed from the events' chain hashes (the stored tree is not trusted)."""
        verifier = verifier or self.verifier()
        opened: list[tuple[str, note.Checkpoint | None, str | None]] = []
        for where, text in notes:
            try:
                signed = note.open_checkpoint(text, verifier, origin=verifier.name).checkpoint
            except note.NoteError as exc:
                opened.append((where, None, f"not a checkpoint of this ledger: {exc}"))
                continue
            opened.append((where, signed, None))
        sizes = {c.size for _, c, _ in opened if c is not None}
        roots, head = self._roots_at(sizes)
        findings = []
        for where, found, problem in opened:
            if found is None:
                findings.append(NoteFinding(where, None, problem))
                continue
            cp = found
            if cp.size > head:
                problem = (
                    f"the log now holds {head} events, but this checkpoint signed a tree of {cp.size}: events were "
                    "removed (truncated, rolled back or emptied)"
                )
            elif roots[cp.size] != cp.root:
                problem = (
                    f"the log's events 1..{cp.size} no longer hash to the root this checkpoint signed "
                    f"({b64(cp.root)[:12]}…, now {b64(roots[cp.size])[:12]}…): the log was rewritten"
                )
            findings.append(NoteFinding(where, cp.size, problem))
        return findings

    def _roots_at(self, sizes: Iterable[int]) -> tuple[dict[int, bytes], int]:
        """The tree roots at ``sizes``, from one pass over the events' chain hashes, and the log's head."""
        targets = set(sizes)
        wanted = sorted(targets)
        head = self.kernel.store.head()[0]
        roots: dict[int, bytes] = {}
        if not wanted or wanted[0] > head:
            return roots, head
        acc = merkle.CompactRange()
        last = min(wanted[-1], head)
        for _, hash_hex in self.kernel.store.chain_hashes(last):
            acc.append(merkle.leaf_hash(bytes.fromhex(hash_hex)))
            if acc.size in targets:
                roots[acc.size] = acc.root()
        return roots, head


def _default_cosigner(
    witness: Witness, signed: str, old_size: int, prove: Callable[[int], list[bytes]]
) -> list[note.Signature]:
    from ledger.core.tlog import witness_client  # httpx: only when witnesses are configured

    try:
        lines, _size = witness_client.request_cosignatures(witness.url, witness.verifier, signed, old_size, prove)
    except witness_client.WitnessError as exc:
        raise WitnessQuorumFailed(str(exc)) from exc
    return lines
