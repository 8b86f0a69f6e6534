"""Hostile input gets a clear answer, never a traceback (issue 12, fault 8).

A question holding bytes that are not UTF-8 (as a mis-encoded terminal sends them) is searched
and answered with the bytes replaced and a warning; ``--image`` refuses a directory or a device
by name; the API bounds ``k`` as the command line does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docsight import DocSight
from docsight.cli.main import app
from docsight.errors import QueryImageError, UsageError

BAD = "warranty \udcff\udcfe years"  # what Python makes of the bytes b"\xff\xfe" in argv


def _cli() -> list[str]:
    exe = Path(sys.executable).with_name("docsight")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "docsight.cli.main"]


def test_invalid_utf8_in_argv_is_replaced_with_a_warning(text_collection: Path) -> None:
    """The real thing: raw bytes on the command line of a real process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSIGHT_")}
    done = subprocess.run(
        [*_cli(), "-c", str(text_collection), "search", b"warranty \xff\xfe years", "--json"],
        capture_output=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    hits = json.loads(done.stdout)  # stdout stays valid JSON: the warning goes to stderr
    assert hits and "warranty" in hits[0]["text"].lower()
    assert b"not valid UTF-8" in done.stderr and b"Traceback" not in done.stderr


def test_invalid_utf8_question_through_the_api(text_collection: Path) -> None:
    ds = DocSight(text_collection)
    assert ds.search(BAD, k=3)
    assert ds.search("\ud800 warranty", k=3)  # a lone surrogate from a careless caller
    answer = ds.ask("How long is the " + BAD)
    assert answer.warnings and "not valid UTF-8" in answer.warnings[0]
    assert "\udcff" not in answer.question
    result = CliRunner().invoke(app, ["-c", str(text_collection), "ask", BAD, "--json"])
    assert result.exit_code == 0, result.output
    assert any("not valid UTF-8" in w for w in json.loads(result.stdout)["warnings"])


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda tmp: tmp, "a directory, not an image file"),
        (lambda tmp: Path("/dev/zero"), "not a regular file"),
        (lambda tmp: tmp / "missing.png", "no such file"),
    ],
    ids=["directory", "device", "missing"],
)
def test_image_must_be_a_regular_file(
    text_collection: Path,
    tmp_path: Path,
    make,
    reason: str,  # type: ignore[no-untyped-def]
) -> None:
    image = make(tmp_path)
    with pytest.raises(QueryImageError, match=reason):
        DocSight(text_collection).search("chart", image=image)
    for command in ("search", "ask"):
        result = CliRunner().invoke(
            app, ["-c", str(text_collection), command, "chart", "--image", str(image), "--json"]
        )
        assert result.exit_code == 2  # a usage error: the file given is not an image
        error = json.loads(result.stdout)["error"]
        assert error["code"] == "bad_query_image" and reason in error["message"]


@pytest.mark.parametrize("k", [0, -1, 1001, 100_000, True, 2.5])
def test_search_bounds_k_like_the_cli(text_collection: Path, k: object) -> None:
    with pytest.raises(UsageError, match="k must be"):
        DocSight(text_collection).search("warranty", k=k)  # type: ignore[arg-type]


@pytest.mark.parametrize("k", [0, 51, 100_000])
def test_ask_bounds_k_like_the_cli(text_collection: Path, k: int) -> None:
    with pytest.raises(UsageError, match="k must be"):
        DocSight(text_collection).ask("How long is the warranty?", k=k)
    assert len(DocSight(text_collection).search("warranty", k=1000)) >= 1
