"""``serve`` loads the MCP SDK on the first request to ``/mcp``, not before: a process that answers only REST
never imports it, and the first MCP request still gets a full answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import json, sys
from pathlib import Path
from starlette.testclient import TestClient
from api.bootstrap import open_ledger
from api.rest.app import build_app
from api.settings import Settings

home = Path(sys.argv[1])
settings = Settings(home=home, database_url=f"sqlite:///{home / 'ledger.db'}")
ledger = open_ledger(settings)
app = build_app(ledger, settings)
seen = {}
with TestClient(app, base_url="http://127.0.0.1") as client:
    seen["health"] = client.get("/health").status_code
    seen["report"] = client.get("/reports/compliance").status_code
    seen["sdk_after_rest"] = any(m == "mcp" or m.startswith("mcp.") for m in sys.modules)
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    answer = client.post("/mcp", headers=headers, json=init)
    seen["initialize"] = answer.status_code
    seen["server"] = answer.json()["result"]["serverInfo"]["name"]
    listing = client.post("/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    seen["tools"] = len(listing.json()["result"]["tools"])
    seen["sdk_after_mcp"] = "mcp.server" in sys.modules
print(json.dumps(seen))
"""


def test_rest_alone_never_loads_the_mcp_sdk_and_mcp_still_answers(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    init = subprocess.run(
        [sys.executable, "-m", "api", "--home", str(tmp_path), "init"], cwd=root, capture_output=True, text=True
    )
    assert init.returncode == 0, init.stderr
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)], cwd=root, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["health"] == 200 and seen["report"] == 200
    assert seen["sdk_after_rest"] is False
    assert seen["initialize"] == 200 and seen["server"]
    assert seen["tools"] > 10
    assert seen["sdk_after_mcp"] is True
