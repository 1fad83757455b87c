"""``/docs`` (Swagger UI) and ``/redoc`` served from this process, so they work offline: their assets come from
this server, and the pages name no other host.

The JavaScript, CSS and favicon are the files the ``fastapi-offline`` package ships (Swagger UI: Apache-2.0,
ReDoc: MIT), served at ``/docs-assets/`` instead of FastAPI's default CDN; Swagger UI's online validator badge is
off and ReDoc loads no web fonts.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs-assets"
# The package's static folder, found without importing the package (importlib's find_spec).
ASSET_PACKAGE = ("fastapi_offline", "static")


def install(app: FastAPI) -> None:
    """Add ``/docs``, ``/redoc`` and their assets to ``app`` (built with ``docs_url=None, redoc_url=None``)."""
    app.mount(ASSETS, StaticFiles(packages=[ASSET_PACKAGE]), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
            swagger_ui_parameters={"validatorUrl": None},  # else the page asks validator.swagger.io for a badge
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS}/favicon.png",
            with_google_fonts=False,
        )
