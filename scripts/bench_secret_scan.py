#!/usr/bin/env python3
"""The credential scan at the append door (``LEDGER_SECRET_SCAN``): its cost per text and per remember.

Measures, in one run:
  * per call, ``ledger.core.secret_scan.find`` (the scan of a text not seen before) on three typical
    300-character memories (prose; prose with key words, a hash and a UUID; one holding an AWS key), against
    two baselines of the same text in the same run: the NUL / lone-surrogate check every edge runs
    (``find_bad_text``) and encoding the ``MemoryRemembered`` event that carries it (canonical JSON, what the
    store hashes);
  * per ``remember`` on a real SQLite ledger (WAL, ``synchronous=FULL``), the scan on (``refuse``) against the
    same ledger settings with the scan ``off``, interleaved call by call;
  * the first use in a fresh process (importing ``detect-secrets`` and building its plugins), against importing
    the ledger's façade in a fresh process.
Results go to the "Credential scan" section of docs/BENCHMARKS.md (replaced in place on each run).

    .venv/bin/python scripts/bench_secret_scan.py [--runs 5000] [--remembers 1000] [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchkit import BENCHMARKS_MD, docs, markdown
from benchkit.env import environment
from benchkit.fmt import fmt_ms_fine
from benchkit.stats import percentile
from benchkit.timing import time_each

from api.bootstrap import initialise
from api.settings import Settings
from ledger.core import secret_scan
from ledger.core.canonical import canonical_json
from ledger.core.events import MemoryRemembered, to_payload
from ledger.core.text import find_bad_text
from ledger.service import Actor

SECTION = docs.SECRET_SCAN
PROSE = (
    "We keep the event store append-only and hash chained. The projection runner folds events into read models, "
    "snapshots are signed with the ledger key, and search fuses BM25 from SQLite FTS5 or PostgreSQL tsvector with "
    "MiniLM embeddings when the semantic extra is installed. Migrations run with alembic before each deploy, ok."
)
KEYWORDS = (
    "Never paste the api_key or the db password into memory: read PAYMENTS_API_KEY from the environment. The "
    "release tarball's sha256 is 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08 and request "
    "123e4567-e89b-12d3-a456-426614174000 failed on the secret rotation job; see commit 3f2a1b9c8d7e6f5a4b."
)
SECRET = (
    "The staging uploads run as " + "AKIA" + "Q3EGRT5YJH7LKD2M" + " with the deploy policy attached; the bucket is "
    "versioned and the lifecycle rule expires old objects after thirty days. Rotate the key when someone leaves "
    "the team, and record the rotation in the ops log with the ticket number and the date it was done, ok."
)
TEXTS = {"prose": PROSE[:300], "key words, a hash, a UUID": KEYWORDS[:300], "an AWS key": SECRET[:300]}
FIRST_USE = "import time; t = time.perf_counter(); {} ; print(time.perf_counter() - t)"


def fresh_process_seconds(statement: str, runs: int) -> list[float]:
    """Seconds ``statement`` takes in a fresh interpreter, ``runs`` times."""
    code = FIRST_USE.format(statement)
    out = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True) for _ in range(runs)
    ]
    return [float(p.stdout.strip()) for p in out]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5_000, help="timed scans per text and baseline")
    parser.add_argument("--remembers", type=int, default=1_000, help="timed remembers per setting")
    parser.add_argument("--first-use-runs", type=int, default=7, help="fresh processes per first-use contender")
    parser.add_argument("--quick", action="store_true", help="few runs; print, write nothing")
    parser.add_argument("--output", type=Path, default=BENCHMARKS_MD)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.remembers, args.first_use_runs = 300, 50, 2
    started = time.perf_counter()
    assert [len(t) for t in TEXTS.values()] == [300, 300, 300]
    assert [bool(secret_scan.scan(t)) for t in TEXTS.values()] == [False, False, True]

    ops: dict[str, list[Callable[[], object]]] = {}
    for name, text in TEXTS.items():
        event = MemoryRemembered(block_id="blk_0", content=text, tags=["ops"], session_id=None)
        ops[f"scan: {name}"] = [lambda text=text: secret_scan.find(text)]  # never the memory of clean texts
        ops[f"find_bad_text: {name}"] = [lambda text=text: find_bad_text(text)]
        ops[f"encode event: {name}"] = [lambda event=event: canonical_json(to_payload(event))]
    print(f"timing {args.runs} calls per contender ...", file=sys.stderr)
    per_call = time_each(ops, args.runs)

    with tempfile.TemporaryDirectory() as tmp:
        env = environment(Path(tmp))
        ledgers = {
            mode: initialise(Settings(home=Path(tmp) / mode, secret_scan=mode, semantic=False))[0]
            for mode in ("refuse", "off")
        }
        who = Actor("bench", "cli")
        counter = itertools.count()

        def remember(mode: str) -> Callable[[], object]:
            return lambda: ledgers[mode].remember(who, f"{PROSE[:280]} (note {next(counter)})", ["ops"])

        print(f"timing {args.remembers} remembers per setting ...", file=sys.stderr)
        remembers = time_each({"refuse": [remember("refuse")], "off": [remember("off")]}, args.remembers, warmup=20)
        for ledger in ledgers.values():
            ledger.store.dispose()

    print(f"timing first use in {args.first_use_runs} fresh processes per contender ...", file=sys.stderr)
    first_scan = fresh_process_seconds(
        "from ledger.core import secret_scan; secret_scan.scan('x')", args.first_use_runs
    )
    facade = fresh_process_seconds("import ledger.service", args.first_use_runs)

    def p50(samples: list[float]) -> float:
        return percentile(samples, 50)

    rows = []
    for name in TEXTS:
        scan = per_call[f"scan: {name}"]
        rows.append(
            (
                f"`find` (a new text), 300 characters: {name}",
                fmt_ms_fine(p50(scan)),
                fmt_ms_fine(percentile(scan, 95)),
                f"{p50(scan) / p50(per_call[f'find_bad_text: {name}']):.0f}× `find_bad_text`",
                f"{p50(scan) / p50(per_call[f'encode event: {name}']):.1f}× encoding the event",
            )
        )
    on, off = remembers["refuse"], remembers["off"]
    rows.append(
        (
            "`remember` on SQLite, scan on (refuse)",
            fmt_ms_fine(p50(on)),
            fmt_ms_fine(percentile(on, 95)),
            f"{p50(on) / p50(off):.2f}× scan off",
            f"{p50(off) / p50(on):.2f}× the throughput of off",
        )
    )
    rows.append(("`remember` on SQLite, scan off", fmt_ms_fine(p50(off)), fmt_ms_fine(percentile(off, 95)), "—", "—"))
    scan_p50 = p50(per_call["scan: prose"])
    lines = [
        SECTION,
        "",
        "Generated by `scripts/bench_secret_scan.py` in one run on the machine below: the cost of the credential",
        "scan of `LEDGER_SECRET_SCAN` (Yelp's `detect-secrets` plugins, run by `ledger/core/secret_scan.py` on each",
        "text in memory) on three typical 300-character memories, next to two baselines on the same text in the same",
        "run (the NUL/lone-surrogate check every edge runs, and encoding the `MemoryRemembered` that carries the",
        "text), and the whole `remember` on a SQLite ledger with the scan on against the same ledger settings with",
        "it off, interleaved call by call. Re-run `.venv/bin/python scripts/bench_secret_scan.py` to regenerate it.",
        "",
        "### Environment",
        "",
        *markdown.bullets(env),
        *markdown.run_footer(time.perf_counter() - started),
        "",
        "### Results",
        "",
        *markdown.table(("measurement", "p50", "p95", "÷ baseline (p50)", "÷ second baseline (p50)"), rows),
        "",
        "First use in a fresh process (importing `detect-secrets` — it imports `requests` — and building its plugins,",
        f"once per process): {statistics.median(first_scan) * 1000:.0f} ms (median of {len(first_scan)}), "
        f"{statistics.median(first_scan) / statistics.median(facade):.2f}× importing the ledger's façade",
        f"(`import ledger.service`, {statistics.median(facade) * 1000:.0f} ms) in a fresh process.",
        "",
        f"Reading: a typical memory costs the door {fmt_ms_fine(scan_p50)} at p50 to scan (every detector plugin "
        "runs its patterns over",
        "each line; the keyword rules only on lines holding one of the detector's key words). The plugin objects are",
        "built once per process and cached.",
        "",
    ]
    section = "\n".join(lines)
    print(section)
    if args.quick:
        return 0
    docs.write_section(args.output, SECTION, section)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
