"""Prometheus ``/metrics`` on a real loopback server: its counters move by exactly the calls made, they come from
the log (so a second server on the same database sees them), and the endpoint takes API keys like the rest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from api.settings import Settings
from ledger.service import Actor
from tests.anchor_support import proof
from tests.conftest import LedgerFactory
from tests.e2e.test_http import tool
from tests.server_support import HTTP_TIMEOUT, running

Sample = tuple[str, tuple[tuple[str, str], ...]]
DESCRIPTION = "Add JWT login and logout endpoints with tests for expiry."
SUMMARY = "Implemented JWT login, logout and refresh endpoints. Added tests for expiry and rotation, all passing."


def scrape(http: httpx.Client, base: str, **headers: str) -> dict[Sample, float]:
    response = http.get(f"{base}/metrics", headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def moved(before: dict[Sample, float], after: dict[Sample, float]) -> dict[Sample, float]:
    """Every sample that changed, by how much (new samples count from 0)."""
    return {k: v - before.get(k, 0.0) for k, v in after.items() if v != before.get(k, 0.0)}


def call(http: httpx.Client, base: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    result = tool(http, base, name, args)
    assert not result.get("isError"), result
    return dict(result["structuredContent"])


def test_the_counters_move_by_exactly_the_calls_made(make_ledger: LedgerFactory, tmp_path: Path, project: Path) -> None:
    ledger = make_ledger(project_roots=[str(project.parent)])
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        before = scrape(http, base)
        sid = call(http, base, "clock_in", {"role": "dev", "working_dir": str(project)})["session_id"]
        task = {"task_id": "t-1", "session_id": sid}
        created = call(
            http, base, "manage_task", {"action": "create", "title": "JWT auth", "description": DESCRIPTION, **task}
        )
        thin = call(http, base, "manage_task", {"action": "update", "work_notes": "fixed stuff", **task})
        blocked = call(http, base, "manage_task", {"action": "complete", **task})
        # Valid, but ready -> complete is not in the workflow table: the transition is refused and recorded.
        refused = call(http, base, "manage_task", {"action": "complete", "completion_summary": SUMMARY, **task})
        call(http, base, "memory_search", {"query": "jwt login", "session_id": sid})
        stamp = call(http, base, "assert_compliance", {"session_id": sid})
        again = call(http, base, "assert_compliance", {"session_id": sid})
        good = call(http, base, "odyssean_anchor", {"session_id": sid, "role": "dev", "proof_candidate": proof()})
        bad = call(
            http, base, "odyssean_anchor", {"session_id": sid, "role": "dev", "proof_candidate": proof(phase="B9")}
        )
        call(
            http,
            base,
            "task_create",
            {"task_id": "t-2", "title": "Waiting", "dna": {"blocked_reason": "waiting for the API keys from ops"}},
        )
        moved_on = call(http, base, "task_transition", {"task_id": "t-2", "to_status": "blocked", "session_id": sid})
        after = scrape(http, base)
        report = http.get(f"{base}/reports/enforcement").json()

    assert created["success"] and thin["context_warning"] and blocked["enforcement_level"] == "strict"
    assert not blocked["success"] and not refused["success"] and "refused" in refused["error"]
    assert stamp["status"] == "PASS" and again["status"] == "FAIL" and again["reason"] == "token_consumed"
    assert good["validated"] and not bad["validated"] and moved_on["status"] == "transitioned"

    def counter(name: str, **labels: str) -> Sample:
        return (name, tuple(sorted(labels.items())))

    def checked(action: str) -> dict[str, str]:
        return {"tool": "manage_task", "action": action}

    rates = {k: v for k, v in after.items() if k[0].startswith("parameter_compliance_rate")}
    assert rates == {
        counter("parameter_compliance_rate_by_tool", **checked("create")): 1.0,
        counter("parameter_compliance_rate_by_tool", **checked("update")): 0.0,
        counter("parameter_compliance_rate_by_tool", **checked("complete")): 0.5,
        counter("parameter_compliance_rate", agent_id="local"): 0.5,  # the one (keyless) agent: 2 of 4
    }
    changes = {k: v for k, v in moved(before, after).items() if k not in rates}
    position = changes.pop(counter("ledger_metrics_position"))
    durations = {k: v for k, v in changes.items() if k[0].startswith("parameter_validation_duration_seconds")}
    for k in durations:
        del changes[k]
    assert changes == {
        counter("parameter_validation_total", result="success", outcome="passed", **checked("create")): 1,
        counter("parameter_validation_total", result="failure", outcome="warned", **checked("update")): 1,
        counter("parameter_validation_total", result="failure", outcome="blocked", **checked("complete")): 1,
        counter("parameter_validation_total", result="success", outcome="passed", **checked("complete")): 1,
        # enforcement applied = the calls blocked (seed 7.1's record_enforcement), not every check
        counter("enforcement_applied_total", level="strict", **checked("complete")): 1,
        counter("ledger_stamps_issued_total"): 1,
        counter("ledger_stamps_refused_total", reason="token_consumed"): 1,
        counter("ledger_anchors_validated_total"): 1,
        counter("ledger_anchors_rejected_total"): 1,
        counter("ledger_task_transitions_total"): 1,
        counter("ledger_task_transitions_refused_total"): 1,
        counter("ledger_task_transition_refusal_codes_total", code=refused_code(ledger)): 1,
    }
    assert position > 0
    # One timing per recorded check, in this process.
    for action, n in (("create", 1), ("update", 1), ("complete", 2)):
        assert durations[counter("parameter_validation_duration_seconds_count", **checked(action))] == n
        assert durations[counter("parameter_validation_duration_seconds_bucket", le="+Inf", **checked(action))] == n
    # The report says the same.
    assert report["totals"]["checks"] == 4 and report["totals"]["blocked"] == 1 and report["totals"]["warned"] == 1
    assert report["totals"]["compliance_rate"] == 0.5


def refused_code(ledger: Any) -> str:
    [rec] = ledger.store.iter_events(0, types=["TaskTransitionRefused"])
    [code] = rec.event.codes
    return str(code)


def test_counters_come_from_the_log_so_a_second_server_sees_the_first_ones_calls(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    """Two servers on one database (two ledger instances, as two processes would have): calls through one move
    the other's counters; durations are timed where the call was made. Each app has its own registry."""
    first, second = make_ledger(), make_ledger()
    settings = Settings(home=tmp_path)
    with running(first, settings) as a, running(second, settings) as b, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        before_a, before_b = scrape(http, a), scrape(http, b)
        call(http, a, "manage_task", {"action": "create", "task_id": "t-1", "title": "JWT", "description": DESCRIPTION})
        first.manage_task(Actor("ops-bot", "cli"), "update", {"task_id": "t-1", "work_notes": "fixed stuff"})
        after_a, after_b = scrape(http, a), scrape(http, b)

    created = (
        "parameter_validation_total",
        (("action", "create"), ("outcome", "passed"), ("result", "success"), ("tool", "manage_task")),
    )
    warned = (
        "parameter_validation_total",
        (("action", "update"), ("outcome", "warned"), ("result", "failure"), ("tool", "manage_task")),
    )
    timed = ("parameter_validation_duration_seconds_count", (("action", "create"), ("tool", "manage_task")))
    for before, after in ((before_a, after_a), (before_b, after_b)):
        assert after[created] - before[created] == 1 and after[warned] - before[warned] == 1
    assert after_a[timed] == 1 and timed not in after_b  # the second server timed nothing


def test_an_action_the_rules_do_not_know_is_counted_as_other(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        ledger.check_parameters(Actor("dev-bot", "cli"), "manage_task", "drop-tables", {"task_id": "t-1"})
        after = scrape(http, base)
    labels = {dict(k[1]).get("action") for k, v in after.items() if k[0] == "parameter_validation_total" and v}
    assert labels == {"other"}


def test_once_api_keys_exist_metrics_needs_one(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    ledger = make_ledger()
    key = ledger.issue_api_key(Actor("operator", "cli", admin=True), "prometheus", role="auditor").api_key
    with running(ledger, Settings(home=tmp_path)) as base, httpx.Client(timeout=HTTP_TIMEOUT) as http:
        anonymous = http.get(f"{base}/metrics")
        samples = scrape(http, base, Authorization=f"Bearer {key}")
        report = http.get(f"{base}/reports/enforcement", headers={"X-API-Key": key})
    assert anonymous.status_code == 401 and anonymous.json()["error"]["hint"]
    assert samples[("ledger_stamps_issued_total", ())] == 0
    assert report.status_code == 200 and report.json()["totals"]["checks"] == 0
