"""``docsight serve``: the REST API, the web page and MCP over HTTP, on one port."""

from __future__ import annotations

import importlib.util
from typing import Annotated

import typer

from docsight.cli import render
from docsight.cli.app import CollectionOption, app, cli_errors, console, open_docsight
from docsight.errors import MissingDependencyError

#: What the ``server`` extra installs, by import name.
_SERVER_MODULES = ("fastapi", "uvicorn", "python_multipart", "jinja2", "mcp")


@app.command()
def serve(
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            show_default=False,
            help="Address to listen on \\[default: DOCSIGHT_SERVER_HOST or 127.0.0.1]. Any "
            "address beyond loopback needs an API key.",
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            min=0,
            max=65535,
            show_default=False,
            help="Port \\[default: DOCSIGHT_SERVER_PORT or 8000]; 0 picks a free one.",
        ),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            show_default=False,
            help="Key every API and MCP request must send as 'Authorization: Bearer KEY' "
            "\\[default: DOCSIGHT_SERVER_API_KEY]. The variable keeps it out of the process "
            "list.",
        ),
    ] = None,
    collection: CollectionOption = None,
) -> None:
    """Serve the collection: a web page at /, a REST API under /api/v1 and MCP at /mcp.

    Upload documents, ask questions and open the cited pages with the evidence highlighted.
    Binds to 127.0.0.1 unless told otherwise; the API is described by /api/v1/openapi.json.
    """
    with cli_errors(False):
        missing = [m for m in _SERVER_MODULES if importlib.util.find_spec(m) is None]
        if missing:
            raise MissingDependencyError(
                "docsight serve", "server", f"{', '.join(missing)} not found"
            )
        from docsight.server.app import serve as run_server

        ds = open_docsight(collection)
        remote = ds.location.remote
        # A remote collection's prefix needs no creating; uploads go to its working directory.
        fresh = not remote and not ds.path.exists()

        def ready(url: str) -> None:
            # Created once the socket listens, so a refused start leaves no directory behind.
            if fresh:
                ds.path.mkdir(parents=True, exist_ok=True)
                console.print(
                    f"new collection at {render.safe(str(ds.path))}: upload documents on the "
                    "page, or run `docsight ingest PATH`"
                )
            where = str(ds.path) if remote else str(ds.path.resolve())
            console.print(f"docsight is serving [bold]{render.safe(where)}[/bold]")
            if remote:
                console.print(
                    f"  uploads and caches in {render.safe(str(ds.work_dir))}", soft_wrap=True
                )
            console.print(f"  web page   {url}/", soft_wrap=True)
            console.print(
                f"  REST API   {url}/api/v1  (schema: {url}/api/v1/openapi.json)", soft_wrap=True
            )
            console.print(f"  MCP        {url}/mcp", soft_wrap=True)
            if key_required:
                console.print("  every API and MCP request needs 'Authorization: Bearer KEY'")
            console.print("press Ctrl-C to stop")

        from docsight.server.security import configured_key

        key_required = bool(api_key) or configured_key(ds.settings.server) is not None
        try:
            run_server(ds, host=host, port=port, api_key=api_key, on_ready=ready)
        except KeyboardInterrupt:
            # uvicorn has shut down gracefully and re-raised the Ctrl-C: stopping is the normal
            # way a server ends, not an interruption.
            console.print("stopped")
