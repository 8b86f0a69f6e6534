"""The content graph end to end: stored with the document, navigated by retrieval and readout."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docsight import DocSight
from docsight.cli.main import app
from docsight.graph.model import EdgeKind, NodeKind
from docsight.retrieval.readout import ReadoutPlan, read_out
from docsight.settings import Settings
from fixtures.fake_llm import FakeLLM, error, ok
from fixtures.llm_fixtures import llm_settings
from fixtures.pdfgen import make_referenced_table

QUESTION = "What is the rated pressure limit of the K-40 pump?"


@pytest.fixture(scope="module")
def manual(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DocSight, Path]]:
    folder = tmp_path_factory.mktemp("manual")
    pdf = make_referenced_table(folder / "pump-manual.pdf")
    ds = DocSight(folder / "collection")
    report = ds.ingest([pdf])
    assert report.files[0].status == "added"
    yield ds, pdf


def _referencing_hit(ds: DocSight):  # type: ignore[no-untyped-def]
    hits = ds.search("K-40 pump must never run above its rated pressure gauge", k=3)
    hit = next(h for h in hits if h.page == 0)
    assert "380 kPa" not in hit.text  # the text only points at the table
    return hit


def test_graph_is_stored_with_the_document(manual: tuple[DocSight, Path]) -> None:
    ds, _ = manual
    info = ds.documents()[0]
    graph = ds.store.get_graph(info.id)
    assert graph is not None and graph.doc_id == info.id
    assert info.nodes > 0
    kinds = {n.kind for n in graph.nodes}
    assert kinds == {NodeKind.DOCUMENT, NodeKind.SECTION, NodeKind.PAGE, NodeKind.CHUNK}
    refers = [e for e in graph.edges if e.kind == EdgeKind.REFERS_TO]
    assert [e.text for e in refers] == ["Table 2"]
    assert graph.references["table 2"][0].page == 2
    report = ds.check()
    assert report.ok, report.problems
    assert report.counts["graphs"] == 1 and report.counts["nodes"] == info.nodes


def test_readout_brings_the_referenced_table_from_another_page(
    manual: tuple[DocSight, Path],
) -> None:
    ds, _ = manual
    hit = _referencing_hit(ds)
    passages = read_out([hit], ds.store, ReadoutPlan(neighbours=0, page_hits=99))
    table = next(p for p in passages if p.kind == "table")
    assert table.page == 2 and table.via == "reference" and table.reason == "Table 2"
    assert "K-40 | 380 kPa" in table.text
    # Document order: the referencing text on page 1 comes first.
    assert [p.page for p in passages] == sorted(p.page for p in passages)
    # Without following references the table stays out.
    plain = read_out(
        [hit], ds.store, ReadoutPlan(neighbours=0, page_hits=99, follow=frozenset({"artifact"}))
    )
    assert all(p.kind != "table" for p in plain)


def test_ask_reads_the_table_the_text_points_at(manual: tuple[DocSight, Path]) -> None:
    ds, _ = manual
    sources = ds.context(QUESTION)
    assert any("380 kPa" in s.text for s in sources)
    answer = ds.ask(QUESTION)
    assert answer.answerable
    assert "380 kPa" in " ".join(s.text for s in answer.sources)


def test_readout_stays_within_its_budget(manual: tuple[DocSight, Path]) -> None:
    ds, _ = manual
    hits = ds.search("pump seal filter pressure", k=10)
    small = read_out(hits, ds.store, ReadoutPlan(budget_tokens=60))
    large = read_out(hits, ds.store, ReadoutPlan(budget_tokens=5000))
    assert len(small) < len(large)
    # The first hit always fits (cut if need be); the rest only while the budget lasts.
    assert sum(len(p.text) for p in small[1:]) <= 60 * 4


def test_locate_finds_a_named_table(manual: tuple[DocSight, Path]) -> None:
    ds, _ = manual
    hits = ds.search("Which models does Table 2 list?", k=3, unit="page")
    assert hits[0].page == 2 and hits[0].ranks.get("locate") == 1
    last = ds.search("What does the last table show?", k=3, unit="page")
    assert last[0].page == 2 and last[0].ranks.get("locate") == 1


def test_tree_channel_ranks_pages_by_their_sections(manual: tuple[DocSight, Path]) -> None:
    ds, _ = manual
    settings = Settings(retrieval={"channels": ["tree"]})
    tree_only = DocSight(ds.path, settings=settings)
    hits = tree_only.search("maintenance schedule", k=3, unit="page")
    assert hits[0].page == 1 and "tree" in hits[0].ranks


def test_map_shows_the_graph(manual: tuple[DocSight, Path]) -> None:
    ds, _ = manual
    runner = CliRunner()
    shown = runner.invoke(
        app,
        ["--collection", str(ds.path), "map", "pump-manual.pdf", "--pages"],
        env={"COLUMNS": "200"},
    )
    assert shown.exit_code == 0, shown.output
    assert "Content graph" in shown.output and "refers_to" in shown.output
    assert "Replace the shaft seal" in shown.output  # a section summary
    assert "p. 3: 3 Specifications" in shown.output  # a page summary (--pages)
    as_json = runner.invoke(app, ["--collection", str(ds.path), "map", "pump-manual.pdf", "--json"])
    data = json.loads(as_json.output)
    graph = data["graph"]
    assert graph["edges"]["refers_to"] == 1
    assert graph["references"]["table 2"] == [2]
    link = next(link for link in graph["links"] if link["kind"] == "refers_to")
    assert (link["from_page"], link["to_page"], link["text"]) == (0, 2, "Table 2")
    assert len(graph["pages"]) == 3 and all("summary" in p for p in graph["pages"])


def test_removing_a_document_removes_its_graph(tmp_path: Path) -> None:
    pdf = make_referenced_table(tmp_path / "manual.pdf")
    ds = DocSight(tmp_path / "col")
    ds.ingest([pdf])
    doc_id = ds.documents()[0].id
    ds.remove("manual.pdf")
    assert ds.store.get_graph(doc_id) is None
    report = ds.check()
    assert report.ok and report.counts["nodes"] == 0 and report.counts["graphs"] == 0


def test_check_reports_a_missing_graph(tmp_path: Path) -> None:
    pdf = make_referenced_table(tmp_path / "manual.pdf")
    ds = DocSight(tmp_path / "col")
    ds.ingest([pdf])
    doc_id = ds.documents()[0].id
    ds.store._table("graphs").delete(f"id = '{doc_id}'")
    codes = [p.code for p in ds.check().problems]
    assert "graph_missing" in codes


def test_model_writes_summaries_and_failures_keep_extractive_ones(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    pdf = make_referenced_table(tmp_path / "manual.pdf")
    settings = Settings(
        llm=llm_settings(fake_llm.base_url, cache=False, max_retries=0),
        graph={"evolution": "lite", "max_model_calls": 4},
    )
    summary = json.dumps({"summary": "Pressure limits of the K pumps.", "keywords": ["kPa"]})
    fake_llm.script(ok(summary), error(500), ok(summary), ok(summary))
    ds = DocSight(tmp_path / "col", settings=settings)
    assert ds.ingest([pdf]).files[0].status == "added"
    graph = ds.store.get_graph(ds.documents()[0].id)
    assert graph is not None
    written = [n for n in graph.nodes if n.summary_by == "fake-model"]
    assert len(written) == 3  # four calls allowed, one failed
    assert all(n.summary == "Pressure limits of the K pumps." for n in written)
    assert any(n.summary_by == "extractive" for n in graph.nodes if n.kind != NodeKind.CHUNK)
    assert len(fake_llm.chat_requests) == 4  # the budget: no fifth call
    # The summaries are searchable: the tree channel finds the words only the model wrote.
    tree = DocSight(ds.path, settings=Settings(retrieval={"channels": ["tree"]}))
    assert tree.search("pressure limits kPa", k=1, unit="page")


def test_llm_rerank_orders_search_results(manual: tuple[DocSight, Path], fake_llm: FakeLLM) -> None:
    ds, _ = manual
    settings = Settings(
        llm=llm_settings(fake_llm.base_url, cache=False, max_retries=0),
        retrieval={"rerank": "llm"},
    )
    reranked = DocSight(ds.path, settings=settings)
    fused = ds.search("pump", k=3, unit="page")
    fake_llm.script(ok(json.dumps({"order": [3, 1, 2]})))
    hits = reranked.search("pump", k=3, unit="page")
    assert [h.page for h in hits] == [fused[2].page, fused[0].page, fused[1].page]
    assert [h.rank for h in hits] == [1, 2, 3]
    fake_llm.script(error(500))
    fallback = reranked.search("pump", k=3, unit="page")
    assert [h.page for h in fallback] == [h.page for h in fused]


def test_feature_rerank_keeps_the_same_results(manual: tuple[DocSight, Path]) -> None:
    ds, _ = manual
    settings = Settings(retrieval={"rerank": "features"})
    reranked = DocSight(ds.path, settings=settings).search("pump pressure", k=5)
    fused = ds.search("pump pressure", k=5)
    assert {h.chunk_id for h in reranked} == {h.chunk_id for h in fused}
    assert [h.rank for h in reranked] == list(range(1, len(reranked) + 1))


def test_readout_reads_the_chunks_it_may_take_at_once(manual: tuple[DocSight, Path]) -> None:
    """The walk along references, pages and neighbours asks the store once, not per hit."""
    ds, _ = manual
    hits = ds.search("pump seal filter pressure", k=1)
    calls: list[int] = []

    class Counting:
        def __init__(self, store: object) -> None:
            self.store = store

        def get_chunks(self, ids: list[str]) -> list[object]:
            calls.append(len(ids))
            return self.store.get_chunks(ids)  # type: ignore[attr-defined]

        def __getattr__(self, name: str) -> object:
            return getattr(self.store, name)

    counted = read_out(hits, Counting(ds.store), ReadoutPlan(budget_tokens=5000))  # type: ignore[arg-type]
    direct = read_out(hits, ds.store, ReadoutPlan(budget_tokens=5000))
    assert [p.chunk_id for p in counted] == [p.chunk_id for p in direct]
    assert len(calls) == 1 and len(counted) > len(hits) == 1
