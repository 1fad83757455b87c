"""Parameter enforcement's pure core (seed 004): schemas, placeholders, hints, rules, rollout, levels, decisions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.enforcement import decisions as enf
from ledger.enforcement.decisions import AgentToolStats, EnforcementLevel, Progressive, Validation
from ledger.enforcement.rules import load_rules

DISABLED, SOFT, WARNING, STRICT = (
    EnforcementLevel.DISABLED,
    EnforcementLevel.SOFT,
    EnforcementLevel.WARNING,
    EnforcementLevel.STRICT,
)
PAIRS = [(tool, action) for tool, actions in enf.SCHEMAS.items() for action in actions]
FAST = settings(max_examples=300, deadline=None)


def call(tool: str, action: str, **changes: Any) -> dict[str, Any]:
    """The example call of ``tool``/``action`` without ``action``, with ``changes`` applied (None removes)."""
    params = {k: v for k, v in enf.example(tool, action).items() if k != "action"}
    params.update(changes)
    return {k: v for k, v in params.items() if v is not None}


def strict_response(validation: Validation) -> enf.EnforcementResponse:
    decision = enf.decide(None, STRICT, validation)
    assert not decision.allow and decision.response is not None
    return decision.response


# --- schemas and validators -----------------------------------------------------------------------------------

SUMMARY_OK = "Implemented the login endpoint with JWT tokens. Tested it with six unit tests."
LONG = "word " * 201

BAD_VALUES = [
    # (tool, action, parameter, bad value, part of the message)
    ("manage_task", "update", "work_notes", "too short", "at least 10 characters"),
    ("manage_task", "update", "work_notes", "x" * 1001, "at most 1000 characters"),
    ("manage_task", "update", "work_notes", "Refactoring-everything", "Work notes too brief"),
    ("manage_task", "update", "work_notes", "TODO: write the notes later", "placeholder text"),
    ("manage_task", "update", "work_notes", 42, "must be a string"),
    ("manage_task", "update", "progress_made", "a bit", "at least 10 characters"),
    ("manage_task", "update", "progress_made", "p" * 501, "at most 500 characters"),
    ("manage_task", "update", "progress_made", "Progressed-a-lot", "Progress too brief"),
    ("manage_task", "update", "progress_made", "fixed some stuff", "placeholder text"),
    ("manage_task", "update", "files_modified", ["/etc/passwd"], "is absolute"),
    ("manage_task", "update", "files_modified", ["C:\\src\\app.py"], "is absolute"),
    ("manage_task", "update", "files_modified", ["~/notes.txt"], "home directory"),
    ("manage_task", "update", "files_modified", ["src/../../secret"], "leaves its directory"),
    ("manage_task", "update", "files_modified", ["src\\..\\x.py"], "leaves its directory"),
    ("manage_task", "update", "files_modified", [""], "empty"),
    ("manage_task", "update", "files_modified", ["src/a\x00.py"], "control character"),
    ("manage_task", "update", "files_modified", ["./"], "names no file"),
    ("manage_task", "update", "files_modified", ["file:///etc/passwd"], "is a URL"),
    ("manage_task", "update", "files_modified", ["a" * 1025], "longer than 1024"),
    ("manage_task", "update", "files_modified", [f"src/f{i}.py" for i in range(101)], "at most 100"),
    ("manage_task", "update", "files_modified", "src/app.py", "must be a list"),
    ("manage_task", "update", "files_modified", [3], "must be a string"),
    ("manage_task", "update", "blockers", ["TBD"], "at least 10 characters"),
    ("manage_task", "update", "blockers", "Waiting for the staging key", "must be a list"),
    ("manage_task", "update", "task_id", "Task 123", "not a valid id"),
    ("manage_task", "complete", "completion_summary", "Implemented it.", "at least 20 characters"),
    ("manage_task", "complete", "completion_summary", "c" * 2001, "at most 2000 characters"),
    ("manage_task", "complete", "completion_summary", "Implemented authentication. Tested.", "Summary too brief"),
    ("manage_task", "complete", "completion_summary", "Implemented the login endpoint with JWT", "multiple sentences"),
    ("manage_task", "complete", "completion_summary", "The login endpoint works now. It was hard.", "accomplished"),
    ("manage_task", "complete", "completion_summary", "Implemented login. Details to follow ...", "placeholder"),
    ("manage_task", "complete", "testing_notes", "ran it", "at least 10 characters"),
    ("manage_task", "complete", "testing_notes", "t" * 1001, "at most 1000 characters"),
    ("manage_task", "complete", "testing_notes", "N/A - not applicable here", "placeholder text"),
    ("manage_task", "complete", "files_created", ["../outside.py"], "leaves its directory"),
    ("manage_task", "complete", "files_created", [f"f{i}" for i in range(101)], "at most 100"),
    ("manage_task", "complete", "patterns_identified", ["retry"], "must be an object"),
    ("manage_task", "complete", "patterns_identified", {" ": "x"}, "non-empty names"),
    ("manage_task", "complete", "patterns_identified", {f"k{i}": i for i in range(101)}, "at most 100"),
    ("manage_task", "complete", "patterns_identified", {"big": "x" * 20_001}, "bytes of JSON"),
    ("manage_task", "complete", "patterns_identified", {"x": float("nan")}, "not plain JSON"),
    ("manage_task", "create", "title", "t" * 201, "too long"),
    ("manage_task", "create", "title", "TBD", "placeholder"),
    ("manage_task", "create", "description", "Short text", "at least 20 characters"),
    ("manage_task", "create", "description", "Lorem ipsum dolor sit amet, consectetur", "placeholder text"),
    ("manage_task", "create", "task_type", "Bug Fix", "lower-case name"),
    ("manage_task", "create", "dna", "memory", "must be an object"),
    ("manage_context", "update", "data", {}, "must not be empty"),
    ("manage_context", "update", "data", "auth: JWT", "must be an object"),
    ("manage_context", "update", "propagate_changes", "yes", "true or false"),
    ("manage_context", "add_insight", "insight", "Learned...", "placeholder text"),
    ("manage_context", "add_insight", "insight", "i" * 1001, "at most 1000 characters"),
    ("manage_context", "add_insight", "category", "gossip", "must be one of"),
    ("manage_context", "add_insight", "importance", "urgent", "must be one of"),
    ("manage_context", "add_progress", "progress_made", "aaaaaaaaaaaa", "repeated characters"),
    ("manage_context", "add_progress", "next_steps", "more more more more", "placeholder text"),
    ("manage_context", "add_progress", "percent_complete", 101, "less than or equal to 100"),
    ("manage_context", "add_progress", "percent_complete", -1, "greater than or equal to 0"),
    ("manage_context", "add_progress", "percent_complete", 50.5, "must be an integer"),
    ("manage_subtask", "create", "subtask_id", "../sub", "not a valid id"),
    ("manage_subtask", "create", "description", "[insert description here please]", "placeholder text"),
    ("manage_subtask", "update", "work_notes", "Did it.", "at least 10 characters"),
    ("manage_subtask", "update", "files_modified", ["/abs.py"], "is absolute"),
    ("manage_subtask", "complete", "completion_summary", "Done and dusted, all good here", "multiple sentences"),
    ("manage_subtask", "complete", "files_created", ["a/../../b"], "leaves its directory"),
]


@pytest.mark.parametrize(("tool", "action", "param", "bad", "expected"), BAD_VALUES)
def test_a_bad_value_is_named_and_answered_with_a_hint_an_example_and_a_correction(
    tool: str, action: str, param: str, bad: Any, expected: str
) -> None:
    validation = enf.validate(tool, action, call(tool, action, **{param: bad}))
    assert not validation.success
    assert list(validation.invalid_parameters) == [param]
    message = validation.invalid_parameters[param]
    assert message.startswith(param) and expected in message
    response = strict_response(validation)
    assert response.invalid_parameters == {param: message}
    assert f"• {param}" in response.hint and "Invalid parameters:" in response.hint
    assert enf.validate(tool, action, response.example).success
    assert response.suggested_correction[param].startswith(f"<invalid: {param} — ")
    assert not enf.validate(tool, action, response.suggested_correction).success
    assert response.documentation == f"docs/ENFORCEMENT.md#{tool}-{action}"


@pytest.mark.parametrize(("tool", "action"), PAIRS)
def test_each_example_is_a_complete_valid_call(tool: str, action: str) -> None:
    example = enf.example(tool, action)
    assert example["action"] == action
    validation = enf.validate(tool, action, example)
    assert validation.success, validation.error
    assert validation.missing_parameters == () and validation.invalid_parameters == {}
    assert validation.hint == "" and validation.data


@pytest.mark.parametrize(
    ("tool", "action", "param"),
    [(t, a, p) for t, a in PAIRS for p, f in enf.SCHEMAS[t][a].model_fields.items() if f.is_required()],
)
def test_a_missing_required_parameter_is_listed_with_its_hint(tool: str, action: str, param: str) -> None:
    validation = enf.validate(tool, action, call(tool, action, **{param: None}))
    assert validation.missing_parameters == (param,)
    assert validation.hint.startswith("Missing required parameters:\n")
    assert f"• {param}: {enf.param_hint(param)}" in validation.hint
    response = strict_response(validation)
    assert response.missing_parameters == [param]
    assert response.suggested_correction[param].startswith(f"<required: {param} — ")
    assert not enf.validate(tool, action, response.suggested_correction).success


@pytest.mark.parametrize("blank", [None, "", "   \n\t"])
def test_null_or_blank_counts_as_not_given(blank: Any) -> None:
    validation = enf.validate("manage_task", "complete", call("manage_task", "complete", completion_summary=blank))
    assert validation.missing_parameters == ("completion_summary",)
    optional = enf.validate("manage_task", "complete", call("manage_task", "complete", testing_notes=blank))
    assert optional.success


def test_seed_9_1_validation_catches_missing_params() -> None:
    result = enf.validate("manage_task", "complete", {"task_id": "123"})
    assert not result.success
    assert "completion_summary" in result.missing_parameters
    assert "Missing required parameters" in result.hint


def test_seed_9_1_hints_name_each_missing_parameter() -> None:
    hint = enf.validate("manage_task", "update", {"task_id": "task-123"}).hint
    assert "work_notes" in hint and "progress_made" in hint and "min 10 chars" in hint
    assert hint == (
        "Missing required parameters:\n"
        "• work_notes: Describe what work you performed (min 10 chars)\n"
        "• progress_made: Specify concrete progress achieved"
    )


def test_the_seed_hint_texts_are_exact() -> None:
    assert enf.param_hint("completion_summary") == "Provide detailed summary of completed work (min 20 chars)"
    assert enf.param_hint("testing_notes") == "Describe testing performed and results"
    assert enf.param_hint("files_modified") == "List files you modified (e.g., ['src/app.py', 'tests/test_app.py'])"
    assert enf.param_hint("anything_else") == "Provide value for anything_else"


def test_an_unknown_parameter_is_rejected_by_name_with_a_guess() -> None:
    validation = enf.validate("manage_task", "update", call("manage_task", "update", work_note="typo"))
    assert validation.unknown_parameters == ("work_note",)
    message = validation.invalid_parameters["work_note"]
    assert message.startswith("work_note: not a parameter of manage_task.update") and "'work_notes'" in message
    assert validation.call_errors == ("work_note",)
    assert "work_note" not in enf.suggested_correction("manage_task", "update", call("manage_task", "update"))


def test_the_action_and_session_id_travel_with_the_call() -> None:
    params = {**enf.example("manage_task", "update"), "session_id": "ses_1"}
    assert enf.validate("manage_task", "update", params).success
    wrong = enf.validate("manage_task", "update", {**params, "action": "complete"})
    assert wrong.invalid_parameters["action"].startswith("action: 'complete' does not match")
    correction = enf.suggested_correction("manage_task", "update", {**params, "work_notes": "TODO"})
    assert correction["action"] == "update" and correction["session_id"] == "ses_1"


def test_values_are_normalised_in_the_validated_data() -> None:
    params = call("manage_task", "update", work_notes="  Implemented the parser rewrite  ")
    params["files_modified"] = ["src\\app.py", "./tests//test_app.py", "weird..name.py"]
    data = enf.validate("manage_task", "update", params).data
    assert data["work_notes"] == "Implemented the parser rewrite"
    assert data["files_modified"] == ["src/app.py", "tests/test_app.py", "weird..name.py"]


def test_unknown_tools_and_actions_list_the_known_ones() -> None:
    tool = enf.validate("manage_everything", "update", {})
    assert not tool.success and not tool.known
    assert "manage_task, manage_context, manage_subtask" in tool.error
    action = enf.validate("manage_task", "delete", {"task_id": "t"})
    assert action.invalid_parameters["action"].endswith("known actions: create, update, complete")
    assert enf.suggested_correction("manage_task", "delete", {"task_id": "t"})["action"].startswith("<invalid:")
    assert enf.example("manage_task", "delete") == {} and enf.documentation("x", "y") == "docs/ENFORCEMENT.md"


def test_parameters_that_are_not_an_object_are_refused() -> None:
    validation = enf.validate("manage_task", "update", ["work_notes"])
    assert not validation.success and not validation.call_ok and "JSON object" in validation.error


def test_optional_context_parameters_not_given_become_suggestions() -> None:
    validation = enf.validate("manage_task", "update", call("manage_task", "update", files_modified=None))
    assert validation.success
    assert validation.suggestions == (
        f"files_modified: {enf.param_hint('files_modified')}",
        f"blockers: {enf.param_hint('blockers')}",
    )


def test_context_fields_separate_call_fields_from_context_parameters() -> None:
    assert enf.context_fields("manage_task", "update") == (
        ("work_notes", "progress_made"),
        ("files_modified", "blockers"),
    )
    assert enf.context_fields("manage_task", "create") == (("description",), ())
    assert enf.context_fields("manage_subtask", "complete")[0] == ("completion_summary",)


def test_a_rule_can_require_an_optional_context_parameter() -> None:
    params = call("manage_task", "complete", testing_notes=None)
    validation = enf.validate("manage_task", "complete", params, require=["testing_notes"])
    assert validation.missing_parameters == ("testing_notes",) and validation.call_ok
    with pytest.raises(ValueError, match="no context parameter task_id"):
        enf.validate("manage_task", "complete", params, require=["task_id"])


def test_a_filled_in_correction_validates() -> None:
    params = {"task_id": "task-9", "work_notes": "TODO", "files_modified": ["/abs"], "bogus": 1}
    correction = enf.suggested_correction("manage_task", "update", params)
    assert set(correction) == {"action", "task_id", "work_notes", "progress_made", "files_modified"}
    assert correction["task_id"] == "task-9"
    example = enf.example("manage_task", "update")
    filled = {k: example[k] if isinstance(v, str) and v.startswith("<") else v for k, v in correction.items()}
    assert enf.validate("manage_task", "update", filled).success


# --- placeholders (seed 5.2) ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "TODO",
        "todo: describe this",
        "Work TBD after review",
        "tbc once merged upstream",
        "FIXME before release",
        "N/A for this change",
        "Updated the parser...",
        "Updated the parser…",
        "placeholder text for now",
        "Lorem ipsum dolor sit amet",
        "XXX fill this in later",
        "fixed stuff",
        "Fixed some bugs and made changes",
        "Did some work on it",
        "aaaaaaaaaa",
        "----------",
        "test test test test",
        "<describe the work here>",
        "[insert summary]",
        "{your notes}",
        "<required: work_notes — describe the work performed, 10-1000 chars>",
    ],
)
def test_placeholder_text_is_recognised(text: str) -> None:
    assert (problem := enf.placeholder_problem(text)) is not None and problem.startswith("placeholder text")


@pytest.mark.parametrize(
    "text",
    [
        "Implemented JWT authentication in src/auth.py",
        "Reduced the p95 latency from 1000000 ns to 400000 ns",
        "Refactored the mastodon client; the todolist view is untouched",
        "Renamed List<String> helpers in the parser",
        "Fixed the login bug in auth.py",
        "Bumped version 1.2.3 to 1.2.4",
    ],
)
def test_real_text_is_not_a_placeholder(text: str) -> None:
    assert enf.placeholder_problem(text) is None


def test_a_placeholder_is_an_invalid_parameter_with_a_specific_hint() -> None:
    validation = enf.validate("manage_task", "update", call("manage_task", "update", work_notes="TODO: fill in later"))
    message = validation.invalid_parameters["work_notes"]
    assert message == "work_notes: Work notes contain placeholder text ('TODO') - replace it with the real content"
    assert f"• {message} — {enf.param_hint('work_notes')}" in validation.hint


# --- rules, YAML and rollout (seed 4.1, 8.2) ------------------------------------------------------------------


def test_the_shipped_rules_have_the_seed_defaults() -> None:
    rules = load_rules()
    assert rules.enabled and rules.default_level is WARNING
    assert rules.progressive == Progressive(enabled=True, warning_threshold=3, strict_threshold=5)
    assert rules.rollout.percentage == 100 and rules.rollout.agents == {}
    levels = {key: rule.level for key, rule in rules.rules.items()}
    assert levels[("manage_task", "complete")] is STRICT
    assert levels[("manage_task", "update")] is WARNING
    assert levels[("manage_context", "update")] is SOFT
    assert set(levels) == set(PAIRS)
    complete = rules.rules[("manage_task", "complete")]
    assert complete.required_params == ("completion_summary",) and not complete.fail_open
    assert rules.rules[("manage_task", "update")].required_params == ("work_notes", "progress_made")
    assert rules.rules[("manage_context", "update")].required_params == ("data",)
    assert all(not rule.fail_open for rule in rules.rules.values())


def test_unlisted_actions_get_the_default_level_and_rules_may_add_requirements() -> None:
    rules = enf.parse_rules(
        {
            "enforcement": {
                "default_level": "soft",
                "tools": {
                    "manage_task": {"complete": {"level": "strict", "required_params": ["testing_notes"]}},
                    "manage_context": {"update": {"fail_open": True}},
                },
            }
        }
    )
    complete = rules.rules[("manage_task", "complete")]
    assert complete.required_params == ("completion_summary", "testing_notes")
    assert "testing_notes" not in complete.optional_params
    update = rules.rules[("manage_context", "update")]
    assert (update.level, update.origin, update.fail_open) == (SOFT, "default_level", True)
    assert rules.rules[("manage_subtask", "create")].level is SOFT


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ("[1, 2]", "enforcement", "'enforcement' section"),
        ("enforcement: {}\nextra: 1", "extra", "unknown key"),
        ("enforcement: [1]", "enforcement", "must be a mapping"),
        ("enforcement: {colour: red}", "enforcement.colour", "unknown key"),
        ("enforcement: {enabled: 'yes'}", "enforcement.enabled", "true or false"),
        ("enforcement: {default_level: hard}", "enforcement.default_level", "'hard' is not one of"),
        ("enforcement: {progressive: {warning_threshold: -1}}", "enforcement.progressive.warning_threshold", "0"),
        (
            "enforcement: {progressive: {warning_threshold: 6, strict_threshold: 5}}",
            "enforcement.progressive.strict_threshold",
            "below warning_threshold",
        ),
        ("enforcement: {tools: {manage_files: {}}}", "enforcement.tools.manage_files", "unknown key"),
        ("enforcement: {tools: {manage_task: {delete: {}}}}", "enforcement.tools.manage_task.delete", "unknown key"),
        (
            "enforcement: {tools: {manage_task: {update: {level: loud}}}}",
            "enforcement.tools.manage_task.update.level",
            "'loud' is not one of disabled, soft, warning, strict",
        ),
        (
            "enforcement: {tools: {manage_task: {update: {levl: strict}}}}",
            "enforcement.tools.manage_task.update.levl",
            "unknown key",
        ),
        (
            "enforcement: {tools: {manage_task: {update: {required_params: work_notes}}}}",
            "enforcement.tools.manage_task.update.required_params",
            "list of parameter names",
        ),
        (
            "enforcement: {tools: {manage_task: {update: {required_params: [worknotes]}}}}",
            "enforcement.tools.manage_task.update.required_params",
            "'worknotes' is not a context parameter",
        ),
        (
            "enforcement: {tools: {manage_task: {update: {required_params: [task_id]}}}}",
            "enforcement.tools.manage_task.update.required_params",
            "'task_id' is not a context parameter",
        ),
        (
            "enforcement: {tools: {manage_task: {update: {fail_open: 1}}}}",
            "enforcement.tools.manage_task.update.fail_open",
            "true or false",
        ),
        ("enforcement: {rollout: {percentage: 101}}", "enforcement.rollout.percentage", "from 0 to 100"),
        ("enforcement: {rollout: {percentage: true}}", "enforcement.rollout.percentage", "from 0 to 100"),
        ("enforcement: {rollout: {percentage: 12.5}}", "enforcement.rollout.percentage", "from 0 to 100"),
        ("enforcement: {rollout: {strategy: canary}}", "enforcement.rollout.strategy", "not 'percentage'"),
        ("enforcement: {rollout: {agents: [a]}}", "enforcement.rollout.agents", "must map agent names"),
        (
            "enforcement: {rollout: {agents: {bot: {level: max}}}}",
            "enforcement.rollout.agents.bot.level",
            "'max' is not one of",
        ),
        (
            "enforcement: {rollout: {agents: {bot: {enabled: on, colour: red}}}}",
            "enforcement.rollout.agents.bot.colour",
            "unknown key",
        ),
    ],
)
def test_a_bad_rules_file_names_the_file_and_the_key(tmp_path: Path, text: str, key: str, problem: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(enf.EnforcementConfigError) as caught:
        load_rules(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: {key}: ") and problem in message


def test_unreadable_or_malformed_rules_files_are_reported(tmp_path: Path) -> None:
    with pytest.raises(enf.EnforcementConfigError, match=r"cannot read the enforcement rules .*missing\.yaml"):
        load_rules(tmp_path / "missing.yaml")
    with pytest.raises(enf.EnforcementConfigError, match=r"rules\.yaml is not valid YAML"):
        load_rules(write(tmp_path, "enforcement: {tools: [\n"))


def test_a_rules_file_loads_from_a_path(tmp_path: Path) -> None:
    rules = load_rules(write(tmp_path, "enforcement:\n  default_level: strict\n"))
    assert rules.source == str(tmp_path / "rules.yaml")
    assert rules.rules[("manage_context", "add_insight")].level is STRICT


def rules_with(rollout: dict[str, Any], enabled: bool = True) -> enf.RuleSet:
    return enf.parse_rules({"enforcement": {"enabled": enabled, "rollout": rollout}})


AGENTS = [f"agent-{i}" for i in range(1000)]


def test_rollout_buckets_are_stable_and_in_range() -> None:
    buckets = [enf.rollout_bucket(agent) for agent in AGENTS]
    assert buckets == [enf.rollout_bucket(agent) for agent in AGENTS]
    assert min(buckets) == 0 and max(buckets) == 99
    assert enf.rollout_bucket("agent-0") == enf.rollout_bucket("agent-0")


@pytest.mark.parametrize(("percentage", "low", "high"), [(0, 0, 0), (100, 1000, 1000), (50, 450, 550), (10, 70, 130)])
def test_a_percentage_rollout_enforces_about_that_share_of_agents(percentage: int, low: int, high: int) -> None:
    rules = rules_with({"percentage": percentage})
    rule_of = [rules.rule_for("manage_task", "complete", agent) for agent in AGENTS]
    enforced = [r for r in rule_of if r is not None and r.level is WARNING]  # the default_level
    assert low <= len(enforced) <= high
    outside = [r for r in rule_of if r is not None and r.level is DISABLED]
    assert all(r.origin == "outside rollout" for r in outside) and len(outside) == 1000 - len(enforced)
    assert rule_of == [rules.rule_for("manage_task", "complete", agent) for agent in AGENTS]


def test_a_wider_rollout_keeps_every_agent_already_in() -> None:
    narrow, wide = rules_with({"percentage": 20}), rules_with({"percentage": 60})

    def enforced(rules: enf.RuleSet) -> set[str]:
        return {a for a in AGENTS if rules.level_for("manage_task", "update", a, AgentToolStats()) is WARNING}

    assert enforced(narrow) < enforced(wide)


def test_agent_flags_override_the_percentage() -> None:
    rules = rules_with(
        {
            "percentage": 0,
            "agents": {
                "test_agent": {"enabled": False},
                "production_agent": {"enabled": True, "level": "strict"},
                "pilot": {"enabled": True},
            },
        }
    )
    test_rule = rules.rule_for("manage_task", "complete", "test_agent")
    assert test_rule is not None and (test_rule.level, test_rule.origin) == (DISABLED, "agent disabled")
    prod = rules.rule_for("manage_context", "update", "production_agent")
    assert prod is not None and (prod.level, prod.origin) == (STRICT, "agent level")
    pilot = rules.rule_for("manage_context", "update", "pilot")
    assert pilot is not None and (pilot.level, pilot.origin) == (WARNING, "default_level")
    other = rules.rule_for("manage_task", "complete", "someone-else")
    assert other is not None and other.level is DISABLED


def test_enforcement_switched_off_disables_every_rule_and_unknown_tools_have_none() -> None:
    rules = rules_with({}, enabled=False)
    assert all(rules.rule_for(t, a, "bot").level is DISABLED for t, a in PAIRS)  # type: ignore[union-attr]
    assert rules.rule_for("manage_files", "update", "bot") is None
    assert rules.level_for("manage_files", "update", "bot", AgentToolStats()) is DISABLED


# --- progressive enforcement (seed 4.2) -----------------------------------------------------------------------


def fold(outcomes: list[bool], stats: AgentToolStats | None = None) -> AgentToolStats:
    state = stats or AgentToolStats()
    for passed in outcomes:
        state = enf.evolve(state, passed)
    return state


def level(base: EnforcementLevel, stats: AgentToolStats) -> EnforcementLevel:
    return enf.effective_level(base, stats.checks, stats.passed)


def test_evolve_counts_checks_passes_and_consecutive_failures() -> None:
    stats = fold([False, False, True, False])
    assert stats == AgentToolStats(checks=4, passed=1, consecutive_failures=1)
    assert stats.compliance_rate == 0.25 and AgentToolStats().compliance_rate is None


def test_seed_9_1_first_attempts_keep_the_base_and_five_failures_make_it_strict() -> None:
    assert level(WARNING, AgentToolStats()) is WARNING
    assert level(WARNING, fold([False] * 5)) is STRICT


@pytest.mark.parametrize(
    ("base", "checks", "passed", "expected"),
    [
        (SOFT, 0, 0, SOFT),
        (SOFT, 2, 0, SOFT),  # fewer checks than warning_threshold: no escalation yet
        (SOFT, 3, 0, WARNING),  # strict needs strict_threshold checks
        (WARNING, 4, 0, WARNING),
        (SOFT, 5, 0, STRICT),
        (SOFT, 10, 10, SOFT),
        (SOFT, 100, 91, SOFT),  # 0.91 > 0.9 keeps the base
        (SOFT, 100, 90, WARNING),  # exactly 0.9 raises one level
        (WARNING, 100, 80, STRICT),
        (SOFT, 100, 71, WARNING),
        (SOFT, 100, 70, STRICT),  # exactly 0.7 is strict
        (STRICT, 100, 100, STRICT),
        (DISABLED, 100, 0, DISABLED),
    ],
)
def test_effective_level_follows_the_compliance_rate(
    base: EnforcementLevel, checks: int, passed: int, expected: EnforcementLevel
) -> None:
    assert enf.effective_level(base, checks, passed) is expected


def test_progressive_enforcement_can_be_switched_off_and_thresholds_moved() -> None:
    assert enf.effective_level(SOFT, 50, 0, Progressive(enabled=False)) is SOFT
    assert enf.effective_level(SOFT, 1, 0, Progressive(warning_threshold=0, strict_threshold=0)) is STRICT
    with pytest.raises(ValueError, match="between 0 and checks"):
        enf.effective_level(SOFT, 1, 2)


def test_ten_failures_escalate_to_strict_and_good_behaviour_brings_the_base_back() -> None:
    stats = fold([False] * 10)
    assert level(SOFT, stats) is STRICT
    seen = []
    for _ in range(91):
        stats = enf.evolve(stats, True)
        seen.append(level(SOFT, stats))
    assert seen[:23] == [STRICT] * 23  # 23/33 ≤ 0.7
    assert seen[23:90] == [WARNING] * 67  # 24/34 > 0.7 ... 90/100 = 0.9
    assert seen[90] is SOFT  # 91/101 > 0.9
    assert stats.consecutive_failures == 0


def test_escalation_is_per_level_of_the_rule_set() -> None:
    rules = load_rules()
    stats = fold([False] * 6)
    assert rules.level_for("manage_context", "update", "bot", stats) is STRICT
    assert rules.level_for("manage_context", "update", "bot", fold([True] * 6)) is SOFT


# --- decisions (seed 2.2, 6.2) --------------------------------------------------------------------------------

RULES = load_rules()
BAD_UPDATE = enf.validate("manage_task", "update", {"task_id": "task-1", "work_notes": "TODO"})
UPDATE_RULE = RULES.rules[("manage_task", "update")]


def test_a_valid_call_is_allowed_at_every_level() -> None:
    validation = enf.validate("manage_task", "update", enf.example("manage_task", "update"))
    for lv in EnforcementLevel:
        decision = enf.decide(UPDATE_RULE, lv, validation)
        assert decision.allow and decision.passed and decision.response is None
        assert decision.outcome == ("disabled" if lv is DISABLED else "passed")


def test_soft_records_only() -> None:
    decision = enf.decide(UPDATE_RULE, SOFT, BAD_UPDATE)
    assert (decision.allow, decision.passed, decision.outcome) == (True, False, "recorded")
    assert decision.context_warning is None and decision.response is None


def test_warning_allows_with_a_context_warning_and_suggestions() -> None:
    decision = enf.decide(UPDATE_RULE, WARNING, BAD_UPDATE)
    assert decision.allow and not decision.passed and decision.outcome == "warned"
    assert decision.context_warning is not None and "progress_made" in decision.context_warning
    assert decision.suggestions == (
        f"progress_made: {enf.param_hint('progress_made')}",
        f"work_notes: {enf.param_hint('work_notes')}",
    )


def test_strict_blocks_with_the_full_response() -> None:
    decision = enf.decide(UPDATE_RULE, STRICT, BAD_UPDATE)
    assert not decision.allow and decision.outcome == "blocked" and decision.response is not None
    body = decision.response.model_dump(mode="json")
    assert set(body) == {
        "success",
        "error",
        "enforcement_level",
        "missing_parameters",
        "invalid_parameters",
        "hint",
        "example",
        "suggested_correction",
        "documentation",
    }
    assert body["success"] is False and body["enforcement_level"] == "strict"
    assert body["missing_parameters"] == ["progress_made"] and list(body["invalid_parameters"]) == ["work_notes"]
    assert body["error"].startswith("manage_task.update blocked by strict parameter enforcement")
    assert body["example"] == enf.example("manage_task", "update")
    assert body["documentation"] == "docs/ENFORCEMENT.md#manage_task-update"


def test_seed_9_2_a_completion_without_summary_is_blocked_by_default() -> None:
    rule = RULES.rule_for("manage_task", "complete", "any-agent")
    assert rule is not None
    validation = enf.validate("manage_task", "complete", {"action": "complete", "task_id": "test-123"})
    decision = enf.decide(rule, enf.effective_level(rule.level, 0, 0), validation)
    assert decision.response is not None and "completion_summary" in decision.response.missing_parameters
    assert decision.response.example


def test_a_call_that_cannot_run_is_blocked_even_at_soft_but_not_when_disabled() -> None:
    for params in ({"work_notes": "Implemented the parser", "progress_made": "Parser handles nesting"}, {"x": 1}):
        validation = enf.validate("manage_task", "update", params)
        assert not validation.call_ok
        soft = enf.decide(UPDATE_RULE, SOFT, validation)
        assert not soft.allow and soft.outcome == "invalid_call" and soft.response is not None
        assert enf.decide(UPDATE_RULE, DISABLED, validation).allow
    unknown = enf.decide(None, WARNING, enf.validate("manage_files", "delete", {}))
    assert not unknown.allow and unknown.response is not None and "known tools" in unknown.response.error


def test_decide_refuses_a_rule_for_another_call() -> None:
    with pytest.raises(ValueError, match="does not match"):
        enf.decide(RULES.rules[("manage_task", "complete")], STRICT, BAD_UPDATE)


def test_an_internal_error_fails_closed_unless_the_rule_fails_open() -> None:
    params = enf.example("manage_task", "update")
    closed = enf.decide_internal_error(UPDATE_RULE, "manage_task", "update", params, "boom")
    assert not closed.allow and closed.response is not None and "fail closed" in closed.response.error
    assert closed.response.suggested_correction["work_notes"] == params["work_notes"]
    opened = enf.decide_internal_error(
        enf.Rule("manage_task", "update", WARNING, (), (), fail_open=True), "manage_task", "update", params, "boom"
    )
    assert opened.allow and opened.outcome == "bypassed" and opened.context_warning is not None


# --- never raises ---------------------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
FIELD_NAMES = sorted({n for t, a in PAIRS for n in enf.SCHEMAS[t][a].model_fields} | {"action", "session_id"})
TEXTS = st.sampled_from(["TODO", "src/a.py", "../x", "task-1", SUMMARY_OK, "", " ", "<required: x — y>"])
PARAMS = st.dictionaries(
    st.sampled_from(FIELD_NAMES) | st.text(max_size=10), JSON | TEXTS | st.lists(TEXTS, max_size=3), max_size=8
)
TOOLS = st.sampled_from(PAIRS) | st.tuples(st.text(max_size=12), st.text(max_size=12))


@FAST
@given(TOOLS, PARAMS | JSON, st.sampled_from(list(EnforcementLevel)))
def test_validate_never_raises_and_always_answers_consistently(
    pair: tuple[str, str], params: Any, lv: EnforcementLevel
) -> None:
    tool, action = pair
    validation = enf.validate(tool, action, params)
    clean = not validation.missing_parameters and not validation.invalid_parameters
    assert validation.success == (validation.known and isinstance(params, dict) and clean)
    for name, message in validation.invalid_parameters.items():
        assert message.startswith(name)
    decision = enf.decide(None, lv, validation)
    assert decision.allow or (decision.response is not None and decision.response.hint)
    correction = enf.suggested_correction(tool, action, params)
    gaps = set(validation.missing_parameters) | set(validation.invalid_parameters)
    if validation.known and gaps - set(validation.unknown_parameters) - {"action"}:
        assert not enf.validate(tool, action, correction).success  # the marks never pass unchanged
