"""A collection keeps each PDF or image file once and makes page images from it (issue 13).

Page renders were 90% of a collection's bytes. Now the ``assets`` table keeps the recipe of each
render and crop; the file itself is kept once under ``sources/``, named by its hash; images are
made again when asked for, pixel for pixel as ingestion saw them. ``rm`` frees the space at
once, and the crash-safety guarantees (nothing half-written visible, ``check`` finds what is
lost, ``check --repair`` restores a working collection) hold for the kept files too.
"""

from __future__ import annotations

import hashlib
import io
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from docsight import DocSight, Settings
from docsight.errors import CollectionDamagedError
from docsight.index.sources import SOURCES_DIR
from docsight.parsers.base import SourceFile
from docsight.parsers.pdf import PdfParser
from docsight.settings import ParseSettings
from fixtures import damage
from fixtures.commit_faults import Killed, commit_fails, commit_killed
from fixtures.corpus_fixtures import write_corpus

INLINE = Settings(ingest={"isolation": "none"})


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def _kept(collection: Path) -> list[Path]:
    return sorted(p for p in (collection / SOURCES_DIR).rglob("*") if p.is_file())


@pytest.fixture()
def pdf_collection_dir(report_pdf: Path, tmp_path: Path) -> tuple[DocSight, Path]:
    docs = tmp_path / "docs"
    write_corpus(docs)
    shutil.copy(report_pdf, docs / "report.pdf")
    ds = DocSight(tmp_path / "col", settings=INLINE)
    assert not ds.ingest([docs]).failed
    return ds, docs


def test_the_pdf_is_kept_once_and_its_images_are_recipes(
    pdf_collection_dir: tuple[DocSight, Path],
) -> None:
    ds, docs = pdf_collection_dir
    kept = _kept(ds.path)
    data = (docs / "report.pdf").read_bytes()
    # Only the PDF is kept (Markdown and text have no images), under its hash, byte for byte.
    assert [p.name for p in kept] == [hashlib.sha256(data).hexdigest() + ".pdf"]
    assert kept[0].read_bytes() == data
    rows = ds.store._table("assets").to_arrow()  # type: ignore[attr-defined]
    assert rows.num_rows > 3 and rows.column("data").null_count == rows.num_rows
    assert all(rows.column("render").to_pylist())


def test_page_images_and_crops_are_made_again_pixel_for_pixel(
    pdf_collection_dir: tuple[DocSight, Path],
) -> None:
    ds, docs = pdf_collection_dir
    path = docs / "report.pdf"
    data = path.read_bytes()
    parsed = PdfParser().parse(
        SourceFile(path, data, hashlib.sha256(data).hexdigest(), "application/pdf"),
        ParseSettings(),
    )
    assert {a.kind for a in parsed.assets} == {"page", "crop"}
    for asset in parsed.assets:
        again = ds.store.get_asset(asset.id)
        assert again is not None and again.media_type == "image/png"
        assert np.array_equal(_pixels(again.data), _pixels(asset.data)), asset.render
    page = ds.page_image("report", 1)
    assert page is not None and page == ds.store.get_asset(parsed.document.pages[1].image_id).data
    # The images a source points at (what a vision model would be shown) come back too.
    sources = ds.context("the regional sales figure", doc_names=["report.pdf"])
    images = [i for s in sources for i in s.image_ids]
    assert images and all(ds.store.get_asset(i) is not None for i in images)


def test_images_of_an_image_file_come_from_the_file(tmp_path: Path) -> None:
    photo = tmp_path / "docs" / "photo.jpg"
    photo.parent.mkdir()
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 255, (300, 400, 3), dtype=np.uint8)).save(photo, quality=85)
    ds = DocSight(tmp_path / "col", settings=INLINE)
    ds.ingest([photo.parent])
    (kept,) = _kept(ds.path)
    assert kept.suffix == ".jpg" and kept.read_bytes() == photo.read_bytes()
    image = _pixels(ds.page_image("photo.jpg", 0) or b"")
    assert image.shape == (300, 400, 3)
    with Image.open(photo) as original:
        assert np.array_equal(image, np.asarray(original.convert("RGB")))


def test_rm_frees_the_file_and_the_rows_at_once(
    pdf_collection_dir: tuple[DocSight, Path],
) -> None:
    ds, _ = pdf_collection_dir
    before = ds.info().sizes
    ds.remove("report.pdf")
    after = ds.info().sizes
    assert _kept(ds.path) == [] and "sources" not in after
    assert sum(after.values()) < sum(before.values()) - before["sources"]
    for table in (ds.path / "tables").glob("*.lance"):
        assert len(list((table / "_versions").glob("*.manifest"))) == 1, table.name
    assert ds.check().ok and [d.name for d in ds.documents()] == ["faq.txt", "guide.md"]


def test_a_crash_before_the_commit_leaves_no_file_behind(
    report_pdf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = DocSight(tmp_path / "col", settings=INLINE)
    ds.ingest([write_corpus(tmp_path / "docs")])
    commit_killed(monkeypatch, ds.store)
    with pytest.raises(Killed):
        ds.ingest([report_pdf])
    monkeypatch.undo()
    assert len(_kept(ds.path)) == 1  # written before the rows, never committed
    codes = {p.code for p in ds.check().problems}
    assert {"orphan_source", "orphan_rows"} <= codes
    ds.ingest([report_pdf])  # recover removes the leftovers, then the file is added again
    assert len(_kept(ds.path)) == 1 and ds.check().ok
    assert ds.page_image(report_pdf.name, 0)


def test_an_error_before_the_commit_removes_the_file_and_rows_at_once(
    report_pdf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = DocSight(tmp_path / "col", settings=INLINE)
    ds.ingest([write_corpus(tmp_path / "docs")])
    commit_fails(monkeypatch, ds.store)
    assert ds.ingest([report_pdf]).failed
    monkeypatch.undo()
    assert _kept(ds.path) == [] and ds.check().ok


@pytest.mark.parametrize("fault", ["delete", "damage"])
def test_a_lost_file_is_found_repaired_and_ingested_again(
    pdf_collection_dir: tuple[DocSight, Path], fault: str
) -> None:
    ds, docs = pdf_collection_dir
    (kept,) = _kept(ds.path)
    if fault == "delete":
        kept.unlink()
    else:
        damage.truncate(kept)
    problems = [p for p in ds.check().problems if p.code == "missing_source"]
    assert len(problems) == 1 and "report.pdf" in problems[0].message
    assert ("missing" if fault == "delete" else "damaged") in problems[0].message
    if fault == "delete":
        with pytest.raises(CollectionDamagedError, match="check --repair"):
            ds.page_image("report.pdf", 0)
    # Search and answers keep working on the text; repair drops the document and names it.
    assert ds.search("widget", k=3)
    repaired = ds.check(repair=True)
    assert repaired.reingest == [str((docs / "report.pdf").resolve())]
    report = ds.check()
    assert report.ok and report.problems == []
    assert "report.pdf" not in [d.name for d in ds.documents()]
    if fault == "damage":  # set aside, never deleted
        assert list((ds.path / "damaged").rglob(kept.name))
    assert ds.ingest([docs]).counts()["added"] == 1
    assert ds.page_image("report.pdf", 0) and ds.check().ok


def test_rm_in_the_cli_says_what_it_freed(pdf_collection_dir: tuple[DocSight, Path]) -> None:
    import json

    from typer.testing import CliRunner

    from docsight.cli.main import app

    ds, docs = pdf_collection_dir
    result = CliRunner().invoke(app, ["rm", "report", "-c", str(ds.path), "--json"])
    data = json.loads(result.stdout)
    assert result.exit_code == 0 and data["removed"]["name"] == "report.pdf"
    assert data["freed_bytes"] > (docs / "report.pdf").stat().st_size
