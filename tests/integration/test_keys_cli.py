"""``compliance-ledger keys add | list | revoke | rotate`` against a real database (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from api.cli import app
from ledger.core.errors import Unauthorized
from tests.conftest import LedgerFactory


def cli(tmp_path: Path, url: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["--home", str(tmp_path), "--db", url, *args])
    return result.exit_code, result.stdout, result.stderr


def test_keys_add_gives_each_key_a_role_and_keys_list_shows_them_with_revocations(
    make_ledger: LedgerFactory, tmp_path: Path, db_url: str
) -> None:
    ledger = make_ledger(db_url)
    agent = cli(tmp_path, db_url, "keys", "add", "--agent", "dev-bot")
    auditor = cli(tmp_path, db_url, "keys", "add", "--agent", "dash", "--auditor")
    admin = cli(tmp_path, db_url, "keys", "add", "--agent", "boss", "--admin")
    both = cli(tmp_path, db_url, "keys", "add", "--agent", "x", "--admin", "--auditor")
    dev_key = ledger.identify(agent[1].strip())
    assert dev_key is not None
    revoked = cli(tmp_path, db_url, "keys", "revoke", dev_key.key_id, "--reason", "left the team")

    code, listed, _ = cli(tmp_path, db_url, "keys", "list", "--json")
    _, table, _ = cli(tmp_path, db_url, "keys", "list")

    assert [r[0] for r in (agent, auditor, admin, revoked)] == [0, 0, 0, 0]
    assert "(role auditor)" in auditor[2] and "shown once" in admin[2]
    assert both[0] == 2 and "choose one role" in both[2]
    rows = json.loads(listed)
    assert code == 0 and [(r["agent"], r["role"]) for r in rows] == [
        ("dev-bot", "agent"),
        ("dash", "auditor"),
        ("boss", "admin"),
    ]
    assert rows[0]["revoked_by"] == "operator" and rows[0]["reason"] == "left the team" and rows[0]["revoked_at"]
    assert rows[1]["revoked_at"] is None and all(r["issued_by"] == "operator" for r in rows)
    assert not any("clk_" in line or "sha256" in line for line in listed.splitlines())
    words = " ".join(table.split())  # a cell may wrap onto more lines: compare the words, not the layout
    for text in (dev_key.key_id, "dash", "auditor", "issued at", "revoked", "by operator"):
        assert text in words
    with pytest.raises(Unauthorized, match="revoked"):
        ledger.identify(agent[1].strip())


def test_keys_rotate_prints_a_new_key_once_and_the_old_one_stops_working(
    make_ledger: LedgerFactory, tmp_path: Path, db_url: str
) -> None:
    ledger = make_ledger(db_url)
    old_key = cli(tmp_path, db_url, "keys", "add", "--agent", "dash", "--auditor")[1].strip()
    old = ledger.identify(old_key)
    assert old is not None

    code, out, err = cli(tmp_path, db_url, "keys", "rotate", old.key_id)

    new = ledger.identify(out.strip())
    assert code == 0 and out.strip().startswith("clk_") and "shown once" in err and f"revoked {old.key_id}" in err
    assert new is not None and (new.agent, new.role) == ("dash", "auditor") and new.key_id != old.key_id
    with pytest.raises(Unauthorized, match="revoked"):
        ledger.identify(old_key)
    [listed_old, _] = json.loads(cli(tmp_path, db_url, "keys", "list", "--json")[1])
    assert (listed_old["reason"], listed_old["replaced_by"]) == ("rotated", new.key_id)


@pytest.mark.parametrize("command", ["revoke", "rotate"])
def test_an_unknown_key_id_is_a_clear_error_and_appends_nothing(
    make_ledger: LedgerFactory, tmp_path: Path, db_url: str, command: str
) -> None:
    ledger = make_ledger(db_url)
    cli(tmp_path, db_url, "keys", "add", "--agent", "dev-bot")
    head = ledger.store.head()

    unknown = cli(tmp_path, db_url, "keys", command, "key_0000000000")
    malformed = cli(tmp_path, db_url, "keys", command, "dev-bot")

    assert unknown[0] == 1 and "key_0000000000 is not known" in unknown[2] and "keys list" in unknown[2]
    assert malformed[0] == 2 and "is not a key id" in malformed[2]
    assert ledger.store.head() == head


def test_keys_list_on_a_ledger_without_keys_says_so(make_ledger: LedgerFactory, tmp_path: Path) -> None:
    url = str(make_ledger().store.engine.url)
    assert "no API keys issued" in cli(tmp_path, url, "keys", "list")[1]
    assert cli(tmp_path, url, "keys", "list", "--json")[1].strip() == "[]"
