"""Row 5: ``assert_compliance`` through the in-memory MCP client against a no-op tool of the same SDK, with
diagnostics on a fresh session per assert and on the service call alone."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from benchkit.fmt import fmt_ms
from benchkit.stats import median, percentile

from ledger_bench.fixtures import AGENT, QUERIES, Sizes, console
from ledger_bench.report import Report, Row


async def _mcp_calls(ledger: Any, sizes: Sizes) -> dict[str, list[float]]:
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    from api.mcp.server import build_mcp

    server = build_mcp(ledger, agent=AGENT, open_default_session=True)
    bare = MCPServer("noop")

    @bare.tool()
    def noop() -> str:
        """Do nothing (sync, so it runs on a worker thread like the ledger's tools)."""
        return "ok"

    @bare.tool()
    async def noop_async() -> str:
        """Do nothing (async, on the event loop)."""
        return "ok"

    def ok(result: Any) -> Any:
        assert not result.is_error, result
        return result

    out: dict[str, list[float]] = {"assert": [], "search": [], "noop": [], "noop_async": [], "fresh": []}
    async with Client(server) as ours, Client(bare) as base:
        # The measurement: the default session, as an agent on the stdio server would use it.
        for i in range(sizes.mcp_warmup + sizes.mcp_calls):
            t0 = time.perf_counter()
            ok(await ours.call_tool("memory_search", {"query": QUERIES[i % len(QUERIES)]}))
            t1 = time.perf_counter()
            r = ok(await ours.call_tool("assert_compliance", {}))
            t2 = time.perf_counter()
            assert r.structured_content and r.structured_content["status"] == "PASS", r
            ok(await base.call_tool("noop", {}))
            t3 = time.perf_counter()
            ok(await base.call_tool("noop_async", {}))
            t4 = time.perf_counter()
            if i >= sizes.mcp_warmup:
                out["search"].append(t1 - t0)
                out["assert"].append(t2 - t1)
                out["noop"].append(t3 - t2)
                out["noop_async"].append(t4 - t3)
        # Diagnostic: a fresh session for every assert (its stream holds 2 events when the assert runs).
        for i in range(sizes.direct_calls):
            r = ok(await ours.call_tool("clock_in", {"role": "dev"}))
            sid = r.structured_content["session_id"]
            ok(await ours.call_tool("memory_search", {"query": QUERIES[i % len(QUERIES)], "session_id": sid}))
            t0 = time.perf_counter()
            r = ok(await ours.call_tool("assert_compliance", {"session_id": sid}))
            out["fresh"].append(time.perf_counter() - t0)
            assert r.structured_content["status"] == "PASS", r
    return out


def bench_mcp(tmp: Path, sizes: Sizes, report: Report) -> None:
    from api.bootstrap import initialise
    from api.settings import Settings
    from ledger.service import Actor

    console.log("[bold]assert_compliance[/] through the in-memory MCP client vs a no-op tool")
    ledger, _ = initialise(
        Settings(home=tmp / "mcp_home", database_url=f"sqlite:///{tmp / 'mcp.db'}")  # type: ignore[call-arg]
    )
    writer = Actor(AGENT, "cli")
    for i in range(30):
        ledger.remember(writer, f"note {i}: {QUERIES[i % len(QUERIES)]} — see runbook section {i}", ["bench"])
    calls = asyncio.run(_mcp_calls(ledger, sizes))

    # Diagnostic: the service call alone (no MCP), on a fresh session each time.
    direct = []
    for i in range(sizes.direct_calls):
        sid = ledger.clock_in(writer, "dev").session_id
        ledger.search(writer, sid, QUERIES[i % len(QUERIES)])
        start = time.perf_counter()
        result = ledger.assert_compliance(writer, sid)
        direct.append(time.perf_counter() - start)
        assert result.status == "PASS"
    ledger.store.engine.dispose()

    a, n0, na, fresh = calls["assert"], calls["noop"], calls["noop_async"], calls["fresh"]
    ours_med, base_med = median(a), median(n0)
    k = min(50, len(a) // 4 or 1)
    first, last = median(a[:k]), median(a[-k:])
    stream_len = 1 + 2 * (sizes.mcp_warmup + sizes.mcp_calls)
    why = ""
    if ours_med > 3 * base_med:
        why = (
            f"the assert costs {fmt_ms(ours_med - base_med)} more than the no-op, and it grows with the "
            "session: each assert (and search) loads and folds the whole session stream, which grows by 2 "
            f"events per search+assert — first {k} calls median {fmt_ms(first)} ({first / base_med:.1f}× "
            f"no-op), last {k} {fmt_ms(last)} ({last / base_med:.1f}×) at ~{stream_len} events; on a fresh "
            f"session an assert's median is {fmt_ms(median(fresh))} ({median(fresh) / base_med:.1f}×), of "
            f"which the service call alone takes {fmt_ms(median(direct))}."
        )
    report.rows.append(
        Row(
            f"`assert_compliance` via in-memory MCP client ({len(a)} calls)",
            f"median {fmt_ms(ours_med)}, p95 {fmt_ms(percentile(a, 95))}",
            f"median {fmt_ms(base_med)}, p95 {fmt_ms(percentile(n0, 95))} (no-op tool)",
            ours_med / base_med,
            "median ≤ 3× no-op",
            3.0,
            why,
            lower_is_better=True,
        )
    )
    report.details.append(
        (
            "assert_compliance over MCP (row 5)",
            "\n".join(
                [
                    "* Method: one in-memory `mcp.Client` on `build_mcp(ledger, agent='bench', "
                    "open_default_session=True)` and one on a bare `MCPServer` with two no-op tools, open "
                    f"at the same time. Each of {sizes.mcp_warmup} warm-up + {len(a)} timed iterations: "
                    "`memory_search` (not part of the ratio; it issues the one-time token), then timed "
                    "`assert_compliance` on the default session (checked PASS), timed sync no-op, timed "
                    "async no-op. The ledger holds 30 memories, so searches find hits.",
                    "* Ratio = our median / no-op median (lower is better; the target is ≤ 3×). The "
                    "baseline is the sync no-op because the ledger's tools are sync functions too (the "
                    f"SDK runs them on a worker thread); the async no-op has median {fmt_ms(median(na))}, "
                    f"p95 {fmt_ms(percentile(na, 95))}, which would make our ratio "
                    f"{ours_med / median(na):.2f}×.",
                    "* `memory_search` over MCP on the default session: median "
                    f"{fmt_ms(median(calls['search']))}, p95 {fmt_ms(percentile(calls['search'], 95))}.",
                    f"* The default session's stream grows to {stream_len} events over the run, and every "
                    f"assert loads and folds it: first {k} timed asserts median {fmt_ms(first)}, last {k} "
                    f"{fmt_ms(last)}.",
                    "* Diagnostic, a fresh session per assert (clock_in and memory_search first, "
                    f"untimed), {len(fresh)} calls: over MCP median {fmt_ms(median(fresh))}, p95 "
                    f"{fmt_ms(percentile(fresh, 95))} ({median(fresh) / base_med:.2f}× the no-op); "
                    f"`Ledger.assert_compliance` called directly median {fmt_ms(median(direct))}, p95 "
                    f"{fmt_ms(percentile(direct, 95))}.",
                ]
            ),
        )
    )
