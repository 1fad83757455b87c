"""The published schema agrees with the code: for every limit a tool's input schema states (read from ``tools/list``,
not copied here), a value at the bound is accepted by the tool and one past it is refused, through a real MCP
client on a real ledger. Patterns and enums likewise: a value of the form is accepted, one outside it refused."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from mcp import Client

from api.bootstrap import initialise
from api.mcp.server import build_mcp
from api.settings import Settings
from tests.conftest import LedgerFactory
from tests.mcp_support import call

BLOCK = "<block>"  # replaced by the id of a block remembered before the call


def words(n: int) -> str:
    """``n`` characters of ordinary words (searchable, storable, not ending in a space)."""
    text = ("ledger memory " * (n // 14 + 1))[:n]
    return text[:-1] + "x" if text.endswith(" ") else text


def statement(n: int) -> str:
    """A declarative statement of ``n`` characters."""
    text = ("Role separation keeps reviewers independent of implementers " * (n // 60 + 1))[:n]
    return text[:-1] + "s" if text.endswith(" ") else text


@dataclass(frozen=True)
class Bound:
    tool: str
    param: str  # 'tags' or 'tags.items'
    keyword: str  # the JSON Schema keyword whose value is the bound
    make: Callable[[Any], Any]  # a value of that size (a length, a count or the number itself)
    refusal: str  # what the tool says past the bound
    args: dict[str, Any] = field(default_factory=dict)  # the rest of a call that succeeds
    succeeds: bool = True  # at the bound the call succeeds; else it is only not refused for this argument
    error: bool = True  # past the bound the answer is a tool error (verify_stamp answers valid: false instead)

    def __str__(self) -> str:
        return f"{self.tool}.{self.param}.{self.keyword}"


def chars(c: str) -> Callable[[int], str]:
    return lambda n: c * n


def same(value: Any) -> Any:
    return value


OUTCOME = {"block_ids": [BLOCK], "signal": 0.5}
ANCHOR = {"role": "dev", "proof_candidate": "x"}
TASK = {"task_id": "t-1", "title": "A task"}
BOUNDS = [
    Bound("clock_in", "role", "maxLength", chars("r"), "is not valid"),
    Bound("clock_in", "role", "minLength", chars("r"), "is not valid"),
    Bound("clock_in", "focus", "maxLength", chars("f"), "focus is longer", {"role": "dev"}),
    # at the bound the path is refused for another reason: it is no directory inside a project root
    Bound("clock_in", "working_dir", "maxLength", lambda n: "/" + "d" * (n - 1), "too long", {"role": "dev"}, False),
    Bound("clock_in", "working_dir", "minLength", lambda n: "/" * n, "empty or too long", {"role": "dev"}, False),
    Bound("memory_remember", "content", "maxLength", words, "the limit is"),
    Bound("memory_remember", "content", "minLength", chars("c"), "content is empty"),
    Bound(
        "memory_remember",
        "tags",
        "maxItems",
        lambda n: [f"t{i}" for i in range(n)],
        "tags; the limit",
        {"content": "c"},
    ),
    Bound("memory_remember", "tags.items", "maxLength", lambda n: ["t" * n], "is not valid", {"content": "c"}),
    Bound("memory_remember", "category", "maxLength", chars("c"), "is not valid", {"content": "c"}),
    Bound("memory_search", "query", "maxLength", words, "query is longer"),
    Bound("memory_search", "query", "minLength", chars("q"), "query is empty"),
    Bound("memory_search", "limit", "maximum", same, "out of range", {"query": "q"}),
    Bound("memory_search", "limit", "minimum", same, "out of range", {"query": "q"}),
    Bound("memory_recall", "query", "maxLength", words, "query is longer"),
    Bound("memory_recall", "query", "minLength", chars("q"), "query is empty"),
    Bound("memory_recall", "top_k", "maximum", same, "out of range"),
    Bound("memory_recall", "top_k", "minimum", same, "out of range"),
    Bound("memory_outcome", "signal", "maximum", same, "not a number from 0 to 1", OUTCOME),
    Bound("memory_outcome", "signal", "minimum", same, "not a number from 0 to 1", OUTCOME),
    Bound("memory_outcome", "note", "maxLength", words, "note is not a text", OUTCOME),
    # ids that name no block: at the bound they are looked up (and not found), past it they are not
    Bound(
        "memory_outcome",
        "block_ids",
        "maxItems",
        lambda n: [f"blk_{i:024x}" for i in range(n)],
        "the limit is",
        OUTCOME,
        False,
    ),
    Bound(
        "memory_outcome",
        "block_ids",
        "minItems",
        lambda n: [f"blk_{i:024x}" for i in range(n)],
        "is empty",
        OUTCOME,
        False,
    ),
    Bound("assert_compliance", "request_id", "maxLength", chars("r"), "not a valid request id"),
    Bound("assert_compliance", "request_id", "minLength", chars("r"), "not a valid request id"),
    # the default session has no working directory, so a proof of a valid size is refused for that
    Bound("odyssean_anchor", "proof_candidate", "maxLength", chars("p"), "the limit is", ANCHOR, False),
    Bound("odyssean_anchor", "proof_candidate", "minLength", chars("p"), "is empty", ANCHOR, False),
    Bound("odyssean_anchor", "role", "maxLength", chars("r"), "is not valid", ANCHOR, False),
    Bound("memory_setup", "identity", "maxLength", words, "the limit is", {"seed": False}),
    Bound("memory_setup", "identity", "minLength", chars("i"), "is empty", {"seed": False}),
    Bound("memory_setup", "values.items", "maxLength", lambda n: [words(n)], "the limit is", {"seed": False}),
    # a receipt of a valid size that is no receipt is refused as such
    Bound("verify_stamp", "receipt", "maxLength", chars("r"), "empty or too long", {}, False, error=False),
    Bound("verify_stamp", "receipt", "minLength", chars("r"), "empty", {}, False),
    Bound("query_brain", "prompt", "maxLength", words, "the limit is"),
    Bound("query_brain", "context", "maxLength", words, "context is", {"prompt": "ledger"}),
    Bound("contribute_to_brain", "prompt", "maxLength", statement, "the limit is"),
    Bound("contribute_to_brain", "prompt", "minLength", statement, "not longer than"),
    Bound("task_create", "task_id", "maxLength", chars("t"), "is not valid", TASK),
    Bound("task_create", "title", "maxLength", chars("T"), "title is empty or too long", TASK),
    Bound("task_create", "title", "minLength", chars("T"), "title is empty or too long", TASK),
]


@dataclass(frozen=True)
class Form:
    tool: str
    param: str
    keyword: str  # 'pattern' or 'enum'
    good: list[Any]  # values of the form (for an enum: None = every listed value)
    bad: Any
    refusal: str
    args: dict[str, Any] = field(default_factory=dict)
    succeeds: bool = True

    def __str__(self) -> str:
        return f"{self.tool}.{self.param}.{self.keyword}"


SESSION = "ses_" + "0" * 20
FORMS = [
    Form("clock_out", "session_id", "pattern", [SESSION], "ses_" + "0" * 19, "is not a session id", {}, False),
    Form(
        "memory_search",
        "session_id",
        "pattern",
        [SESSION],
        "SES_" + "0" * 20,
        "is not a session id",
        {"query": "q"},
        False,
    ),
    Form("clock_in", "role", "pattern", ["dev", "qa.lead_2-b"], "-dev", "is not valid"),
    Form(
        "memory_remember",
        "tags.items",
        "pattern",
        [["project/db"], ["a.b-c_d"]],
        ["-db"],
        "is not valid",
        {"content": "c"},
    ),
    Form(
        "memory_remember",
        "category",
        "pattern",
        ["decision", "observation"],
        "9lives",
        "is not valid",
        {"content": "c"},
    ),
    Form("assert_compliance", "request_id", "pattern", ["a1._:-", "7f9c"], ".a", "not a valid request id"),
    Form("task_create", "task_id", "pattern", ["memory-gate-42", "a.b_c"], "Memory", "is not valid", TASK),
    Form("odyssean_anchor", "tier", "enum", [], "shallow", "is not known", ANCHOR, False),
    Form("memory_recall", "frame", "enum", [], "focus", "argument 'frame' is not valid"),
    Form("task_create", "task_type", "enum", [], "epic", "is not in the workflow", TASK),
    Form("task_create", "role", "enum", [], "boss", "is not in the workflow", TASK),
    Form("task_create", "status", "enum", [], "complete", "cannot start as", TASK),
    # a move the table does not offer is a recorded refusal, not an unknown status
    Form("task_transition", "to_status", "enum", [], "done", "is not in the workflow", {"task_id": "t-1"}, False),
]


def published(tools: dict[str, Any], tool: str, param: str) -> dict[str, Any]:
    """The schema of ``param`` (``name`` or ``name.items``) as ``tools/list`` published it, null branch left out."""
    name, _, part = param.partition(".")
    prop = tools[tool].input_schema["properties"][name]
    branches = [b for b in prop.get("anyOf", [prop]) if b.get("type") != "null"]
    schema = {**prop, **branches[0]}
    return dict(schema[part]) if part else schema


def past(bound: Any, keyword: str, kind: str) -> Any:
    step: float = 1 if kind != "number" else 0.01
    return bound + step if keyword.startswith("max") else bound - step


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The tools as ``tools/list`` publishes them (read once for the module)."""
    home = tmp_path_factory.mktemp("listing")
    ledger, _ = initialise(Settings(home=home, database_url=f"sqlite:///{home / 'ledger.db'}"))

    async def listing() -> dict[str, Any]:
        async with Client(build_mcp(ledger, agent="bounds")) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    try:
        return anyio.run(listing)
    finally:
        ledger.store.dispose()


def run(make_ledger: LedgerFactory, tool: str, calls: list[dict[str, Any]]) -> list[Any]:
    async def scenario() -> list[Any]:
        async with Client(build_mcp(make_ledger(), agent="bounds", open_default_session=True)) as client:
            block = await call(client, "memory_remember", {"content": "The bounds test remembers this block."})
            if tool == "task_transition":
                await call(client, "task_create", TASK)
            results = []
            for args in calls:
                sent = {
                    k: [block["block_id"] if x == BLOCK else x for x in v] if isinstance(v, list) else v
                    for k, v in args.items()
                }
                results.append(await client.call_tool(tool, sent))
        return results

    return anyio.run(scenario)


def text(result: Any) -> str:
    return result.content[0].text if result.content else ""


@pytest.mark.parametrize("case", BOUNDS, ids=str)
def test_a_value_at_each_published_bound_is_accepted_and_one_past_it_refused(
    make_ledger: LedgerFactory, tools: dict[str, Any], case: Bound
) -> None:
    schema = published(tools, case.tool, case.param)
    bound = schema[case.keyword]
    values = [case.make(bound), case.make(past(bound, case.keyword, schema.get("type", "")))]
    name = case.param.partition(".")[0]
    calls = [{**case.args, name: v} for v in values]
    at, beyond = run(make_ledger, case.tool, calls)
    assert beyond.is_error == case.error and case.refusal in text(beyond), text(beyond)
    assert case.refusal not in text(at), text(at)
    if case.succeeds:
        assert not at.is_error, text(at)


@pytest.mark.parametrize("case", FORMS, ids=str)
def test_a_value_of_the_published_form_is_accepted_and_one_outside_it_refused(
    make_ledger: LedgerFactory, tools: dict[str, Any], case: Form
) -> None:
    schema = published(tools, case.tool, case.param)
    name, _, part = case.param.partition(".")
    if case.keyword == "pattern":
        form = re.compile(schema["pattern"])
        for value in [*case.good, case.bad]:
            texts = value if part else [value]
            assert all(form.fullmatch(t) for t in texts) == (value is not case.bad), value
        good = case.good
    else:
        assert case.bad not in schema["enum"]
        good = list(schema["enum"])
    fresh = case.tool == "task_create" and name != "task_id"  # each created task needs an id of its own
    calls = [
        {**case.args, **({"task_id": f"t-{i + 2}"} if fresh else {}), name: v} for i, v in enumerate([*good, case.bad])
    ]
    results = run(make_ledger, case.tool, calls)
    *accepted, refused = results
    assert refused.is_error and case.refusal in text(refused), text(refused)
    for value, result in zip(good, accepted, strict=True):
        assert case.refusal not in text(result), (value, text(result))
        if case.succeeds:
            assert not result.is_error, (value, text(result))
