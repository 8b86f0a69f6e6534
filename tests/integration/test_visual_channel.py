"""The ``visual`` channel end to end with a deterministic fake encoder (issue 18, part B).

Page images are embedded at ingestion next to the text, stored in the document's own commit
(``page_vectors``), checked by ``docsight check``, removed with the document, and searched as a
page channel fused with the text channels. Another visual encoder is refused until
``docsight reindex --visual`` re-embeds every page; a collection without a visual encoder is
exactly what it was before.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docsight import DocSight, Settings
from docsight.cli.main import app
from docsight.errors import ConfigurationError
from docsight.index.lance import LanceStore
from docsight.index.visual import PAGE_VECTORS
from fixtures import visual_fakes
from fixtures.commit_faults import Killed
from fixtures.visual_fakes import PAGE_TOKENS, QUERY_TOKENS

KINDS = ("single", "multi")
QUERY = "the regional bar chart"
runner = CliRunner()


def settings(kind: str | None, variant: str = "v1", **retrieval: object) -> Settings:
    visual = {"backend": f"fake-{kind}", "model": variant} if kind else {"backend": "none"}
    return Settings(
        ingest={"isolation": "none"},
        parse={"layout_model": False, "ocr": "never"},
        visual=visual,
        **({"retrieval": retrieval} if retrieval else {}),
    )


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory, report_pdf: Path) -> Path:
    folder = tmp_path_factory.mktemp("visual-docs")
    shutil.copy(report_pdf, folder / "report.pdf")
    (folder / "notes.md").write_text(
        "# Harbour notes\n\nHarbour cranes are inspected every spring by the port authority.\n"
    )
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, docs: Path) -> dict[str, Path]:
    """One collection per kind, ingested once; tests that change it work on a copy."""
    out = {}
    for kind in (*KINDS, None):
        path = tmp_path_factory.mktemp(f"visual-{kind}") / "col"
        report = DocSight(path, settings=settings(kind)).ingest([docs])
        assert not report.failed, report.files
        out[str(kind)] = path
    return out


@pytest.fixture()
def collection(request: pytest.FixtureRequest, built: dict[str, Path], tmp_path: Path) -> Path:
    target = tmp_path / "col"
    shutil.copytree(built[request.param], target)
    return target


@pytest.fixture(autouse=True)
def _aims() -> None:
    visual_fakes.clear_aims()


def _table(ds: DocSight) -> object:
    return ds.store._table(PAGE_VECTORS)  # type: ignore[attr-defined]


def _aim_at(ds: DocSight, page: int, query: str = QUERY) -> None:
    visual_fakes.aim(query, ds.page_image("report.pdf", page) or b"")


@pytest.mark.parametrize("kind", KINDS)
def test_page_vectors_are_stored_with_the_document_and_checked(
    kind: str, built: dict[str, Path]
) -> None:
    ds = DocSight(built[kind], settings=settings(kind))
    rows = _table(ds).to_arrow().to_pylist()  # type: ignore[attr-defined]
    report = ds.document("report.pdf")
    # One row per page image of the PDF, none for the Markdown file (it has no page image).
    assert sorted(r["page"] for r in rows) == list(range(report.page_count)) == [0, 1, 2]
    assert {r["doc_id"] for r in rows} == {report.id}
    tokens = [len(r["vector"]) for r in rows]
    assert tokens == ([visual_fakes.DIM] * 3 if kind == "single" else [PAGE_TOKENS] * 3)
    info = ds.info()
    assert info.schema_version == 6
    assert info.page_vectors == 3
    assert info.visual is not None and info.visual.kind == kind
    assert info.visual.fingerprint == f"fake-visual:{kind}:v1:{visual_fakes.DIM}"
    check = ds.check()
    assert check.ok and not check.problems, check.problems
    assert check.counts[PAGE_VECTORS] == 3


@pytest.mark.parametrize("kind", KINDS)
def test_the_visual_channel_ranks_the_page_and_fuses_with_text(
    kind: str, built: dict[str, Path]
) -> None:
    ds = DocSight(built[kind], settings=settings(kind))
    _aim_at(ds, 2)
    # The default channels gain `visual` when the collection's page images are embedded.
    assert ds._channels()[-1] == "visual"
    pages = ds.search(QUERY, k=5, unit="page")
    assert (pages[0].doc_name, pages[0].page) == ("report.pdf", 2)
    assert pages[0].ranks["visual"] == 1
    best = QUERY_TOKENS if kind == "multi" else 1.0  # MaxSim sums the query tokens' best cosines
    assert pages[0].scores["visual"] == pytest.approx(best, abs=1e-4)
    # Fused with the text channels: the Markdown file is found by its words only...
    fused = ds.search("harbour cranes inspected", k=10)
    assert fused[0].doc_name == "notes.md" and "visual" not in fused[0].ranks
    # ... and a chunk on the aimed page carries both the text and the visual votes.
    _aim_at(ds, 2, "regions sales table chart")
    chunks = ds.search("regions sales table chart", k=10)
    on_page = [h for h in chunks if h.page == 2 and h.doc_name == "report.pdf"]
    assert on_page and on_page[0].ranks.get("visual") == 1 and len(on_page[0].ranks) > 1
    # Adaptive k reads the visual channel's pages too.
    sources = ds.context(QUERY)
    assert any(s.doc_name == "report.pdf" and s.page == 2 for s in sources)


@pytest.mark.parametrize("kind", KINDS)
def test_ablations_choose_channels_by_list(kind: str, built: dict[str, Path]) -> None:
    only = DocSight(built[kind], settings=settings(kind, channels=["visual"]))
    _aim_at(only, 1)
    hits = only.search(QUERY, k=3, unit="page")
    assert [h.page for h in hits][:1] == [1] and set(hits[0].ranks) == {"visual"}
    text = DocSight(built[kind], settings=settings(kind, channels=["bm25", "page_bm25"]))
    assert text._channels() == ["bm25", "page_bm25"]
    assert all("visual" not in h.ranks for h in text.search("bar chart regions", k=5))


@pytest.mark.parametrize("collection", ["multi"], indirect=True)
def test_check_finds_a_missing_page_vector_and_remove_deletes_them(collection: Path) -> None:
    ds = DocSight(collection, settings=settings("multi"))
    doc_id = ds.resolve("report.pdf").id
    _table(ds).delete("page = 1")  # type: ignore[attr-defined]
    report = ds.check()
    assert not report.ok
    (problem,) = [p for p in report.problems if p.code == "page_vectors_missing"]
    assert problem.doc_id == doc_id and problem.rows == 1 and problem.severity == "error"
    assert "reindex --visual" in problem.message
    # Re-embedding fills the gap: only the missing page is embedded again.
    encoder = visual_fakes.FakeMultiVisualEncoder(variant="v1")
    again = DocSight(collection, settings=settings("multi"), visual=encoder)
    done = again.reindex_visual()
    assert (done.rebound, done.pages, done.documents) == (False, 1, 1)
    assert encoder.calls == [1]
    assert again.check().ok
    ds.remove("report.pdf")
    assert ds.store.page_vector_count() == 0  # type: ignore[attr-defined]
    assert ds.check().ok


@pytest.mark.parametrize("collection", ["single"], indirect=True)
def test_vectors_are_committed_with_their_document_or_not_at_all(
    collection: Path, docs: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Killed between the page vectors and the document row: nothing of it is visible, check
    names the orphans, and the next ingest removes them and stores the document whole."""
    ds = DocSight(collection, settings=settings("single"))
    extra = tmp_path / "more"
    extra.mkdir()
    shutil.copy(docs / "report.pdf", extra / "copy-with-other-bytes.pdf")
    with (extra / "copy-with-other-bytes.pdf").open("ab") as handle:
        handle.write(b"\n% other bytes, another document id\n")
    real = LanceStore._upsert

    def crash(self: LanceStore, name: str, *args: object, **kwargs: object) -> None:
        if name == "documents":
            raise Killed("killed before the commit")
        real(self, name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(LanceStore, "_upsert", crash)
    with pytest.raises(Killed):
        ds.ingest([extra])
    monkeypatch.setattr(LanceStore, "_upsert", real)
    fresh = DocSight(collection, settings=settings("single"))
    assert _table(fresh).count_rows() == 6  # type: ignore[attr-defined]
    _aim_at(fresh, 0)
    assert {h.doc_name for h in fresh.search(QUERY, k=10, unit="page")} <= {
        "report.pdf",
        "notes.md",
    }
    orphans = [p for p in fresh.check().problems if p.code == "orphan_rows"]
    assert any(p.table == PAGE_VECTORS and p.rows == 3 for p in orphans)
    assert not fresh.ingest([extra]).failed
    assert _table(fresh).count_rows() == 6  # type: ignore[attr-defined]
    assert fresh.check().ok


@pytest.mark.parametrize("collection", ["multi"], indirect=True)
def test_another_visual_encoder_is_refused_until_reindex(
    collection: Path, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = DocSight(collection, settings=settings("multi", variant="v2"))
    with pytest.raises(ConfigurationError, match="reindex --visual"):
        other.ingest([docs])
    with pytest.raises(ConfigurationError, match="reindex --visual"):
        other.search(QUERY)
    assert [p.code for p in other.check().problems] == ["visual_mismatch"]

    # A change of model and of kind: single vectors replace the late-interaction ones.
    monkeypatch.setenv("DOCSIGHT_VISUAL_BACKEND", "fake-single")
    monkeypatch.setenv("DOCSIGHT_VISUAL_MODEL", "v2")
    result = runner.invoke(app, ["-c", str(collection), "reindex", "--visual", "--json"])
    assert result.exit_code == 0, result.output
    done = json.loads(result.stdout)
    assert done["rebound"] and done["pages"] == 3 and done["documents"] == 1
    assert done["visual"]["fingerprint"] == f"fake-visual:single:v2:{visual_fakes.DIM}"

    ds = DocSight(collection)  # the environment's settings, as the command line reads them
    assert ds.check().ok
    _aim_at(ds, 1)
    hits = ds.search(QUERY, k=3, unit="page")  # the text channels prefer the chart's page
    assert next(h.page for h in hits if h.ranks.get("visual") == 1) == 1
    result = runner.invoke(app, ["-c", str(collection), "info"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "visual encoder" in result.stdout and "fake-single" in result.stdout
    assert "3 page vectors" in result.stdout
    # info names how the chunking and the page images combine (MM-BizRAG's variants).
    paged = runner.invoke(
        app, ["-c", str(collection), "info", "--json"], env={"DOCSIGHT_CHUNK_STRATEGY": "page"}
    )
    assert "PCMHE" in json.loads(paged.stdout)["chunking"], paged.output
    result = runner.invoke(app, ["-c", str(collection), "reindex", "--visual"])
    assert result.exit_code == 0 and "already had theirs" in result.stdout, result.output
    assert runner.invoke(app, ["-c", str(collection), "reindex"]).exit_code == 2


@pytest.mark.parametrize("collection", ["multi"], indirect=True)
def test_without_a_visual_encoder_the_collection_says_so(
    collection: Path, docs: Path, tmp_path: Path
) -> None:
    ds = DocSight(collection, settings=settings(None))
    assert "visual" not in ds._channels()
    assert ds.search("bar chart", k=3)
    unchanged = ds.ingest([docs])
    assert not unchanged.failed and not unchanged.warnings
    # A new PDF stored without page vectors is said so, at ingestion and by check.
    new = tmp_path / "new"
    new.mkdir()
    (new / "other.pdf").write_bytes((docs / "report.pdf").read_bytes() + b"\n% other\n")
    added = ds.ingest([new])
    assert any("stored without page vectors" in w for w in added.warnings), added.warnings
    check = ds.check()
    (problem,) = [p for p in check.problems if p.code == "page_vectors_missing"]
    assert check.ok and problem.severity == "warning" and "reindex --visual" in problem.message
    # Removing the page vectors is the same command with no encoder configured.
    assert ds.reindex_visual().rebound
    assert ds.store.visual_binding() is None and _table(ds) is None  # type: ignore[attr-defined]
    assert ds.check().ok and not ds.check().problems


@pytest.mark.parametrize("collection", ["None"], indirect=True)
def test_the_default_collection_is_unchanged(
    collection: Path, docs: Path, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    ds = DocSight(collection, settings=settings(None))
    assert not (collection / "tables" / f"{PAGE_VECTORS}.lance").exists()
    manifest = json.loads((collection / "collection.json").read_text())
    assert "visual" not in manifest and manifest["schema_version"] == 6
    assert ds._channels() == ["bm25", "dense", "page_bm25", "locate"]
    assert ds.info().visual is None and ds.info().page_vectors == 0
    assert ds.check().ok
    listed = DocSight(collection, settings=settings(None, channels=["bm25", "visual"]))
    with pytest.raises(ConfigurationError, match="needs a visual encoder"):
        listed.search("bar chart")
    # A visual encoder over a collection without page vectors: the listed channel is absent,
    # with a warning that says how to embed them.
    configured = DocSight(collection, settings=settings("multi", channels=["bm25", "visual"]))
    with caplog.at_level(logging.WARNING):
        assert configured._channels() == ["bm25"]
    assert "reindex --visual" in caplog.text
    # A first PDF ingested with an encoder binds it, and the earlier one is named...
    new = tmp_path / "new"
    new.mkdir()
    (new / "other.pdf").write_bytes((docs / "report.pdf").read_bytes() + b"\n% other\n")
    added = configured.ingest([new])
    assert any("stored before a visual encoder" in w for w in added.warnings), added.warnings
    # ... until the re-embedding gives it its vectors too.
    done = configured.reindex_visual()
    assert (done.rebound, done.documents, done.pages, done.kept_documents) == (False, 1, 3, 1)
    assert configured.check().ok and not configured.check().problems
