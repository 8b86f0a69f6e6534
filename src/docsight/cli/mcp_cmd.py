"""``docsight mcp``: the collection's tools for AI assistants, over MCP on stdin/stdout.

Stdout carries the protocol and nothing else: errors go to stderr (``cli_errors`` without
``--json`` writes there) and the SDK points file descriptor 1 at stderr while it serves, so a
library's stray output cannot corrupt a message.
"""

from __future__ import annotations

from docsight.cli.app import CollectionOption, app, cli_errors, open_docsight


@app.command("mcp")
def mcp(collection: CollectionOption = None) -> None:
    """Serve the collection to AI assistants over MCP (Model Context Protocol) on stdin/stdout.

    Tools: search, ask, list_documents, document_map and get_page (its text and image), with the
    same arguments as the REST API of `docsight serve`. Start it from the assistant's MCP
    configuration, e.g. command "docsight", args \\["mcp", "-c", "/path/to/collection"]. Needs
    the server extra: pip install 'docsight\\[server]'. Logs go to stderr.
    """
    with cli_errors(False):
        ds = open_docsight(collection)
        # A mistyped collection fails here, with a message on stderr, rather than as an error
        # on every tool call the assistant makes.
        ds.documents()
        # Imported late: the SDK is in the optional extra, and its absence is a clear error
        # (MissingDependencyError naming the extra), not an ImportError at CLI start-up.
        from docsight.server.mcp import run_stdio

        run_stdio(ds)
