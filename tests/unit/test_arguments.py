"""Arguments described once (``api.fields``) and explained when they fail (``api.mcp.arguments``): pure functions."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from api.fields import described, publish
from api.mcp.arguments import clean, expected, explain


class Call(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: Annotated[str, described("what to find", minLength=1, maxLength=1000)]
    limit: Annotated[int, described("hits at most", minimum=1, maximum=100)] = 10
    tags: Annotated[list[str] | None, described("tags", maxItems=20, items={"maxLength": 64})] = None


def failure(data: dict[str, Any]) -> str:
    with pytest.raises(ValidationError) as caught:
        Call.model_validate(data)
    return explain(caught.value, Call.model_json_schema())


def test_a_docstring_becomes_clean_text() -> None:
    doc = """Recall memory into a frame.
        The recall is recorded.

        A second paragraph
        over two lines."""
    assert clean(doc) == "Recall memory into a frame. The recall is recorded.\n\nA second paragraph over two lines."


def test_constraints_go_on_the_branch_of_their_type() -> None:
    schema = Call.model_json_schema()["properties"]
    assert (schema["query"]["minLength"], schema["query"]["maxLength"]) == (1, 1000)
    assert (schema["limit"]["minimum"], schema["limit"]["maximum"]) == (1, 100)
    [listed, null] = schema["tags"]["anyOf"]
    assert listed == {"type": "array", "items": {"type": "string", "maxLength": 64}, "maxItems": 20}
    assert null == {"type": "null"}


def test_an_unknown_keyword_is_refused_when_the_field_is_declared() -> None:
    with pytest.raises(ValueError, match="maxLenght"):
        publish(maxLenght=3)


def test_each_problem_names_the_argument_and_what_to_send() -> None:
    assert failure({"limit": 3}) == (
        "invalid arguments: argument 'query' is required: send a text of 1 to 1,000 characters — what to find"
    )
    said = failure({"query": "x", "limit": "ten", "agent": "root"})
    assert "argument 'limit' is not valid (input should be a valid integer" in said
    assert "send an integer from 1 to 100 — hits at most" in said
    assert "unknown argument 'agent': send only 'query', 'limit' and 'tags'" in said
    assert "argument 'tags.1' is not valid" in failure({"query": "x", "tags": ["a", 1]})


def test_what_to_send_is_said_in_words() -> None:
    assert expected({"enum": ["self", "task"], "type": "string"}) == "one of 'self', 'task'"
    assert expected({"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}]}) == (
        "a non-empty text, or null to leave it out"
    )
    assert expected({"type": "boolean"}) == "true or false"
    assert expected({"type": "object"}) == "a JSON object"
    assert expected({"type": "number", "minimum": 0.0, "maximum": 1.0}) == "a number from 0.0 to 1.0"
