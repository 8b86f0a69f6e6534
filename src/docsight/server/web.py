"""The web page served at ``/``: one server-rendered template and two static files.

The page is deliberately small: the template only lays out the controls, and ``static/app.js``
(plain JavaScript, no build step, nothing fetched from outside the server) talks to the REST API
under ``/api/v1``. Document text only ever reaches the page as JSON and is inserted as text
nodes, never parsed as HTML; the template is rendered with autoescape on, and the response
carries a Content-Security-Policy that allows scripts, styles and images from the server only,
so a mistake in either would still not run anything a document smuggled in.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

import docsight

if TYPE_CHECKING:
    from fastapi import FastAPI

_HERE = Path(__file__).resolve().parent
TEMPLATES_DIR = _HERE / "templates"
STATIC_DIR = _HERE / "static"

#: Everything the page loads comes from the server itself; ``data:``/``blob:`` images are the
#: preview of an image the user picks for a question, which never leaves the browser as a URL.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

_PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    # The page is tiny and changes with the package; a stale copy would call a changed API.
    "Cache-Control": "no-cache",
}


def _environment() -> jinja2.Environment:
    # Autoescape for every template, whatever its extension: nothing rendered here is trusted
    # as HTML.
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_page(root_path: str = "") -> str:
    """The page's HTML; ``root_path`` is the prefix the app is mounted under (ASGI
    ``root_path``), so links and API calls work behind a reverse proxy."""
    template = _environment().get_template("index.html")
    return template.render(root=root_path.rstrip("/"), version=docsight.__version__)


def install(app: FastAPI, ds: Any) -> None:
    """Add ``GET /`` (the page) and ``/static/`` (its script and style sheet) to ``app``.

    ``ds`` is the :class:`~docsight.api.DocSight` the app serves; the page needs nothing from it
    at render time (it asks the API for everything), so the page stays the same whatever the
    collection holds and never embeds document text in HTML.
    """
    del ds  # the page reads the collection through the API only
    # Compile the template once, when the app is built, so a broken template fails at startup.
    template = _environment().get_template("index.html")

    @app.get("/", include_in_schema=False)
    def web_page(request: Request) -> HTMLResponse:
        root = str(request.scope.get("root_path", "")).rstrip("/")
        html = template.render(root=root, version=docsight.__version__)
        return HTMLResponse(html, headers=_PAGE_HEADERS)

    app.mount("/static", StaticFiles(directory=str(STATIC_DIR)), name="static")


__all__ = ["CONTENT_SECURITY_POLICY", "STATIC_DIR", "TEMPLATES_DIR", "install", "render_page"]
