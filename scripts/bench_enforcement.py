#!/usr/bin/env python3
"""Parameter-enforcement latency (seed 004 §10.1: validation p95 < 5 ms; ours: ≤ 1 ms in process).

Measures, in one run, per call, for a realistic good and bad call of every managed tool/action (the rules'
own examples; a bad call has its first required context parameter replaced by placeholder text and the
others left out — what an agent that skips the context sends):
  * validation: ``ledger.enforcement.validate`` + ``decide`` at strict (so a bad call builds the whole blocked
    answer: hint, example and suggested correction) — the in-process decision;
  * the recorded check: ``Ledger.check_parameters`` on a real SQLite ledger (WAL, synchronous=FULL): fold the
    agent's stats, validate, decide, append the ``ParameterChecked`` event;
and, as baselines in the same run, a no-op function call, a bare pydantic ``model_validate`` of the same
payload against the same schema, and a bare store append of the same ``ParameterChecked`` event.
Results go to the "Parameter enforcement" section of docs/BENCHMARKS.md (replaced on each run).

    .venv/bin/python scripts/bench_enforcement.py [--runs 20000] [--recorded-runs 2000] [--quick]
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _bench_util import environment, load_average, percentile  # noqa: E402
from pydantic import ValidationError  # noqa: E402

from api.bootstrap import initialise  # noqa: E402
from api.settings import Settings  # noqa: E402
from ledger.core.events import ParameterChecked  # noqa: E402
from ledger.enforcement import decisions as enf  # noqa: E402
from ledger.service import Actor  # noqa: E402

SECTION = "## Parameter enforcement (scripts/bench_enforcement.py)"
SEED_P95_MS = 5.0
OUR_P95_MS = 1.0
PLACEHOLDER = "TODO: fill this in later"

Op = Callable[[], object]


def good_call(tool: str, action: str) -> dict[str, Any]:
    return dict(enf.EXAMPLES[(tool, action)])


def bad_call(tool: str, action: str, rule: enf.Rule) -> dict[str, Any]:
    call = good_call(tool, action)
    first, *rest = rule.required_params
    call[first] = PLACEHOLDER if isinstance(call.get(first), str) else None
    for name in rest:
        call.pop(name, None)
    return {k: v for k, v in call.items() if v is not None}


def time_each(ops: Mapping[str, list[Op]], runs: int, warmup: int = 200) -> dict[str, list[float]]:
    """Seconds per call for each named list of calls; the names take turns (rotating), cycling through their
    calls, so drift in the machine hits every contender alike."""
    names = list(ops)
    for name in names:
        for i in range(warmup):
            ops[name][i % len(ops[name])]()
    out: dict[str, list[float]] = {name: [] for name in names}
    clock = time.perf_counter
    gc.collect()
    gc.disable()  # a collection inside one timed call would be charged to whichever op it hit
    try:
        for r in range(runs):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                op = ops[name][r % len(ops[name])]
                start = clock()
                op()
                out[name].append(clock() - start)
            if r % 500 == 499:
                gc.collect()
    finally:
        gc.enable()
    return out


def ms(seconds: float) -> str:
    value = seconds * 1000
    return f"{value:.4f} ms" if value < 0.01 else f"{value:.3f} ms" if value < 1 else f"{value:.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000, help="timed in-process calls per contender")
    parser.add_argument("--recorded-runs", type=int, default=2_000, help="timed recorded checks per contender")
    parser.add_argument("--quick", action="store_true", help="few runs; print, write nothing")
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "BENCHMARKS.md")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.recorded_runs = 300, 30
    started = time.perf_counter()

    with tempfile.TemporaryDirectory() as tmp:
        env = environment(Path(tmp))
        ledger, _ = initialise(Settings(home=Path(tmp)))
        rules = ledger.config.enforcement_rules
        pairs = sorted(rules.rules)
        good: dict[tuple[str, str], dict[str, Any]] = {}
        bad: dict[tuple[str, str], dict[str, Any]] = {}
        for tool, action in pairs:
            rule = rules.rules[(tool, action)]
            good[(tool, action)], bad[(tool, action)] = good_call(tool, action), bad_call(tool, action, rule)
            assert enf.validate(tool, action, good[(tool, action)], require=rule.required_params).success
            assert not enf.validate(tool, action, bad[(tool, action)], require=rule.required_params).success

        def decision(tool: str, action: str, params: dict[str, Any], passes: bool) -> Op:
            rule = rules.rules[(tool, action)]

            def op() -> enf.Decision:
                validation = enf.validate(tool, action, params, require=rule.required_params)
                result = enf.decide(rule, enf.EnforcementLevel.STRICT, validation)
                assert result.passed is passes
                return result

            return op

        def bare_pydantic(tool: str, action: str, params: dict[str, Any]) -> Op:
            schema = enf.SCHEMAS[tool][action]

            def op() -> object:
                try:
                    return schema.model_validate(params)
                except ValidationError as exc:
                    return exc

            return op

        def noop() -> None:
            return None

        # --- in process ------------------------------------------------------------------------------------
        in_process: dict[str, list[Op]] = {
            "validate+decide good": [decision(t, a, good[(t, a)], True) for t, a in pairs],
            "validate+decide bad": [decision(t, a, bad[(t, a)], False) for t, a in pairs],
            "pydantic good": [bare_pydantic(t, a, good[(t, a)]) for t, a in pairs],
            "pydantic bad": [bare_pydantic(t, a, bad[(t, a)]) for t, a in pairs],
            "noop": [noop],
        }
        print(f"timing {args.runs} in-process calls per contender ...", file=sys.stderr)
        fast = time_each(in_process, args.runs)
        per_pair = time_each(
            {
                f"{kind} {t}.{a}": [decision(t, a, calls[(t, a)], kind == "good")]
                for t, a in pairs
                for kind, calls in (("good", good), ("bad", bad))
            },
            max(args.runs // 3, 100),
        )

        # --- recorded checks (SQLite) ------------------------------------------------------------------------
        good_agent, bad_agent, append_agent = Actor("bench-good", "mcp"), Actor("bench-bad", "mcp"), "bench-append"
        version = {"n": 0}
        event = ParameterChecked(
            tool="manage_task",
            action="update",
            base_level="warning",
            level="warning",
            outcome="passed",
            passed=True,
            allowed=True,
            task_id="task-123",
        )

        def bare_append() -> None:
            ledger.store.append(
                "enforcement:" + append_agent, version["n"], [event], {"agent": append_agent, "source": "mcp"}
            )
            version["n"] += 1

        def check(who: Actor, tool: str, action: str, params: dict[str, Any]) -> Op:
            return lambda: ledger.check_parameters(who, tool, action, params)

        recorded: dict[str, list[Op]] = {
            "check good": [check(good_agent, t, a, good[(t, a)]) for t, a in pairs],
            "check bad": [check(bad_agent, t, a, bad[(t, a)]) for t, a in pairs],
            "append": [bare_append],
        }
        print(f"timing {args.recorded_runs} recorded checks per contender ...", file=sys.stderr)
        slow = time_each(recorded, args.recorded_runs, warmup=20)
        stats = ledger.enforcement_stats("bench-bad")
        levels = {f"{t}.{a}": rules.level_for(t, a, "bench-bad", s).value for (t, a), s in stats.items()}
        ledger.store.engine.dispose()

    def row(name: str, samples: list[float], base: list[float] | None, base_name: str) -> str:
        p50, p95, p99 = percentile(samples, 50), percentile(samples, 95), percentile(samples, 99)
        ratio = "—" if base is None else f"{p50 / percentile(base, 50):.2f}× {base_name}"
        ours = "yes" if p95 <= OUR_P95_MS / 1000 else "**no**"
        seed = "yes" if p95 <= SEED_P95_MS / 1000 else "**no**"
        return f"| {name} | {len(samples):,} | {ms(p50)} | {ms(p95)} | {ms(p99)} | {ratio} | {ours} | {seed} |"

    noop_p50 = percentile(fast["noop"], 50)
    validation = fast["validate+decide good"] + fast["validate+decide bad"]
    v50, v95 = percentile(validation, 50), percentile(validation, 95)
    c50 = percentile(slow["check good"] + slow["check bad"], 50)
    by_level: dict[str, list[str]] = {}
    for name, level in sorted(levels.items()):
        by_level.setdefault(level, []).append(name)
    level_summary = "; ".join(
        f"{level} for all {len(names)} tool/actions" if len(names) == len(pairs) else f"{level}: {', '.join(names)}"
        for level, names in sorted(by_level.items())
    )
    lines = [
        SECTION,
        "",
        "Generated by `scripts/bench_enforcement.py` in one run on the machine below: per-call latency of",
        "parameter enforcement for a good and a bad call of each of the 9 managed tool/actions (taken in turn), next",
        f"to the seed's target (validation p95 < {SEED_P95_MS:g} ms) and ours (≤ {OUR_P95_MS:g} ms in process). A bad",
        "call has its first required context parameter replaced by placeholder text and the others left out. The",
        "in-process rows decide at strict, so a bad call builds the whole blocked answer (hint, example, correction).",
        "Baselines from the same run: a bare pydantic `model_validate` of the same payload against the same schema,",
        "a bare store append of the same `ParameterChecked` event, and a no-op call. Re-run",
        "`.venv/bin/python scripts/bench_enforcement.py` to regenerate this section (the other bench scripts keep it).",
        "",
        "### Environment",
        "",
        *[f"* **{k}**: {v}" for k, v in env.items()],
        f"* **load average (1/5/15 min) at end**: {load_average()}",
        f"* **whole run took**: {time.perf_counter() - started:.0f} s",
        "",
        "### Results",
        "",
        "| measurement | calls | p50 | p95 | p99 | p50 ÷ baseline p50 | p95 ≤ 1 ms (ours) | p95 ≤ 5 ms (seed) |",
        "|---|---|---|---|---|---|---|---|",
        row("`validate` + `decide`, good calls", fast["validate+decide good"], fast["pydantic good"], "pydantic"),
        row("`validate` + `decide`, bad calls", fast["validate+decide bad"], fast["pydantic bad"], "pydantic"),
        row("baseline: bare pydantic `model_validate`, good", fast["pydantic good"], None, ""),
        row("baseline: bare pydantic `model_validate`, bad", fast["pydantic bad"], None, ""),
        row("baseline: no-op function call (timer overhead)", fast["noop"], None, ""),
        row("`Ledger.check_parameters` (appends), good calls", slow["check good"], slow["append"], "append"),
        row("`Ledger.check_parameters` (appends), bad calls", slow["check bad"], slow["append"], "append"),
        row("baseline: bare store append of a `ParameterChecked`", slow["append"], None, ""),
        "",
        f"Each call is timed on its own with `time.perf_counter` (the no-op row, {ms(noop_p50)} at p50, is the",
        "timer's own cost), with the garbage collector paused during the timed rounds; percentiles are nearest-rank.",
        "The recorded checks ran as two agents on one SQLite file (WAL, `synchronous=FULL`); the bad agent's levels",
        f"rose as progressive enforcement says ({level_summary} at the end).",
        "",
        f"Reading: deciding on a call costs {ms(v50)} at p50 and {ms(v95)} at p95 in process, "
        f"{v95 * 1000 / OUR_P95_MS:.0%} of our 1 ms",
        f"budget and {v95 * 1000 / SEED_P95_MS:.1%} of the seed's 5 ms; over a bare pydantic validation it adds the "
        "placeholder and",
        "text-quality checks, the rule's required parameters and, for a bad call, the hint, example and correction.",
        f"A recorded check ({ms(c50)} p50) is mostly the append: it adds reading the agent's own stream to fold its",
        "level. In production `/metrics` reports the recorded check's duration as "
        "`parameter_validation_duration_seconds`.",
        "",
        "### Validation per tool/action (`validate` + `decide` at strict)",
        "",
        "| tool.action | good p50 | good p95 | bad p50 | bad p95 |",
        "|---|---|---|---|---|",
    ]
    for t, a in pairs:
        g, b = per_pair[f"good {t}.{a}"], per_pair[f"bad {t}.{a}"]
        lines.append(
            f"| {t}.{a} | {ms(percentile(g, 50))} | {ms(percentile(g, 95))} | "
            f"{ms(percentile(b, 50))} | {ms(percentile(b, 95))} |"
        )
    lines.append("")
    section = "\n".join(lines)
    print(section)
    if args.quick:
        return 0
    doc = args.output.read_text(encoding="utf-8") if args.output.exists() else "# Benchmarks\n"
    if SECTION in doc:
        head, _, rest = doc.partition(SECTION)
        tail = rest.split("\n## ", 1)
        doc = head + section + ("\n## " + tail[1] if len(tail) > 1 else "")
    else:
        doc = doc.rstrip("\n") + "\n\n" + section
    args.output.write_text(doc, encoding="utf-8")
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
