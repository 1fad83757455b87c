"""The credential scan on strings in memory (``ledger.core.secret_scan``) and its policy at the door
(``ledger.core.credentials``): each kind found with its line and column, redaction that leaves no part of a
credential, texts that only talk about keys passed, and refusals that never repeat the credential."""

from __future__ import annotations

import pytest

from ledger.core import credentials, secret_scan
from ledger.core.errors import SecretInText
from ledger.core.events import MemoryRemembered, MemorySearched, TaskWorkRecorded
from ledger.kernel import LedgerConfig
from tests.secret_samples import BENIGN, SAMPLES, Sample

MORE_KINDS = (  # further plugins of the detector, beyond the kinds every surface is tested with
    ("gitlab_token", "glpat-" + "x7Kq2LmP9vR4wT8zB3nC"),
    ("stripe_access_key", "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"),
    ("twilio_api_key", "SK" + "0123456789abcdef0123456789abcdef"),
    ("slack_token", "https://hooks.slack.com/services/" + "T0123ABCD/B0123ABCD/AbCdEfGhIjKlMnOpQrStUvWx"),
    ("secret_keyword", 'db_password = "' + "Tr0ub4dor&3-horse" + '"'),
    ("hex_high_entropy_string", "secret: " + "9f86d081884c7d659a2feaa0c55ad015"),
)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda s: s.kind)
def test_each_kind_is_found_and_redacted_whole(sample: Sample) -> None:
    [found] = secret_scan.scan(sample.text)
    assert found.kind == sample.kind and sample.needle in sample.text[found.start : found.end]
    line_starts = [0] + [i + 1 for i, c in enumerate(sample.text) if c == "\n"]
    assert found.start == line_starts[found.line - 1] + found.column - 1
    redacted = secret_scan.redact(sample.text, [found])
    assert sample.needle not in redacted and f"[REDACTED:{sample.kind}]" in redacted
    assert secret_scan.scan(redacted) == []  # the placeholder is not itself taken for a credential


@pytest.mark.parametrize(("kind", "secret"), MORE_KINDS, ids=[k for k, _ in MORE_KINDS])
def test_more_detector_plugins_run(kind: str, secret: str) -> None:
    assert [f.kind for f in secret_scan.scan(f"for the record: {secret} (rotate it)")] == [kind]


def test_only_clean_texts_are_remembered_between_scans() -> None:
    aws = next(s for s in SAMPLES if s.kind == "aws_access_key")
    clean = f"{BENIGN[0]} (checked twice)"
    assert secret_scan.scan(clean) == secret_scan.scan(clean) == [] == secret_scan.find(clean)
    first, again = secret_scan.scan(aws.text), secret_scan.scan(aws.text)
    assert first == again == secret_scan.find(aws.text) and [f.kind for f in again] == ["aws_access_key"]


def test_line_and_column_are_where_the_credential_starts() -> None:
    aws = next(s for s in SAMPLES if s.kind == "aws_access_key")
    text = "first line\n  second line, then " + aws.needle
    [found] = secret_scan.scan(text)
    assert (found.line, found.column) == (2, 21) and text[found.start : found.end] == aws.needle


def test_a_private_key_is_redacted_from_its_begin_line_to_its_end_line() -> None:
    key = next(s for s in SAMPLES if s.kind == "private_key")
    redacted = secret_scan.redact(key.text, secret_scan.scan(key.text))
    assert redacted == "The bastion key, for the record:\n[REDACTED:private_key]\nrotate it yearly."


def test_a_jwt_loses_its_signature_too() -> None:
    jwt = next(s for s in SAMPLES if s.kind == "json_web_token")
    redacted = secret_scan.redact(jwt.text, secret_scan.scan(jwt.text))
    assert redacted == "A session captured in the logs: Bearer [REDACTED:json_web_token] (expired)."


@pytest.mark.parametrize("text", BENIGN)
def test_texts_that_only_talk_about_keys_pass(text: str) -> None:
    assert secret_scan.scan(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "password=hunter2",
        "the password is hunter2",
        ("akia" + "q3egrt5yjh7lkd2m"),  # a tag is lower-cased before the door sees it
    ],
)
def test_what_the_readme_says_the_detector_misses_it_misses(text: str) -> None:
    assert secret_scan.scan(text) == []  # README, "Credentials are kept out": a detector is not a guarantee


def test_a_refusal_names_the_kind_and_the_field_never_the_credential() -> None:
    github = next(s for s in SAMPLES if s.kind == "github_token")
    event = MemorySearched(session_id="ses_1", query=github.text, limit=5, result_ids=[], count=0)
    with pytest.raises(SecretInText) as caught:
        credentials.screen_events([event], "refuse")
    error = caught.value
    assert error.code == "secret_in_text" and error.status == 422 and "store a reference" in error.hint
    assert error.found == (("query", "github_token", 1, 33),)
    assert "query, line 1, column 33: GitHub Token (github_token)" in error.message
    assert github.needle not in str(error) and github.needle not in repr(error.found)


def test_a_credential_in_a_dict_key_is_kept_out_of_the_message_too() -> None:
    aws = next(s for s in SAMPLES if s.kind == "aws_access_key")
    event = TaskWorkRecorded(task_id="t-1", tool="manage_task", action="update", params={aws.needle: "x"})
    with pytest.raises(SecretInText) as caught:
        credentials.screen_events([event], "refuse")
    assert aws.needle not in caught.value.message and "params.[REDACTED] (name)" in caught.value.message


def test_one_credential_refuses_every_event_of_the_append() -> None:
    slack = next(s for s in SAMPLES if s.kind == "slack_token")
    clean = MemoryRemembered(block_id="blk_1", content="the schema has three tables", tags=[])
    dirty = MemoryRemembered(block_id="blk_2", content="notes", tags=[], context=slack.text)
    with pytest.raises(SecretInText, match=r"context, line 1, column 26: Slack Token \(slack_token\)"):
        credentials.screen_events([clean, dirty], "refuse")


def test_redact_rebuilds_only_the_events_that_held_one() -> None:
    basic = next(s for s in SAMPLES if s.kind == "basic_auth_credentials")
    clean = MemoryRemembered(block_id="blk_1", content="the schema has three tables", tags=[])
    dirty = TaskWorkRecorded(task_id="t-1", tool="manage_task", action="update", params={"notes": [basic.text]})
    kept = credentials.screen_events([clean, dirty], "redact")
    assert kept[0] is clean
    assert isinstance(kept[1], TaskWorkRecorded) and kept[1].params == {
        "notes": ["Clone it from https://deploy:[REDACTED:basic_auth_credentials]@git.example.com/app.git on the "
                  "build box."]
    }  # fmt: skip


def test_off_passes_everything_and_values_are_screened_like_events() -> None:
    aws = next(s for s in SAMPLES if s.kind == "aws_access_key")
    event = MemoryRemembered(block_id="blk_1", content=aws.text, tags=[])
    assert credentials.screen_events([event], "off") == [event]
    assert credentials.screen_values({"content": aws.text, "limit": 3}, "off") == {"content": aws.text, "limit": 3}
    redacted = credentials.screen_values({"content": aws.text, "limit": 3}, "redact")
    assert redacted == {"content": aws.text.replace(aws.needle, "[REDACTED:aws_access_key]"), "limit": 3}
    with pytest.raises(SecretInText, match=r"values\[1\], line 1"):
        credentials.screen_values({"values": ["fine", aws.text]}, "refuse")


def test_an_unknown_mode_is_refused_when_the_ledger_is_configured() -> None:
    with pytest.raises(ValueError, match="refuse, redact, off"):
        LedgerConfig(secret_scan="Refuse")  # type: ignore[arg-type]
