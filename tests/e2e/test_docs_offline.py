"""``/docs`` and ``/redoc`` work offline: from a real ``compliance-ledger serve``, each page and every asset it
references loads from the server itself, and neither the pages nor the stylesheet name another host."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx

from tests.conftest import LedgerFactory
from tests.e2e.test_logs import serve_process

REFERENCE = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|\burl:\s*'([^']+)'|spec-url\s*=\s*["']([^"']+)["']""")
ABSOLUTE = re.compile(r"(?:https?:)?//[A-Za-z0-9.-]+")
CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)")


def references(html: str) -> list[str]:
    """Every URL a page loads: script and stylesheet sources, the favicon and the OpenAPI document."""
    return [next(group for group in match.groups() if group) for match in REFERENCE.finditer(html)]


def test_docs_and_redoc_load_every_asset_from_the_server_and_name_no_other_host(
    make_ledger: LedgerFactory, tmp_path: Path
) -> None:
    ledger = make_ledger()
    with serve_process(tmp_path, str(ledger.store.engine.url)) as (base, _), httpx.Client(timeout=60) as http:
        pages = {path: http.get(f"{base}{path}") for path in ("/docs", "/redoc")}
        assets = {
            ref: http.get(urljoin(f"{base}{path}", ref))
            for path, page in pages.items()
            for ref in references(page.text)
        }
    swagger, redoc = pages["/docs"], pages["/redoc"]
    assert swagger.status_code == 200 == redoc.status_code
    assert {"/docs-assets/swagger-ui-bundle.js", "/docs-assets/swagger-ui.css", "/openapi.json"} <= set(assets)
    assert {"/docs-assets/redoc.standalone.js", "/docs-assets/favicon.png"} <= set(assets)
    for ref, answer in assets.items():
        assert not urlsplit(ref).netloc and ref.startswith("/"), ref  # served by this server
        assert answer.status_code == 200 and answer.content, ref
    script_type = assets["/docs-assets/swagger-ui-bundle.js"].headers["content-type"]
    assert script_type.startswith(("application/javascript", "text/javascript"))
    assert assets["/openapi.json"].json()["info"]["title"] == "Compliance Ledger"
    for page in (swagger.text, redoc.text):
        assert not ABSOLUTE.findall(page), ABSOLUTE.findall(page)  # no CDN, no web fonts, no validator
    assert '"validatorUrl": null' in swagger.text
    css = assets["/docs-assets/swagger-ui.css"].text
    assert [u for u in CSS_URL.findall(css) if not u.startswith("data:")] == []
