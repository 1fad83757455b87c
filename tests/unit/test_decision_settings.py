"""The decision settings a ledger records (``ledger.compose.decision_settings``, ``ledger.core.decision_settings``):
what is in the set and in which form, that the digest follows the values and nothing else, and how a difference
is said to a person."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from ledger.compose import LedgerSettings, decision_settings
from ledger.core.decision_settings import DecisionSettings, differences, file_value
from ledger.enforcement.rules import RULES_FILE
from ledger.service import CapabilityConfig, LedgerConfig
from ledger.workflow.table import TABLE


def hybrid() -> tuple[bool, str]:
    return True, "hybrid"


def bm25() -> tuple[bool, str]:
    return False, "BM25 alone: not installed"


def settings(tmp_path: Path, **changes: object) -> LedgerSettings:
    base: dict[str, object] = {
        "db_url": "sqlite://",
        "key_path": tmp_path / "receipt.key",
        "signing_key_path": tmp_path / "signing.key",
    }
    return LedgerSettings(**{**base, **changes})  # type: ignore[arg-type]


def test_the_set_names_every_decision_setting_with_its_canonical_value(tmp_path: Path) -> None:
    local = decision_settings(settings(tmp_path, project_roots_default=True), hybrid)
    assert list(local.values) == [
        "require_anchor",
        "token_ttl_minutes",
        "project_roots",
        "context_paths",
        "external_context",
        "anchor_challenge_ttl_minutes",
        "anchor_challenge_required",
        "idle_timeout_minutes",
        "secret_scan",
        "retrieval",
        "search_min_similarity",
        "workflow_file",
        "enforcement_rules_file",
    ]
    assert local.values["project_roots"] == "(default)"  # the rule, not the paths of where this node started
    assert local.values["retrieval"].startswith("hybrid:")
    assert local.values["workflow_file"] == file_value(TABLE.text()[0])
    assert local.sources == {"workflow_file": "(default)", "enforcement_rules_file": "(default)"}
    assert local.env["require_anchor"] == "LEDGER_REQUIRE_ANCHOR"


def test_each_decision_setting_changes_the_digest(tmp_path: Path) -> None:
    base = decision_settings(settings(tmp_path), hybrid).digest
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES_FILE.text()[0].replace("default_level: warning", "default_level: strict"), "utf-8")
    changed = [
        settings(tmp_path, capabilities=CapabilityConfig(require_anchor=True)),
        settings(tmp_path, capabilities=CapabilityConfig(token_ttl=None)),
        settings(tmp_path, capabilities=CapabilityConfig(project_roots=("/srv",))),
        settings(tmp_path, capabilities=CapabilityConfig(idle_timeout=_dt.timedelta(minutes=5))),
        settings(tmp_path, kernel=LedgerConfig(secret_scan="redact")),
        settings(tmp_path, semantic=False),
        settings(tmp_path, search_min_similarity=0.5),
        settings(tmp_path, enforcement_rules_file=rules),
    ]
    digests = [decision_settings(s, hybrid).digest for s in changed]
    assert base not in digests and len(set(digests)) == len(digests)
    assert decision_settings(settings(tmp_path), bm25).digest != base  # the extra missing here: BM25 alone


def test_what_decides_nothing_leaves_the_digest_alone(tmp_path: Path) -> None:
    base = decision_settings(settings(tmp_path), hybrid).digest
    same_rules = tmp_path / "elsewhere.yaml"
    same_rules.write_text(RULES_FILE.text()[0], "utf-8")  # the shipped text, kept in another place
    alike = [
        settings(tmp_path, db_url="postgresql://elsewhere/db"),
        settings(tmp_path, kernel=LedgerConfig(snapshot_every=5)),
        settings(tmp_path, enforcement_rules_file=same_rules),
        settings(tmp_path, capabilities=CapabilityConfig(project_roots=("/b", "/a", "/a"))),
    ]
    roots = decision_settings(alike.pop(), hybrid)
    assert roots.values["project_roots"] == ["/a", "/b"]  # a set of roots: order and repeats decide nothing
    assert {decision_settings(s, hybrid).digest for s in alike} == {base}
    assert decision_settings(alike[2], hybrid).sources["enforcement_rules_file"] == str(same_rules)


def test_a_difference_names_the_setting_its_variable_and_both_values() -> None:
    local = DecisionSettings(
        {"require_anchor": True, "token_ttl_minutes": 30.0, "workflow_file": file_value("a: 1\nb: 3\n")},
        {"workflow_file": "/etc/wf.yaml"},
        {"require_anchor": "LEDGER_REQUIRE_ANCHOR", "workflow_file": "LEDGER_WORKFLOW_FILE"},
    )
    recorded = {
        "require_anchor": False,
        "token_ttl_minutes": 30.0,
        "workflow_file": file_value("a: 1\nb: 2\n"),
        "retired": 1,
    }
    found = differences(recorded, local)
    assert [d.name for d in found] == ["require_anchor", "workflow_file", "retired"]
    assert found[0].said() == "require_anchor (LEDGER_REQUIRE_ANCHOR): the ledger's false, this node's true"
    ledger_sha, node_sha = recorded["workflow_file"]["sha256"], local.values["workflow_file"]["sha256"]  # type: ignore[index]
    assert found[1].said() == (
        f"workflow_file (LEDGER_WORKFLOW_FILE): the ledger's sha256:{ledger_sha[:16]}, this node's "
        f"sha256:{node_sha[:16]} from /etc/wf.yaml"
    )
    assert "-b: 2" in found[1].text_diff() and "+b: 3" in found[1].text_diff()
    assert found[2].said() == "retired: the ledger's 1, this node's (none)" and found[2].text_diff() == []
    assert differences(dict(local.values), local) == []
