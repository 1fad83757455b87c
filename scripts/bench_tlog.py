#!/usr/bin/env python3
"""Checking a transparency-log proof offline (issue 24): ``tlog verify-proof``'s work on a bundle from a tree of 1M
leaves, and the size of proofs against ⌈log₂ n⌉.

What is timed, in one run with interleaved rounds:

* **verify** — ``ledger.core.tlog.bundle.verify`` of a c2sp.org/tlog-proof@v1 bundle: parse it, open the
  checkpoint note with the log's Ed25519 key, check two witness cosignatures, hash the leaf and its 20-hash audit
  path to the root. This is everything ``compliance-ledger tlog verify-proof`` does besides starting Python.
* **baseline** — one Ed25519 signature check by ``cryptography`` on the same note text (the floor of any
  signed-note check), so the ratio says what the rest costs.
* **process** — the whole ``compliance-ledger tlog verify-proof`` command (Python start-up and imports included),
  median of a few runs, beside ``compliance-ledger --version``, the same start-up doing nothing.

The tree is built in memory leaf by leaf (the store's stored-hash layout, :mod:`ledger.core.tlog.merkle`); the
database plays no part in checking a bundle.

    python scripts/bench_tlog.py            # 1,048,576 leaves; writes its section of docs/BENCHMARKS.md
    python scripts/bench_tlog.py --quick    # 65,536 leaves, prints only
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchkit
from benchkit.docs import PROOFS, write_section
from benchkit.env import environment
from benchkit.markdown import bullets, run_footer, table
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.core.tlog import bundle, merkle, note

HEADING = PROOFS


def build(n: int) -> list[bytes]:
    stored: list[bytes] = []
    read = stored.__getitem__
    for i in range(n):
        leaf = merkle.leaf_hash(i.to_bytes(32, "big"))
        stored.extend(merkle.new_stored_hashes(i, leaf, lambda ix: [read(j) for j in ix]))
    return stored


def timed(fn, rounds: int, inner: int) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        out.append((time.perf_counter() - start) / inner)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="65,536 leaves; print, do not write BENCHMARKS.md")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    n = 1 << (16 if args.quick else 20)
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        env = environment(Path(tmp))
        print(f"building a tree of {n:,} leaves…", file=sys.stderr)
        stored = build(n)

        def read(ix):  # type: ignore[no-untyped-def]
            return [stored[j] for j in ix]

        log = note.Signer("compliance-ledger/bench", Ed25519PrivateKey.generate())
        witnesses = [
            note.Signer(f"witness.example/w{i}", Ed25519PrivateKey.generate(), note.COSIGNATURE_V1) for i in (1, 2)
        ]
        cp = note.Checkpoint(log.name, n, merkle.tree_hash(n, read))
        signed = note.sign(cp.text, log)
        cosigs = [s for w in witnesses for s in note.parse_signature_lines(w.signature_line(cp.text, 1_780_000_000))]
        checkpoint = note.add_signatures(signed, cosigs)
        index = n // 2 + 12345
        proof = merkle.prove_inclusion(index, n, read)
        text = bundle.Bundle(index, tuple(proof), checkpoint).render()
        data = index.to_bytes(32, "big")
        vkeys = [w.verifier for w in witnesses]
        bundle.verify(text, data, log.verifier, vkeys, 2)  # it holds

        sizes = []
        for size in sorted({min(10_000, n), min(100_000, n), n}):
            longest = max(len(merkle.prove_inclusion(i, size, read)) for i in (0, size // 3, size - 1))
            sizes.append((size, longest, math.ceil(math.log2(size))))

        public = Ed25519PrivateKey.generate()
        message = cp.text
        sig = public.sign(message)
        pub = public.public_key()
        verify_t, base_t = [], []
        for _ in range(args.rounds):  # interleaved
            verify_t += timed(lambda: bundle.verify(text, data, log.verifier, vkeys, 2), 1, 200)
            base_t += timed(lambda: pub.verify(sig, message), 1, 200)

        bundle_file = Path(tmp) / "event.tlog-proof"
        bundle_file.write_text(text)
        cmd = [sys.executable, "-m", "api"]
        check = [*cmd, "tlog", "verify-proof", str(bundle_file), "--vkey", log.verifier.vkey, "--leaf", data.hex()]
        for w in vkeys:
            check += ["--witness-vkey", w.vkey]
        check += ["--min-cosignatures", "2"]
        proc_t, version_t = [], []
        environ = {**os.environ, "PYTHONPATH": str(benchkit.ROOT)}
        for _ in range(5):
            for argv, into in ((check, proc_t), ([*cmd, "--version"], version_t)):
                start = time.perf_counter()
                done = subprocess.run(argv, capture_output=True, text=True, env=environ, cwd=tmp)
                into.append(time.perf_counter() - start)
                assert done.returncode == 0, done.stderr

    v, b = statistics.median(verify_t), statistics.median(base_t)

    def ms(values: list[float]) -> tuple[str, str]:
        return f"{statistics.median(values) * 1e3:.3f} ms", f"{min(values) * 1e3:.3f}–{max(values) * 1e3:.3f} ms"

    def secs(values: list[float]) -> tuple[str, str]:
        return f"{statistics.median(values):.3f} s", f"{min(values):.3f}–{max(values):.3f} s"

    rows = [
        [
            "bundle.verify (2 cosignatures, 20-hash path)",
            *ms(verify_t),
            "≤ 5 ms",
            "met" if v <= 0.005 else "**missed**",
        ],
        ["one Ed25519 check (baseline)", *ms(base_t), "", f"verify = {v / b:.1f}× it"],
        ["`tlog verify-proof` process", *secs(proc_t), "", f"`--version`: {statistics.median(version_t):.3f} s"],
    ]
    size_rows = [
        [f"{s:,}", str(longest), str(bound), "met" if longest <= bound else "**missed**"] for s, longest, bound in sizes
    ]
    lines = [
        HEADING,
        "",
        f"A bundle for leaf {index:,} of a {n:,}-leaf tree, checked offline as `tlog verify-proof` checks it "
        f"(medians of {args.rounds} interleaved rounds of 200 calls). The process row adds Python's start-up and the "
        "CLI's imports (5 runs), shown beside `--version`.",
        "",
        *table(["what", "median", "rounds", "target", "result"], rows),
        "",
        "Proof sizes (the longest of leaves 0, n/3 and n − 1):",
        "",
        *table(["tree size", "hashes", "⌈log₂ n⌉", "result"], size_rows),
        "",
        *bullets(env),
        "",
        *run_footer(time.monotonic() - began),
    ]
    report = "\n".join(lines)
    print(report)
    if not args.quick:
        write_section(benchkit.BENCHMARKS_MD, HEADING, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
