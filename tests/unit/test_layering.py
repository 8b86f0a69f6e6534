"""Dependencies point down: a package imports only the packages below it.

The rules are checked on the source (every ``import``/``from`` of ``docsight.<package>``), so a
shortcut through another package's internals fails here rather than in review.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "docsight"

#: What each package must never import. Answering (agents) and retrieval never reach into
#: ingestion; the document model imports nothing of docsight; no library package imports the
#: command line or the server, which sit on top.
FORBIDDEN: dict[str, set[str]] = {
    "document": {
        "agents",
        "api",
        "cli",
        "encoders",
        "evaluation",
        "graph",
        "index",
        "ingest",
        "llm",
        "parsers",
        "query",
        "retrieval",
        "server",
        "vision",
    },
    "llm": {"agents", "api", "cli", "index", "ingest", "parsers", "retrieval", "server"},
    "agents": {"api", "cli", "ingest", "parsers", "server", "vision"},
    "retrieval": {"agents", "api", "cli", "ingest", "server"},
    "query": {"agents", "api", "cli", "ingest", "index", "retrieval", "server"},
    "index": {"agents", "api", "cli", "ingest", "retrieval", "server"},
    "ingest": {"agents", "api", "cli", "retrieval", "server"},
    "parsers": {"agents", "api", "cli", "index", "ingest", "retrieval", "server"},
    "encoders": {"agents", "api", "cli", "index", "ingest", "retrieval", "server"},
    "evaluation": {"cli", "server"},
    "server": {"cli"},
}


def imported_packages(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            parts = name.split(".")
            if parts[0] == "docsight" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_a_package_imports_only_what_is_below_it(package: str) -> None:
    folder = SRC / package
    if not folder.exists():
        pytest.skip(f"docsight.{package} does not exist")
    broken = {
        str(path.relative_to(SRC)): sorted(imported_packages(path) & FORBIDDEN[package])
        for path in folder.rglob("*.py")
    }
    assert {file: bad for file, bad in broken.items() if bad} == {}
