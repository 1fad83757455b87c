"""The compliance dashboard at ``/ui``: static HTML, CSS and JavaScript shipped in this package (``static/``), no
build step and no other host.

The page is a client of the same REST API as everyone else: it sends the API key the
user typed (kept in the tab's ``sessionStorage``) as ``X-API-Key``, asks ``GET /whoami`` what that key may do and
shows write buttons only to an administrator; every number on it comes from a REST route.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"
PREFIX = "/ui"
# The page loads and calls nothing but this server; inline style attributes are the charts' and bars' sizes.
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:;"
    " base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def install(app: FastAPI) -> None:
    """Add ``/ui`` and ``/ui/`` (the page) and its assets under ``/ui/static/`` to ``app``."""
    app.mount(f"{PREFIX}/static", StaticFiles(directory=STATIC), name="ui-static")

    @app.get(PREFIX, include_in_schema=False)
    @app.get(f"{PREFIX}/", include_in_schema=False)
    async def dashboard() -> FileResponse:
        # no-cache: a new version's page must not be mixed with an old cached one
        return FileResponse(
            STATIC / "index.html", headers={"Cache-Control": "no-cache", "Content-Security-Policy": POLICY}
        )
