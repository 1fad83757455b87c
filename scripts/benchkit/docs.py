"""docs/BENCHMARKS.md, shared by the benchmarks: each owns one ``## `` section and replaces it in place.

``scripts/bench_ledger.py`` owns the top of the file (title, environment, results and its detail sections, up
to the first section another benchmark owns); every other benchmark owns the one section named below.
"""

from __future__ import annotations

from pathlib import Path

TITLE = "# Compliance Ledger — benchmarks"
ANCHOR = "## Odyssean Anchor validation"
MEMORY = "## Memory (scripts/bench_memory.py)"
ENFORCEMENT = "## Parameter enforcement (scripts/bench_enforcement.py)"
SERVE = "## Serve under concurrent clients (scripts/bench_serve.py)"
WRITERS = "## Concurrent writers (scripts/bench_writers.py)"
TLOG = "## Transparency-log tree and row authenticators (scripts/bench_writers.py --tlog)"
RSS = "## Serve memory on a large ledger (scripts/bench_rss.py)"
COLDSTART = "## Cold start (scripts/bench_coldstart.py)"
STARTUP = "## Start-up (scripts/bench_startup.py)"
RETRIEVAL = "## Retrieval quality (scripts/eval_retrieval.py)"
UI = "## Dashboard page load (scripts/bench_ui.py)"
RECALL_FRAMES = "## Queryless recall at scale (scripts/bench_recall_frames.py)"
PROOFS = "## Offline proof checks (scripts/bench_tlog.py)"
SECRET_SCAN = "## Credential scan (scripts/bench_secret_scan.py)"
ERASURE = "## Encryption and erasure (scripts/bench_erasure.py)"
LIMITS = "## Close to the limit (scripts/bench_limits.py)"
SECTIONS = (
    ANCHOR,
    MEMORY,
    ENFORCEMENT,
    SERVE,
    WRITERS,
    TLOG,
    PROOFS,
    RSS,
    COLDSTART,
    STARTUP,
    RETRIEVAL,
    UI,
    RECALL_FRAMES,
    SECRET_SCAN,
    ERASURE,
    LIMITS,
)


def find_heading(doc: str, heading: str) -> int:
    """Where the line ``heading`` starts in ``doc`` (the whole line, at the start of a line), or -1."""
    at = 0
    while (at := doc.find(heading, at)) >= 0:
        line_start = at == 0 or doc[at - 1] == "\n"
        line_end = at + len(heading) == len(doc) or doc[at + len(heading)] == "\n"
        if line_start and line_end:
            return at
        at += len(heading)
    return -1


def write_section(path: Path, heading: str, text: str) -> None:
    """Replace the section under ``heading`` (up to the next ``## `` heading) by ``text``, where it stands, or
    add it at the end when the file has none; every other section is kept as it is, in its order."""
    doc = path.read_text(encoding="utf-8") if path.exists() else TITLE + "\n"
    body = text.strip("\n") + "\n"
    start = find_heading(doc, heading)
    if start < 0:
        doc = doc.rstrip("\n") + "\n\n" + body
    else:
        end = doc.find("\n## ", start + len(heading))
        doc = doc[:start] + body + (doc[end:] if end >= 0 else "")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(doc, encoding="utf-8")


def write_head(path: Path, text: str) -> None:
    """Replace the top of the file, everything before the first section another benchmark owns, by ``text``."""
    kept = ""
    if path.exists():
        doc = path.read_text(encoding="utf-8")
        found = [at for at in (find_heading(doc, h) for h in SECTIONS) if at > 0]
        if found:
            kept = doc[min(found) - 1 :]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.rstrip("\n") + "\n" + kept, encoding="utf-8")
