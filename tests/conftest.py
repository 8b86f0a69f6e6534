"""Shared test configuration.

Fixture modules live in ``tests/fixtures`` and are registered here as plugins. Data from
``../shared/data`` is never copied: tests that need it use ``shared_data`` and skip when absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest_plugins = [
    "fixtures.pdf_fixtures",
    "fixtures.llm_fixtures",
    "fixtures.corpus_fixtures",
    "fixtures.office_fixtures",
    "fixtures.scan_fixtures",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("DOCSIGHT_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))

# The CLI's rich consoles are made when it is imported, and a console made while COLUMNS is set
# keeps that width for good. The workers of pytest-xdist have COLUMNS=80 in their environment, so
# a test that widens one command's output through its environment would get 80 columns. Without
# COLUMNS at import, a console reads it again at every print.
for _size in ("COLUMNS", "LINES"):
    os.environ.pop(_size, None)


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test may pick up a developer's endpoint or collection from the environment."""
    for key in list(os.environ):
        if key.startswith("DOCSIGHT_") and key != "DOCSIGHT_SHARED_DATA":
            monkeypatch.delenv(key, raising=False)
    for key in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared evaluation data not found at {SHARED_DATA} (set DOCSIGHT_SHARED_DATA)")
    return SHARED_DATA
