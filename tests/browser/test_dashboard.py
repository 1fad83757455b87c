"""The dashboard at /ui in headless Chromium against a real ``compliance-ledger serve`` on loopback with a seeded
ledger: each page's numbers are the REST reports' numbers, fetched by the test itself; the key prompt; an agent key
gets no write buttons and the API refuses its write. Every page is screenshotted into docs/screenshots/ for the README
in CI (``CI=true``, a clean checkout) or with ``LEDGER_WRITE_SCREENSHOTS=1``; a plain local run writes them into the
test's temporary directory instead (they change on every run — times, ids — and would leave the tree modified)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger.service import Actor
from tests.browser.seed import SeedClock, Seeded, seed
from tests.conftest import LedgerFactory
from tests.server_support import HTTP_TIMEOUT, READY_WITHIN, compliance_ledger_serve

DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
OPERATOR = Actor("operator", "cli", admin=True)
WAIT_MS = READY_WITHIN * 1000


def count(n: int) -> str:
    return f"{n:,}"


def pct(x: float | None) -> str:
    return "—" if x is None else f"{x * 100:.1f}%"


def open_page(context: Any, url: str, ready: str, screenshots: Path) -> Any:
    page = context.new_page()
    page.screenshots = screenshots
    errors: list[str] = []
    requested: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # console errors too (a Content-Security-Policy refusal is one), except an HTTP error status the page handles
    page.on(
        "console",
        lambda msg: (
            errors.append(msg.text)
            if msg.type == "error" and not msg.text.startswith("Failed to load resource")
            else None
        ),
    )
    page.on("request", lambda request: requested.append(request.url))
    page.goto(url)
    page.wait_for_selector(f"body[data-ready={ready}]", timeout=WAIT_MS)
    page.errors = errors
    page.requested = requested
    return page


def only_from(page: Any, base: str) -> list[str]:
    """Every address the page asked for that is not this server's (the dashboard works offline: none)."""
    return [u for u in page.requested if not u.startswith(f"{base}/")]


def wait_ready(page: Any, ready: str) -> None:
    page.wait_for_selector(f"body[data-ready={ready}]", timeout=WAIT_MS)


def rerender(page: Any, action: Any, ready: str) -> None:
    """Do ``action`` (a click that changes the page's address) and wait until the page has drawn the new data: the
    marker is taken away first, so an old one cannot answer for the new render."""
    page.evaluate("delete document.body.dataset.ready")
    action()
    wait_ready(page, ready)


def cell(page: Any, table: str, agent: str, field: str) -> str:
    return str(page.locator(f"[data-testid={table}] tr[data-agent='{agent}'] td[data-field={field}]").inner_text())


def shot(page: Any, name: str) -> None:
    """Save the page (see the module's docstring for where), after checking it shows no placeholder of a missing
    value."""
    shown = page.inner_text("body")
    assert not [word for word in ("null", "undefined", "NaN", "[object") if word in shown], shown
    to_docs = os.environ.get("LEDGER_WRITE_SCREENSHOTS") == "1" or os.environ.get("CI", "").lower() == "true"
    folder = DOCS_SCREENSHOTS if to_docs else page.screenshots
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def same_roots(project: Path) -> dict[str, str]:
    """The project roots the seeded ledger recorded (a decision setting: a node with others is refused)."""
    return {"LEDGER_PROJECT_ROOTS": json.dumps([str(project.parent)])}


@pytest.fixture
def seeded(make_ledger: LedgerFactory, tmp_path: Path, project: Path) -> tuple[str, Seeded]:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    clock = SeedClock()
    ledger = make_ledger(url, clock=clock, project_roots=[str(project.parent)])
    return url, seed(ledger, project, clock)


def test_every_page_shows_the_numbers_the_rest_api_reports(
    chromium: Any, seeded: tuple[str, Seeded], project: Path, tmp_path: Path
) -> None:
    url, facts = seeded
    with (
        compliance_ledger_serve(tmp_path, url, **same_roots(project)) as base,
        httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http,
    ):
        report = http.get("/reports/compliance").json()
        enforcement = http.get("/reports/enforcement").json()
        blocks = http.get("/memory/blocks", params={"limit": 50}).json()
        tasks = http.get("/tasks").json()
        first_events = http.get("/events", params={"limit": 50}).json()

        page = open_page(chromium, f"{base}/ui/#/overview", "overview", tmp_path / "screenshots")
        for agent in report["agents"]:
            name = agent["agent"]
            assert cell(page, "total-agents", name, "searches") == count(agent["searches"])
            assert cell(page, "total-agents", name, "passes") == count(agent["passes"])
            assert cell(page, "total-agents", name, "fails") == count(agent["fails"])
            assert cell(page, "total-agents", name, "pass_rate") == pct(agent["pass_rate"])
            assert cell(page, "total-agents", name, "lockouts") == count(agent["lockouts"])
            assert cell(page, "total-agents", name, "transition_refusals") == count(agent["transition_refusals"])
            anchor_rate = agent["anchor_passes"] / agent["anchor_attempts"] if agent["anchor_attempts"] else None
            assert cell(page, "total-agents", name, "anchor_pass_rate") == pct(anchor_rate)
            # everything was recorded in the last 20 hours, so the 24-hour window holds all of it
            assert cell(page, "window-agents", name, "searches") == count(agent["searches"])
            assert cell(page, "window-agents", name, "fails") == count(agent["fails"])
        alice = next(a for a in report["agents"] if a["agent"] == "alice")
        assert (alice["passes"], alice["fails"], alice["lockouts"]) == (1, 1, 0)
        bob = next(a for a in report["agents"] if a["agent"] == "bob")
        assert (bob["passes"], bob["fails"], bob["lockouts"]) == (1, 1, 1)
        assert "dna_missing" in cell(page, "total-agents", "alice", "refusal_reasons")
        [alice_checks] = [a for a in enforcement["by_agent"] if a["agent"] == "alice"]
        assert cell(page, "enforcement-agents", "alice", "checks") == count(alice_checks["checks"])
        assert cell(page, "enforcement-agents", "alice", "compliance_rate") == pct(alice_checks["compliance_rate"])
        assert "manage_task/create" in page.locator("[data-testid=problem-areas]").inner_text()
        chart = page.locator("[data-testid=series-chart]")
        assert chart.locator("polyline").count() == 4
        window = {k: chart.get_attribute(f"data-{k}") for k in ("start", "end", "bucket")}
        series = http.get("/reports/compliance/series", params=window).json()
        for line, field in (("searches", "searches"), ("stamps", "passes"), ("refusals", "fails")):
            drawn = chart.locator(f"polyline[data-series='{line}']").get_attribute("data-values")
            assert drawn == ",".join(str(sum(a[field] for a in p["agents"])) for p in series["points"])
        busy_hours = [p for p in series["points"] if p["agents"]]
        assert len(series["points"]) >= 24 and len(busy_hours) >= 5  # the seed's 20 hours, drawn hour by hour
        shot(page, "overview")

        rerender(page, lambda: page.select_option("[data-testid=window]", "7d"), "overview")
        assert chart.get_attribute("data-bucket") == "day"
        by_day = http.get(
            "/reports/compliance/series",
            params={k: chart.get_attribute(f"data-{k}") for k in ("start", "end", "bucket")},
        ).json()
        drawn = chart.locator("polyline[data-series='searches']").get_attribute("data-values")
        assert drawn == ",".join(str(sum(a["searches"] for a in p["agents"])) for p in by_day["points"])
        assert sum(int(n) for n in drawn.split(",")) == sum(a["searches"] for a in report["agents"])

        # "as of" before anything the agents did: the report then has no agent rows, on the page as in the API
        first_moment = first_events["events"][0]["recorded_at"][:19]
        page.fill("[data-testid=as-of]", first_moment)
        rerender(page, lambda: page.click("[data-testid=apply-as-of]"), "overview")
        assert "as_of=" in page.evaluate("location.hash")
        then = http.get("/reports/compliance", params={"as_of": f"{first_moment}Z"}).json()
        assert then["agents"] == []
        assert page.locator("[data-testid=total-agents] tr[data-agent]").count() == 0
        assert "as of" in page.locator("[data-testid=as-of-label]").inner_text()

        page.goto(f"{base}/ui/#/memory")
        wait_ready(page, "memory")
        assert page.locator("[data-testid=block-count]").get_attribute("data-count") == str(blocks["count"])
        # the position the list stands at is the log's head, said as such (not the last event that touched memory)
        head = http.get("/audit/verify").json()["head_position"]
        recalls = http.get("/events", params={"type": "MemoryRecalled", "limit": 50}).json()["events"]
        assert head > recalls[-1]["position"] + 10  # the seed's last memory change is its second recall
        shown_at = page.locator("[data-testid=memory-position]")
        assert shown_at.get_attribute("data-position") == str(head) == str(blocks["position"])
        assert shown_at.inner_text() == f"log head at position {head:,}"
        rows = page.locator("[data-testid=blocks] tbody tr")
        assert rows.count() == len(blocks["blocks"]) == len(facts.blocks)
        for i, block in enumerate(blocks["blocks"]):  # best score first, as the API ranks them
            assert rows.nth(i).get_attribute("data-block") == block["block_id"]
            assert rows.nth(i).locator("td[data-field=score]").inner_text() == f"{block['score']['total']:.3f}"
        page.fill("[data-testid=filter-tag]", "project/db")
        rerender(page, lambda: page.click("[data-testid=apply-filters]"), "memory")
        tagged = http.get("/memory/blocks", params={"tag": "project/db", "limit": 50}).json()
        assert [rows.nth(i).get_attribute("data-block") for i in range(rows.count())] == [
            b["block_id"] for b in tagged["blocks"]
        ]
        assert tagged["count"] == 3
        page.fill("[data-testid=filter-tag]", "")
        page.fill("[data-testid=search-input]", "database")
        rerender(page, lambda: page.click("[data-testid=apply-filters]"), "memory")
        looked = http.get("/memory/lookup", params={"query": "database", "limit": 20}).json()
        found = page.locator("[data-testid=search-results] li")
        assert [found.nth(i).get_attribute("data-block") for i in range(found.count())] == [
            r["block_id"] for r in looked["results"]
        ]
        assert looked["count"] >= 3
        rerender(page, lambda: page.locator("[data-testid=blocks] tbody tr").first.click(), "memory")
        chosen = blocks["blocks"][0]["block_id"]
        detail = http.get(f"/memory/blocks/{chosen}").json()
        pane = page.locator("[data-testid=block-detail]")
        assert pane.get_attribute("data-block") == chosen
        assert page.locator("[data-testid=block-history] tbody tr").count() == len(detail["history"])
        assert page.locator("[data-testid=neighbours] li").count() == len(detail["neighbours"])
        assert page.locator("[data-testid=admin-actions]").count() == 1  # no keys: the local administrator
        shot(page, "memory")

        page.goto(f"{base}/ui/#/audit")
        wait_ready(page, "audit")
        shown = page.locator("[data-testid=events] tbody tr")
        assert shown.count() == len(first_events["events"]) == 50
        assert [shown.nth(i).get_attribute("data-position") for i in (0, 49)] == ["1", "50"]
        assert shown.nth(1).locator("code[data-field=hash]").get_attribute("title") == first_events["events"][1]["hash"]
        # at 1400 px every column, the hash's included, is on screen: the log's pane does not scroll sideways
        log_pane = page.locator("[data-testid=events]").locator("xpath=..")
        assert log_pane.evaluate("(el) => el.scrollWidth <= el.clientWidth"), "the event log is cut on the right"
        pane_right = log_pane.evaluate("(el) => el.getBoundingClientRect().right")
        for i in (0, 49):
            hash_box = shown.nth(i).locator("code[data-field=hash]").bounding_box()
            assert hash_box is not None and hash_box["x"] + hash_box["width"] <= pane_right
        copy = shown.nth(1).locator("button[data-testid=copy-hash]")
        assert copy.get_attribute("data-copy") == first_events["events"][1]["hash"]
        assert page.locator("[data-link=ok]").count() == 49 and page.locator("[data-link=broken]").count() == 0
        rerender(page, lambda: page.click("[data-testid=next-page]"), "audit")
        assert page.locator("[data-testid=events] tbody tr").first.get_attribute("data-position") == "51"
        rerender(page, lambda: page.click("[data-testid=prev-page]"), "audit")
        assert page.locator("[data-testid=events] tbody tr").first.get_attribute("data-position") == "1"
        page.fill("[data-testid=filter-type]", "ComplianceRefused")
        rerender(page, lambda: page.click("[data-testid=apply-filters]"), "audit")
        refused = http.get("/events", params={"type": "ComplianceRefused", "limit": 50}).json()
        shown_types = page.locator("[data-testid=events] td[data-field=type]").all_inner_texts()
        assert shown_types == ["ComplianceRefused"] * len(refused["events"])
        assert len(shown_types) == sum(a["fails"] for a in report["agents"]) == 2
        page.fill("[data-testid=filter-type]", "")
        rerender(page, lambda: page.click("[data-testid=apply-filters]"), "audit")
        rerender(page, lambda: page.click("[data-testid=next-page]"), "audit")
        assert page.locator("[data-testid=events] tbody tr").first.get_attribute("data-position") == "51"
        page.click("[data-testid=verify-now]")
        page.wait_for_selector("[data-testid=verify-result] [data-ok]", timeout=WAIT_MS)
        chain = http.get("/audit/verify").json()
        assert page.locator("[data-testid=verify-result] [data-ok]").get_attribute("data-ok") == "true"
        assert f"{chain['checked']:,} events checked" in page.locator("[data-testid=verify-result]").inner_text()
        page.fill("[data-testid=receipt-input]", facts.receipt)
        page.click("[data-testid=check-receipt]")
        page.wait_for_selector("[data-testid=receipt-result] [data-valid]", timeout=WAIT_MS)
        assert page.locator("[data-testid=receipt-result] [data-valid]").get_attribute("data-valid") == "true"
        assert page.locator("[data-testid=receipt-result] dd[data-field=agent]").inner_text() == "alice"
        shot(page, "audit")

        page.goto(f"{base}/ui/#/tasks?task={facts.task_id}")
        wait_ready(page, "tasks")
        for task in tasks:
            card = page.locator(f".column[data-status={task['status']}] [data-task='{task['task_id']}']")
            assert card.count() == 1
        history = page.locator("[data-testid=task-history] tbody tr")
        assert page.locator("[data-testid=task-history] tr[data-type=TaskTransitionRefused]").count() == 1
        moved = page.locator("[data-testid=task-history] tr[data-type=TaskTransitioned]")
        assert moved.count() == 1 and "memory_query" in moved.locator("[data-field=evidence]").inner_text()
        assert history.count() >= 4
        shot(page, "tasks")
        assert page.errors == []
        assert only_from(page, base) == []
        assert any("/ui/static/app.js" in u for u in page.requested)
        # and the browser itself refuses the page any other host (the Content-Security-Policy /ui is served with)
        assert "connect-src 'self'" in http.get("/ui").headers["content-security-policy"]
        violated = page.evaluate(
            """new Promise((resolve) => {
                document.addEventListener("securitypolicyviolation", (e) => resolve(e.effectiveDirective));
                fetch("http://198.51.100.1/").catch(() => {});
            })"""
        )
        assert violated == "connect-src"


def test_with_keys_the_page_asks_for_one_and_an_agent_key_gets_no_write_buttons(
    chromium: Any, seeded: tuple[str, Seeded], make_ledger: LedgerFactory, project: Path, tmp_path: Path
) -> None:
    url, facts = seeded
    keys = make_ledger(url)
    agent_key = keys.issue_api_key(OPERATOR, "alice").api_key
    admin_key = keys.issue_api_key(OPERATOR, "boss", role="admin").api_key
    with (
        compliance_ledger_serve(tmp_path, url, **same_roots(project)) as base,
        httpx.Client(base_url=base, timeout=HTTP_TIMEOUT) as http,
    ):
        page = open_page(chromium, f"{base}/ui/#/memory?block={facts.blocks[0]}", "key", tmp_path / "screenshots")
        assert page.locator("[data-testid=key-dialog]").is_visible()
        page.fill("[data-testid=key-input]", "clk_not_a_key")
        page.click("[data-testid=key-submit]")
        # (a locator, not wait_for_function: the page's Content-Security-Policy refuses the eval that polls with)
        page.locator("[data-testid=key-error]", has_text="refused").wait_for(timeout=WAIT_MS)
        page.fill("[data-testid=key-input]", agent_key)
        rerender(page, lambda: page.click("[data-testid=key-submit]"), "memory")
        assert page.locator("[data-testid=whoami]").get_attribute("data-role") == "agent"
        assert page.evaluate("sessionStorage.getItem('complianceLedger.apiKey')") == agent_key
        assert page.locator("[data-testid=block-detail]").count() == 1
        for button in ("supersede", "forget", "curate"):
            assert page.locator(f"[data-testid={button}]").count() == 0
        assert page.locator("[data-testid=read-only-note]").is_visible()
        refused = http.post(
            f"/memory/blocks/{facts.blocks[0]}/forget",
            json={"reason": "from the page"},
            headers={"X-API-Key": agent_key},
        )
        assert refused.status_code == 403
        shot(page, "key-agent")
        page.close()

        admin = open_page(chromium, f"{base}/ui/#/memory?block={facts.blocks[0]}", "key", tmp_path / "screenshots")
        admin.fill("[data-testid=key-input]", admin_key)
        rerender(admin, lambda: admin.click("[data-testid=key-submit]"), "memory")
        assert admin.locator("[data-testid=whoami]").get_attribute("data-role") == "admin"
        admin.fill("[data-testid=forget-reason]", "superseded by the runbook")
        admin.once("dialog", lambda d: d.accept())
        rerender(admin, lambda: admin.click("[data-testid=forget]"), "memory")
        assert "block=" not in admin.evaluate("location.hash")
        gone = http.get(f"/memory/blocks/{facts.blocks[0]}", headers={"X-API-Key": admin_key})
        assert gone.status_code == 404
        assert admin.errors == []
