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
Results go to the "Parameter enforcement" section of docs/BENCHMARKS.md (replaced in place on each run).

    .venv/bin/python scripts/bench_enforcement.py [--runs 20000] [--recorded-runs 2000] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchkit import BENCHMARKS_MD, docs, markdown
from benchkit.env import environment
from benchkit.fmt import fmt_ms_fine, yes_no
from benchkit.stats import percentile
from benchkit.timing import time_each
from pydantic import ValidationError

from api.bootstrap import initialise
from api.settings import Settings
from ledger.core.events import ParameterChecked
from ledger.enforcement import decisions as enf
from ledger.service import Actor

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20_000, help="timed in-process calls per contender")
    parser.add_argument("--recorded-runs", type=int, default=2_000, help="timed recorded checks per contender")
    parser.add_argument("--quick", action="store_true", help="few runs; print, write nothing")
    parser.add_argument("--output", type=Path, default=BENCHMARKS_MD)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.recorded_runs = 300, 30
    started = time.perf_counter()

    with tempfile.TemporaryDirectory() as tmp:
        env = environment(Path(tmp))
        ledger, _ = initialise(Settings(home=Path(tmp)))
        rules = ledger.enforcement_rules
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

    def row(name: str, samples: list[float], base: list[float] | None, base_name: str) -> tuple[str, ...]:
        p50, p95, p99 = percentile(samples, 50), percentile(samples, 95), percentile(samples, 99)
        ratio = "—" if base is None else f"{p50 / percentile(base, 50):.2f}× {base_name}"
        ours = yes_no(p95 <= OUR_P95_MS / 1000, bold_no=True)
        seed = yes_no(p95 <= SEED_P95_MS / 1000, bold_no=True)
        return name, f"{len(samples):,}", fmt_ms_fine(p50), fmt_ms_fine(p95), fmt_ms_fine(p99), ratio, ours, seed

    noop_text = fmt_ms_fine(percentile(fast["noop"], 50))
    validation = fast["validate+decide good"] + fast["validate+decide bad"]
    v50, v95 = percentile(validation, 50), percentile(validation, 95)
    check_text = fmt_ms_fine(percentile(slow["check good"] + slow["check bad"], 50))
    by_level: dict[str, list[str]] = {}
    for name, level in sorted(levels.items()):
        by_level.setdefault(level, []).append(name)
    level_summary = "; ".join(
        f"{level} for all {len(names)} tool/actions" if len(names) == len(pairs) else f"{level}: {', '.join(names)}"
        for level, names in sorted(by_level.items())
    )
    lines = [
        docs.ENFORCEMENT,
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
        *markdown.bullets(env),
        *markdown.run_footer(time.perf_counter() - started),
        "",
        "### Results",
        "",
        *markdown.table(
            (
                "measurement",
                "calls",
                "p50",
                "p95",
                "p99",
                "p50 ÷ baseline p50",
                "p95 ≤ 1 ms (ours)",
                "p95 ≤ 5 ms (seed)",
            ),
            [
                row(
                    "`validate` + `decide`, good calls", fast["validate+decide good"], fast["pydantic good"], "pydantic"
                ),
                row("`validate` + `decide`, bad calls", fast["validate+decide bad"], fast["pydantic bad"], "pydantic"),
                row("baseline: bare pydantic `model_validate`, good", fast["pydantic good"], None, ""),
                row("baseline: bare pydantic `model_validate`, bad", fast["pydantic bad"], None, ""),
                row("baseline: no-op function call (timer overhead)", fast["noop"], None, ""),
                row("`Ledger.check_parameters` (appends), good calls", slow["check good"], slow["append"], "append"),
                row("`Ledger.check_parameters` (appends), bad calls", slow["check bad"], slow["append"], "append"),
                row("baseline: bare store append of a `ParameterChecked`", slow["append"], None, ""),
            ],
        ),
        "",
        f"Each call is timed on its own with `time.perf_counter` (the no-op row, {noop_text} at p50, is the",
        "timer's own cost), with the garbage collector paused during the timed rounds; percentiles are nearest-rank.",
        "The recorded checks ran as two agents on one SQLite file (WAL, `synchronous=FULL`); the bad agent's levels",
        f"rose as progressive enforcement says ({level_summary} at the end).",
        "",
        f"Reading: deciding on a call costs {fmt_ms_fine(v50)} at p50 and {fmt_ms_fine(v95)} at p95 in process, "
        f"{v95 * 1000 / OUR_P95_MS:.0%} of our 1 ms",
        f"budget and {v95 * 1000 / SEED_P95_MS:.1%} of the seed's 5 ms; over a bare pydantic validation it adds the "
        "placeholder and",
        "text-quality checks, the rule's required parameters and, for a bad call, the hint, example and correction.",
        f"A recorded check ({check_text} p50) is mostly the append: it adds reading the agent's own stream to fold its",
        "level. In production `/metrics` reports the recorded check's duration as "
        "`parameter_validation_duration_seconds`.",
        "",
        "### Validation per tool/action (`validate` + `decide` at strict)",
        "",
        *markdown.table(
            ("tool.action", "good p50", "good p95", "bad p50", "bad p95"),
            (
                (
                    f"{t}.{a}",
                    *(fmt_ms_fine(percentile(per_pair[f"{k} {t}.{a}"], q)) for k in ("good", "bad") for q in (50, 95)),
                )
                for t, a in pairs
            ),
        ),
        "",
    ]
    section = "\n".join(lines)
    print(section)
    if args.quick:
        return 0
    docs.write_section(args.output, docs.ENFORCEMENT, section)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
