"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, pinned in tests/node) against
``compliance-ledger serve`` on loopback: every server scenario that applies to a server without the suite's
fixture tools, prompts and resources must pass; every other scenario is named below with the reason it is not run.

Two pinned versions: 0.1.16, npm's ``latest``, which tests the 2025-11-25 wire (what v1 clients speak), and
0.2.0-alpha.12, the newest published and the only one that knows the 2026-07-28 revision the Python SDK negotiates
by default. They need Node >= 22 (tests/node_support.py). Results and exclusions: docs/CONFORMANCE.md.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_brain import compliance_ledger_serve
from tests.node_support import NodeKit, node_kit

STABLE, NEXT = "@modelcontextprotocol/conformance", "conformance-2026-07-28"
WIRE = {STABLE: "2025-11-25", NEXT: "2026-07-28"}
VERSIONS = {STABLE: "0.1.16", NEXT: "0.2.0-alpha.12"}

# Scenario -> the checks in it that need a fixture this server does not have (they are reported, not required).
RUN: dict[str, dict[str, frozenset[str]]] = {
    STABLE: {
        "server-initialize": frozenset(),
        "ping": frozenset(),
        "tools-list": frozenset(),
        "prompts-list": frozenset(),
        "resources-list": frozenset(),
        "dns-rebinding-protection": frozenset(),
    },
    NEXT: {
        "server-stateless": frozenset(
            {  # the suite's diagnostic tools: test_missing_capability, test_streaming_elicitation, test_logging_tool
                "sep-2575-server-rejects-undeclared-capability",
                "sep-2575-missing-capability-http-400",
                "sep-2575-http-server-no-independent-requests-on-stream",
                "sep-2575-server-no-log-without-loglevel",
            }
        ),
        "tools-list": frozenset(),
        "prompts-list": frozenset(),
        "resources-list": frozenset(),
        "caching": frozenset(),
        "sep-2164-resource-not-found": frozenset(),
        "dns-rebinding-protection": frozenset(),
        "server-sse-multiple-streams": frozenset(),
        "http-header-validation": frozenset(),  # "pending" in the suite, but it needs no fixture
    },
}

_FIXTURE_TOOL = "calls the suite's fixture tool"
EXCLUDED: dict[str, str] = {
    "logging-set-level": "the server declares no `logging` capability; -32601 Method not found is the right answer",
    "completion-complete": "the server declares no `completions` capability (and the scenario completes a fixture "
    "prompt)",
    "tools-call-simple-text": f"{_FIXTURE_TOOL} test_simple_text",
    "tools-call-image": f"{_FIXTURE_TOOL} test_image_content",
    "tools-call-audio": f"{_FIXTURE_TOOL} test_audio_content",
    "tools-call-embedded-resource": f"{_FIXTURE_TOOL} test_embedded_resource",
    "tools-call-mixed-content": f"{_FIXTURE_TOOL} test_multiple_content_types",
    "tools-call-with-logging": f"{_FIXTURE_TOOL} test_tool_with_logging",
    "tools-call-error": f"{_FIXTURE_TOOL} test_error_handling",
    "tools-call-with-progress": f"{_FIXTURE_TOOL} test_tool_with_progress",
    "tools-call-sampling": f"{_FIXTURE_TOOL} test_sampling",
    "tools-call-elicitation": f"{_FIXTURE_TOOL} test_elicitation",
    "elicitation-sep1034-defaults": f"{_FIXTURE_TOOL} test_elicitation_sep1034_defaults",
    "elicitation-sep1330-enums": f"{_FIXTURE_TOOL} test_elicitation_sep1330_enums",
    "json-schema-2020-12": f"{_FIXTURE_TOOL} json_schema_2020_12_tool",
    "server-sse-polling": f"{_FIXTURE_TOOL} test_reconnection, on a stateful session",
    "resources-read-text": "reads the suite's fixture resource test://static-text",
    "resources-read-binary": "reads the suite's fixture resource test://static-binary",
    "resources-templates-read": "reads the suite's fixture template test://template/{id}/data",
    "resources-subscribe": "the server declares no resource `subscribe` capability (and the scenario uses a fixture "
    "resource)",
    "resources-unsubscribe": "the server declares no resource `subscribe` capability",
    "prompts-get-simple": "gets the suite's fixture prompt test_simple_prompt",
    "prompts-get-with-args": "gets the suite's fixture prompt test_prompt_with_arguments",
    "prompts-get-embedded-resource": "gets the suite's fixture prompt test_prompt_with_embedded_resource",
    "prompts-get-with-image": "gets the suite's fixture prompt test_prompt_with_image",
    "server-session-lifecycle": "the server is stateless (no Mcp-Session-Id): the scenario reports itself not "
    "applicable",
    "http-custom-header-server-validation": "needs a tool with `x-mcp-header` parameters; this server has none",
    "input-required-result-*": f"{_FIXTURE_TOOL}s that return InputRequiredResult (elicitation, sampling, roots)",
    "tasks-*": "the tasks extension, which this server does not offer",
    "sep-2640-skills-*": "the skills extension, which this server does not offer",
}
_ON_OTHER_WIRE = "its protocol revision is run by the other pinned version"


def excluded_reason(suite: str, scenario: str) -> str | None:
    """Why ``scenario`` of ``suite`` is not run, or None when nothing says so."""
    for pattern, reason in EXCLUDED.items():
        if scenario == pattern or (pattern.endswith("*") and scenario.startswith(pattern[:-1])):
            return reason
    others = [s for s in RUN if s != suite and scenario in RUN[s]]
    return _ON_OTHER_WIRE if others else None


def conformance(kit: NodeKit, suite: str, *args: str) -> subprocess.CompletedProcess[str]:
    cli = kit.package(suite) / "dist" / "index.js"
    return subprocess.run([kit.node22, str(cli), *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def kit() -> NodeKit:
    return node_kit()


@pytest.fixture(scope="module")
def server(kit: NodeKit, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("conformance")
    with compliance_ledger_serve(home, f"sqlite:///{home / 'ledger.db'}") as base:
        yield f"{base}/mcp"


@pytest.mark.parametrize("suite", [STABLE, NEXT])
def test_the_pinned_suites_are_the_versions_named_and_every_scenario_is_run_or_excused(
    kit: NodeKit, suite: str
) -> None:
    assert kit.version(suite) == VERSIONS[suite]
    listing = conformance(kit, suite, "list", "--server")
    assert listing.returncode == 0, listing.stderr
    scenarios = set(re.findall(r"^\s+- ([a-z0-9][\w./-]*)", listing.stdout.split("Client scenarios")[0], re.M))
    assert set(RUN[suite]) <= scenarios
    unaccounted = sorted(s for s in scenarios - set(RUN[suite]) if excluded_reason(suite, s) is None)
    assert not unaccounted, f"new scenarios in {suite}: run them (RUN) or say why not (EXCLUDED)"


@pytest.mark.parametrize(
    ("suite", "scenario"), [(suite, scenario) for suite, scenarios in RUN.items() for scenario in scenarios]
)
def test_a_conformance_scenario_passes_against_compliance_ledger_serve(
    kit: NodeKit, server: str, tmp_path: Path, suite: str, scenario: str
) -> None:
    run = conformance(
        kit, suite, "server", "--url", server, "--scenario", scenario, "--spec-version", WIRE[suite],
        "-o", str(tmp_path),
    )  # fmt: skip
    found = sorted(tmp_path.glob(f"server-{scenario}-*/checks.json"))
    assert len(found) == 1, f"no results (exit {run.returncode}):\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}"
    checks = json.loads(found[0].read_text())
    fixture_only = RUN[suite][scenario]
    failed = [c for c in checks if c["status"] == "FAILURE" and c["id"] not in fixture_only]
    assert not failed, json.dumps(failed, indent=1)[:4000]
    assert any(c["status"] == "SUCCESS" for c in checks), checks
    excused = [c for c in checks if c["id"] in fixture_only]
    assert {c["id"] for c in excused} == fixture_only  # an excused check that disappears is worth a look
    # ... and each fails only because the suite could not test it (it says so), never on what it saw
    assert all(c["status"] != "FAILURE" or (c.get("details") or {}).get("untestable") for c in excused), excused
