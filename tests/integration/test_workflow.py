"""Workflow DNA gates (seed 003, Layer A) on a real ledger: every rule of the default table, the seed's
claim → contribute → rework → re-query loop, and DNA the ledger cannot verify (forged) refused. The rules are the
workflow's, not the store's: every ledger here is on the in-memory store (``MEMORY``)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from ledger.core.errors import Conflict, Forbidden, InvalidInput, NotFound
from ledger.service import Actor, Ledger
from ledger.workflow import decisions as wf
from ledger.workflow.table import load_workflow
from tests.conftest import MEMORY, LedgerFactory

DEV, QA, PDSA = Actor("dev-agent", "mcp"), Actor("qa-agent", "mcp"), Actor("pdsa-agent", "mcp")
_ids = itertools.count(1)


def query(ledger: Ledger, who: Actor, sid: str) -> None:
    ledger.search(who, sid, "what do we know about this task")


def contribute(ledger: Ledger, who: Actor, text: str | None = None) -> str:
    text = text or f"Learned thing number {next(_ids)} while working the task: gates read the ledger."
    return ledger.remember(who, text, []).block_id


def test_the_seeds_loop_claim_after_query_contribute_before_review_rework_forces_a_requery(
    make_ledger: LedgerFactory,
) -> None:
    ledger = make_ledger(MEMORY)
    ledger.task_create(PDSA, "mem-gate", "Enforce memory usage", role="dev")
    dev = ledger.clock_in(DEV, "dev").session_id
    qa = ledger.clock_in(QA, "qa").session_id

    no_dna = ledger.task_transition(DEV, "mem-gate", "active", dev)
    query(ledger, DEV, dev)
    ledger.task_update_dna(DEV, "mem-gate", {"memory_query_session": dev})
    claimed = ledger.task_transition(DEV, "mem-gate", "active", dev)
    early_review = ledger.task_transition(DEV, "mem-gate", "review", dev)
    learned = contribute(ledger, DEV)
    ledger.task_update_dna(DEV, "mem-gate", {"memory_contribution_id": learned})
    reviewed = ledger.task_transition(DEV, "mem-gate", "review", dev)
    reworked = ledger.task_transition(QA, "mem-gate", "rework", qa)
    after_rework = ledger.task_get("mem-gate")
    cleared = ledger.task_transition(DEV, "mem-gate", "active", dev)
    ledger.task_update_dna(DEV, "mem-gate", {"memory_query_session": dev})  # the session of the old query
    stale = ledger.task_transition(DEV, "mem-gate", "active", dev)
    query(ledger, DEV, dev)
    reclaimed = ledger.task_transition(DEV, "mem-gate", "active", dev)

    assert (no_dna.status, no_dna.codes) == ("refused", ["dna_missing"])
    assert claimed.status == "transitioned" and claimed.rule == "ready->active:dev"
    assert set(claimed.evidence) == {"memory_query_session"}
    assert (early_review.status, early_review.codes) == ("refused", ["dna_missing"])
    assert reviewed.status == "transitioned" and reviewed.task.role == "qa"
    assert reviewed.evidence["memory_contribution_id"] > claimed.position
    assert reworked.status == "transitioned" and reworked.cleared_dna == [
        "memory_query_session",
        "memory_contribution_id",
    ]
    assert after_rework.role == "dev" and after_rework.dna == {}
    assert (cleared.status, cleared.codes) == ("refused", ["dna_missing"])
    assert (stale.status, stale.codes) == ("refused", ["dna_unverified"])
    assert "no memory query since the task entered rework" in stale.reasons[0]
    assert reclaimed.status == "transitioned" and reclaimed.evidence["memory_query_session"] > reworked.position
    report = {a.agent: a for a in ledger.compliance_report().agents}
    assert report["dev-agent"].transitions == 3 and report["dev-agent"].transition_refusals == 4
    assert report["dev-agent"].refusal_reasons == {"dna_missing": 3, "dna_unverified": 1}
    assert report["qa-agent"].transitions == 1


# --- forged DNA ---------------------------------------------------------------------------------------------------


@pytest.fixture
def claimable(make_ledger: LedgerFactory) -> tuple[Ledger, str]:
    ledger = make_ledger(MEMORY)
    ledger.task_create(PDSA, "forge", "A task to forge DNA for", role="dev")
    return ledger, ledger.clock_in(DEV, "dev").session_id


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("ses_" + "0" * 20, "names no session"),
        ("auto-claim", "is not a session id"),
        ("", None),  # empty is missing, not evidence
    ],
)
def test_a_made_up_or_placeholder_query_session_is_refused(
    claimable: tuple[Ledger, str], value: str, reason: str | None
) -> None:
    ledger, sid = claimable
    query(ledger, DEV, sid)
    ledger.task_update_dna(DEV, "forge", {"memory_query_session": value})
    result = ledger.task_transition(DEV, "forge", "active", sid)
    assert result.status == "refused" and ledger.task_get("forge").status == "ready"
    if reason is None:
        assert result.codes == ["dna_missing"]
    else:
        assert result.codes == ["dna_unverified"] and reason in result.reasons[0]


def test_another_agents_session_is_refused(claimable: tuple[Ledger, str]) -> None:
    ledger, sid = claimable
    other = ledger.clock_in(QA, "dev").session_id
    query(ledger, QA, other)
    ledger.task_update_dna(DEV, "forge", {"memory_query_session": other})
    result = ledger.task_transition(DEV, "forge", "active", sid)
    assert result.codes == ["dna_unverified"] and "another agent's session" in result.reasons[0]


def test_a_query_from_before_the_task_became_claimable_is_refused(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    sid = ledger.clock_in(DEV, "dev").session_id
    query(ledger, DEV, sid)
    ledger.task_create(PDSA, "late", "Created after the query", role="dev", dna={"memory_query_session": sid})
    result = ledger.task_transition(DEV, "late", "active", sid)
    assert result.codes == ["dna_unverified"] and "no memory query since the task entered ready" in result.reasons[0]


@pytest.mark.parametrize("forgery", ["made-up", "placeholder", "other-agent", "before-active"])
def test_a_forged_contribution_is_refused(make_ledger: LedgerFactory, forgery: str) -> None:
    ledger = make_ledger(MEMORY)
    ledger.task_create(PDSA, "c", "Contribute first", role="dev")
    sid = ledger.clock_in(DEV, "dev").session_id
    early = contribute(ledger, DEV, "A learning from before the task became active, reused.")
    query(ledger, DEV, sid)
    ledger.task_update_dna(DEV, "c", {"memory_query_session": sid})
    assert ledger.task_transition(DEV, "c", "active", sid).status == "transitioned"
    value = {
        "made-up": "blk_" + "f" * 24,
        "placeholder": "auto-contribute",
        "other-agent": contribute(ledger, QA, "QA's own learning about the release, not the developer's learning."),
        "before-active": early,
    }[forgery]
    ledger.task_update_dna(DEV, "c", {"memory_contribution_id": value})
    result = ledger.task_transition(DEV, "c", "review", sid)
    expected = {
        "made-up": "names no memory block",
        "placeholder": "is not a block id",
        "other-agent": "contributed by another agent",
        "before-active": "before the task became active",
    }[forgery]
    assert result.codes == ["dna_unverified"] and expected in result.reasons[0]
    assert ledger.task_get("c").status == "active"


def test_pdsa_ref_must_be_a_url_and_blocked_needs_a_reason_then_restores(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    with pytest.raises(InvalidInput, match="not a URL"):
        ledger.task_create(PDSA, "p", "Bad ref", role="pdsa", dna={"pdsa_ref": "see the doc"})
    ledger.task_create(PDSA, "p", "Design", role="pdsa", status="active")
    sid = ledger.clock_in(PDSA, "pdsa").session_id
    no_reason = ledger.task_transition(PDSA, "p", "blocked", sid)
    ledger.task_update_dna(PDSA, "p", {"blocked_reason": "waiting for the schema decision"})
    blocked = ledger.task_transition(PDSA, "p", "blocked", sid)
    elsewhere = ledger.task_transition(PDSA, "p", "review", sid)
    restored = ledger.task_transition(PDSA, "p", "restore", sid)
    assert no_reason.codes == ["dna_missing"]
    assert blocked.status == "transitioned" and blocked.task.blocked_from == "active"
    assert elsewhere.codes == ["restore_only"]
    assert restored.status == "transitioned" and restored.task.status == "active"


# --- every rule of the default table ------------------------------------------------------------------------------

FLOW = load_workflow()
RULES = [(t, key, rule) for t, table in FLOW.types.items() for key, rule in table.items()]


def _generic_actor(task_type: str, key: str, rule: wf.Rule) -> str:
    """An allowed role without a role-specific key of its own (else the first: its own key then wins)."""
    table = FLOW.types[task_type]
    unshadowed = [r for r in rule.allowed_actors if f"{key}:{r}" not in table]
    return (unshadowed or list(rule.allowed_actors))[0]


def _prepare(ledger: Ledger, task_type: str, key: str, rule: wf.Rule) -> tuple[str, Actor, str, str]:
    """A task in the rule's from-status, assigned as the rule needs, with its DNA really proven."""
    source, target = key.split(":")[0].split("->")
    role = key.split(":")[1] if ":" in key else _generic_actor(task_type, key, rule)
    admin = role in FLOW.human_roles
    who = Actor(f"{role}-agent", "mcp", admin=admin)
    task_id = f"rule-{next(_ids)}"
    start = "active" if source in {"any", "blocked"} else source
    ledger.task_create(PDSA, task_id, f"Rule {key}", task_type=task_type, role=rule.require_role or role, status=start)
    sid = ledger.clock_in(who, role).session_id
    if source == "blocked":
        ledger.task_update_dna(who, task_id, {"blocked_reason": "a dependency is late"})
        assert ledger.task_transition(who, task_id, "blocked", sid).status == "transitioned"
    dna: dict[str, object] = {}
    for name in rule.requires_dna:
        if name == "memory_query_session":
            query(ledger, who, sid)
            dna[name] = sid
        elif name == "memory_contribution_id":
            dna[name] = contribute(ledger, who)
        elif name == "pdsa_ref":
            dna[name] = "https://example.org/pdsa/42"
        else:
            dna[name] = "a reason"
    if dna:
        ledger.task_update_dna(who, task_id, dna)
    return task_id, who, sid, "restore" if target == "restore" else target


@pytest.mark.parametrize(("task_type", "key", "rule"), RULES, ids=[f"{t}:{k}" for t, k, _ in RULES])
def test_every_rule_of_the_default_table(make_ledger: LedgerFactory, task_type: str, key: str, rule: wf.Rule) -> None:
    ledger = make_ledger(MEMORY)
    task_id, who, sid, target = _prepare(ledger, task_type, key, rule)
    before = ledger.task_get(task_id)
    result = ledger.task_transition(who, task_id, target, sid)
    assert result.status == "transitioned", result.reasons
    # Lookup order: the key of the task's role first, then the generic key (then any->to:role, any->to).
    role_key = f"{key.split(':')[0]}:{before.role}"
    assert result.rule == (role_key if role_key in FLOW.types[task_type] else key)
    assert result.task.role == (rule.new_role or before.role)
    assert set(result.evidence) == {n for n in rule.requires_dna if n.startswith("memory_")}
    for name in rule.clears_dna:
        assert name not in result.task.dna
    # The same transition by a role that no rule lets make it (or, when every role may, by an agent posing as
    # the human role without an administrator's credential) is refused and changes nothing.
    source, target_name = key.split(":")[0].split("->")
    source = "active" if source == "any" else source

    def permitted(role: str) -> bool:  # the row is chosen by the task's role; allowedActors limit who acts
        found = FLOW.rule_for(task_type, source, target_name if target_name != "restore" else "active", before.role)
        return found is not None and role in found.allowed_actors

    outsiders = [r for r in FLOW.roles if r not in FLOW.human_roles and not permitted(r)]
    outsider_role = outsiders[0] if outsiders else FLOW.human_roles[0]
    outsider = Actor(f"{outsider_role}-agent", "mcp")
    twin, _, _, target2 = _prepare(ledger, task_type, key, rule)
    refused = ledger.task_transition(outsider, twin, target2, ledger.clock_in(outsider, outsider_role).session_id)
    assert refused.status == "refused", (outsider_role, refused.rule)
    assert {"actor_not_allowed", "not_in_table", "human_only"} & set(refused.codes), refused.codes
    assert ledger.task_get(twin).status == refused.task.status != result.task.status


def test_a_transition_not_in_the_table_is_refused_and_says_what_is_allowed(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    ledger.task_create(PDSA, "skip", "Try to skip review", role="dev", status="active")
    sid = ledger.clock_in(DEV, "dev").session_id
    result = ledger.task_transition(DEV, "skip", "complete", sid)
    assert result.codes == ["not_in_table"] and "active->review" in result.reasons[0]


def test_a_human_role_needs_an_administrator(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    ledger.task_create(PDSA, "h", "Approve", role="liaison", status="approval")
    agent = Actor("pretender", "mcp")
    refused = ledger.task_transition(agent, "h", "complete", ledger.clock_in(agent, "human").session_id)
    person = Actor("thomas", "cli", admin=True)
    done = ledger.task_transition(person, "h", "complete", ledger.clock_in(person, "human").session_id)
    assert refused.codes == ["human_only"] and done.status == "transitioned"


def test_terminal_tasks_stay_put(make_ledger: LedgerFactory) -> None:
    ledger = make_ledger(MEMORY)
    ledger.task_create(PDSA, "t", "Cancel me", role="dev", status="review")
    liaison = Actor("liaison-agent", "mcp")
    sid = ledger.clock_in(liaison, "liaison").session_id
    assert ledger.task_transition(liaison, "t", "cancelled", sid).status == "transitioned"
    assert ledger.task_transition(liaison, "t", "blocked", sid).codes == ["terminal"]


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda led, s: led.task_transition(DEV, "x", "flying", s), InvalidInput),
        (lambda led, s: led.task_transition(DEV, "nope", "active", s), NotFound),
        (lambda led, s: led.task_transition(QA, "x", "active", s), Forbidden),
        (lambda led, s: led.task_create(PDSA, "x", "Again"), Conflict),
        (lambda led, s: led.task_create(PDSA, "Bad Id!", "t"), InvalidInput),
        (lambda led, s: led.task_create(PDSA, "y", "t", task_type="epic"), InvalidInput),
        (lambda led, s: led.task_create(PDSA, "y", "t", status="complete"), InvalidInput),
        (lambda led, s: led.task_update_dna(DEV, "x", {}), InvalidInput),
        (lambda led, s: led.task_update_dna(DEV, "x", {"pdsa_ref": 3}), InvalidInput),
    ],
)
def test_bad_workflow_input_says_what_to_send_and_records_nothing(
    make_ledger: LedgerFactory, call: object, error: type[Exception]
) -> None:
    ledger = make_ledger(MEMORY)
    ledger.task_create(PDSA, "x", "Existing", role="dev")
    sid = ledger.clock_in(DEV, "dev").session_id
    head = ledger.store.head()
    with pytest.raises(error):
        call(ledger, sid)  # type: ignore[operator]
    assert ledger.store.head() == head


def test_a_project_can_replace_the_table(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    table = tmp_path / "flow.yaml"
    table.write_text(
        "statuses: [todo, doing, done]\nroles: [dev]\n"
        "types:\n  task:\n    todo->doing: {allowedActors: [dev], requiresDna: [memory_query_session]}\n"
        "    doing->done: {allowedActors: [dev]}\n",
        encoding="utf-8",
    )
    ledger = make_ledger(MEMORY, workflow_file=table)
    ledger.task_create(DEV, "own", "Custom flow", role="dev", status="todo")
    sid = ledger.clock_in(DEV, "dev").session_id
    query(ledger, DEV, sid)
    ledger.task_update_dna(DEV, "own", {"memory_query_session": sid})
    assert ledger.task_transition(DEV, "own", "doing", sid).status == "transitioned"
    assert ledger.task_transition(DEV, "own", "done", sid).status == "transitioned"
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "statuses: [a]\nroles: [dev]\ntypes:\n  task:\n    a->zz: {allowedActors: [dev]}\n", encoding="utf-8"
    )
    with pytest.raises(InvalidInput, match="'zz' is not a status"):
        make_ledger(MEMORY, workflow_file=bad)
