"""The hostile-file corpus (../shared/data/badfiles): ingestion never hangs and never dies.

All 629 files (broken and fuzzed PDFs, decompression and XML bombs, misnamed files, pathological
Markdown, ...) go through the public API under tight-but-fair limits. The same ingest, with its
summary table, is ``benchmarks/badfiles.py`` (results in ``benchmarks/results/badfiles.md``).
About three minutes on two shared cores.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docsight import DocSight
from docsight.cli.main import app
from docsight.settings import Settings

pytestmark = [pytest.mark.shared_data, pytest.mark.slow]

TIMEOUT_S = 20.0
MEMORY_MB = 1536
#: Beyond its limit a file may take the watchdog's poll, the kill, and embedding and storing in
#: this process (which the worker's clock does not cover).
MARGIN_S = 10.0
#: A killed worker may overshoot the cap by what it allocates between two polls (50 ms).
OVERSHOOT_MB = 256
#: This process embeds and stores but never parses; its peak is the encoder and the store.
MAIN_PROCESS_MB = 3072
EXPECTED = {
    # PDFium aborts the process on this one when it runs out of address space; in a worker,
    # the memory watchdog stops it first.
    "generated/pdf/flate_bomb_content_4GiB_2layer.pdf": "out_of_memory",
    "generated/pdf/flate_bomb_content_1GiB.pdf": "out_of_memory",
    "generated/pdf/png_named.pdf": "content_mismatch",
    "generated/pdf/many_pages_20000.pdf": "limit_exceeded",
    "generated/pdf/encrypted_user_pw_aes256.pdf": "encrypted",
    "generated/ooxml/docx_zipbomb_512MiB.docx": "limit_exceeded",
    "generated/ooxml/docx_15000_members.docx": "limit_exceeded",
    "generated/ooxml/docx_billion_laughs.docx": "parse_error",
    "generated/ooxml/docx_xxe_file.docx": "parse_error",
    "generated/ooxml/docx_duplicate_members.docx": "parse_error",
    "generated/ooxml/pdf_named.docx": "content_mismatch",
    "generated/img/png_bomb_30000x30000.png": "limit_exceeded",
    "ooxml/poi/bug53475-password-is-pass.docx": "encrypted",
}
#: Files that once hung or exhausted a parser and now simply ingest.
ADDED = [
    "generated/ooxml/xlsx_sparse_A1_XFD1048576.xlsx",
    "generated/text/txt_long_line_3MB.txt",
    "generated/text/md_long_line_2MB.md",
    "generated/text/md_link_refs_pathological.md",
    "generated/text/md_emphasis_pathological.md",
]


def _peak_rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def test_every_hostile_file_ends_with_an_outcome(shared_data: Path, tmp_path: Path) -> None:
    root = shared_data / "badfiles"
    if not root.is_dir():
        pytest.skip(f"the hostile-file corpus is not at {root}")
    files = sorted(p for p in root.rglob("*") if p.is_file())
    settings = Settings(
        ingest={"timeout_s": TIMEOUT_S, "per_page_s": 0, "memory_mb": MEMORY_MB},
    )
    ds = DocSight(tmp_path / "col", settings=settings)
    # Measure this process's peak during the ingest only, not earlier tests'.
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    started = time.perf_counter()
    report = ds.ingest(files)
    elapsed = time.perf_counter() - started
    main_peak = _peak_rss_mb()

    # The main process survived, and every file has an outcome, in input order.
    assert [f.path for f in report.files] == [str(p) for p in files]
    slow, bloated = [], []
    for outcome in report.files:
        assert outcome.status in ("added", "skipped", "no_text", "failed")
        if outcome.status != "added":
            assert outcome.reason, outcome
        if outcome.status == "failed":
            assert outcome.error_code, outcome
        if outcome.seconds > TIMEOUT_S + MARGIN_S:
            slow.append((outcome.name, outcome.seconds))
        cap = MEMORY_MB + (OVERSHOOT_MB if outcome.error_code == "out_of_memory" else 0)
        if outcome.peak_memory_mb is not None and outcome.peak_memory_mb > cap:
            bloated.append((outcome.name, outcome.peak_memory_mb))
    assert not slow, f"files over their time limit: {slow}"
    assert not bloated, f"workers over the memory cap: {bloated}"
    assert main_peak < MAIN_PROCESS_MB, f"main process peaked at {main_peak:.0f} MiB"

    by_path = {str(Path(f.path).relative_to(root)): f for f in report.files}
    for rel, code in EXPECTED.items():
        assert by_path[rel].error_code == code, (rel, by_path[rel])
    for rel in ADDED:
        assert by_path[rel].status == "added", (rel, by_path[rel])
    counts = report.counts()
    assert counts["added"] > 200 and counts["failed"] > 200, counts
    print(f"\n{len(files)} files in {elapsed:.0f} s: {counts}; main process {main_peak:.0f} MiB")

    # The collection is whole and searchable afterwards.
    stored = {f.doc_id for f in report.files if f.status in ("added", "no_text")}
    assert len(ds.documents()) == len(stored)
    assert ds.search("lorem ipsum", k=3)
    # Injections hidden from a reader (white 1 pt text, display:none) are never found; the ones
    # printed in plain sight are, and are then handled as data in prompts.
    hits = ds.search("IGNORE ALL PREVIOUS INSTRUCTIONS maintenance mode", k=20)
    sources = {h.doc_name for h in hits if "maintenance mode" in h.text}
    assert "docx_injection.docx" in sources, sources
    assert not sources & {"prompt_injection_hidden_white.pdf", "html_scripts.html"}, sources

    # Every committed document has exactly its rows, and nothing else is left behind.
    result = CliRunner().invoke(app, ["-c", str(tmp_path / "col"), "check", "--json"])
    assert result.exit_code == 0, result.stdout
    check = json.loads(result.stdout)
    assert check["problems"] == [], check["problems"]
    assert check["counts"]["documents"] == len(stored)
