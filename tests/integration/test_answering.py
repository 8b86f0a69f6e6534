"""ask(): extractive answers offline, LLM answers through real HTTP, citations checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from docsight import DocSight, Settings
from docsight.agents.answer import NOT_ANSWERABLE
from fixtures.fake_llm import FakeLLM, Reply, empty, error, hang, malformed_body, ok, rate_limited
from fixtures.llm_fixtures import llm_settings


def _with_llm(collection: Path, base_url: str, **llm: object) -> DocSight:
    settings = Settings(
        llm=llm_settings(base_url, cache=False, max_retries=1, max_backoff=0.01, **llm)
    )
    return DocSight(collection, settings=settings)


def test_extractive_answer_quotes_and_cites(text_collection: Path) -> None:
    answer = DocSight(text_collection).ask("What does error E42 mean?")
    assert answer.mode == "extractive" and answer.answerable
    assert "licence key has expired" in answer.answer
    citation = answer.citations[0]
    assert answer.answer.rstrip().endswith(f"[{citation.n}]")
    assert "licence key has expired" in answer.sources[citation.n - 1].text
    assert citation.doc_name == "guide.md" and citation.page == 0
    assert citation.section_path == ["Widget Guide", "Troubleshooting"]
    assert citation.quote and citation.quote in answer.answer
    assert {c.n for c in answer.citations} <= {s.n for s in answer.sources}


def test_extractive_answer_reads_table_rows(text_collection: Path) -> None:
    answer = DocSight(text_collection).ask("How much does the Team plan cost per month?")
    # The cell leads, and the quote names its row and column.
    assert answer.answer.startswith("$45 [1]")
    assert "Team — Price per month: $45" in answer.answer
    assert answer.citations[0].doc_name == "guide.md"


def test_weak_evidence_is_not_answerable(text_collection: Path) -> None:
    answer = DocSight(text_collection).ask("Who won the 1998 football world cup final?")
    assert not answer.answerable
    assert answer.answer == NOT_ANSWERABLE
    assert answer.citations == []
    assert answer.evidence < DocSight(text_collection).settings.answer.min_evidence


def test_llm_answer_drops_citations_it_was_not_shown(
    text_collection: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.script(ok("The Team plan costs $45 per month [1][9]. Support is extra [12]."))
    ds = _with_llm(text_collection, fake_llm.base_url)
    ds.settings.answer.verify = "off"  # the claims are checked in test_claims_are_verified
    answer = ds.ask("How much does the Team plan cost?")
    assert answer.mode == "llm" and answer.answerable
    assert answer.answer == "The Team plan costs $45 per month [1]. Support is extra."
    assert answer.removed_citations == [9, 12]
    assert [c.n for c in answer.citations] == [1]
    assert answer.citations[0].chunk_id == answer.sources[0].chunk_id
    assert any("[9]" in w for w in answer.warnings)
    # The model saw the numbered sources as delimited data, and the question.
    prompt = fake_llm.chat_requests[0].body["messages"][1]["content"]
    assert prompt.startswith("<sources>") and "[1] (guide.md, page 1" in prompt
    assert prompt.rstrip().endswith("Question: How much does the Team plan cost?\nAnswer:")
    assert fake_llm.chat_requests[0].body["temperature"] == 0


def test_llm_refusal_becomes_not_answerable(text_collection: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script(ok("Not answerable"))
    answer = _with_llm(text_collection, fake_llm.base_url).ask("What does error E42 mean?")
    assert not answer.answerable and answer.answer == NOT_ANSWERABLE and answer.mode == "llm"


def test_llm_not_called_when_evidence_is_weak(text_collection: Path, fake_llm: FakeLLM) -> None:
    answer = _with_llm(text_collection, fake_llm.base_url).ask("Who won the 1998 world cup final?")
    assert not answer.answerable
    assert fake_llm.chat_requests == []


def test_llm_failure_falls_back_to_extractive(text_collection: Path, fake_llm: FakeLLM) -> None:
    fake_llm.script(error(500), error(503))
    answer = _with_llm(text_collection, fake_llm.base_url).ask("What does error E42 mean?")
    assert answer.mode == "extractive" and answer.answerable
    assert "licence key has expired" in answer.answer
    assert any("language model failed" in w for w in answer.warnings)
    assert len(fake_llm.chat_requests) == 2  # one try plus max_retries=1


@pytest.mark.parametrize(
    ("fault", "code"),
    [
        (rate_limited(retry_after=0.05), "llm_rate_limited"),
        (hang(2.0), "llm_timeout"),
        (malformed_body(), "llm"),
        (empty(), "llm_bad_response"),
    ],
    ids=["429-retry-after", "timeout", "malformed-json", "empty-completion"],
)
def test_every_model_fault_degrades_to_a_cited_extractive_answer(
    text_collection: Path, fake_llm: FakeLLM, fault: Reply, code: str
) -> None:
    fake_llm.script(fault, fault)
    ds = _with_llm(text_collection, fake_llm.base_url, timeout=0.5)
    answer = ds.ask("What does error E42 mean?")
    assert answer.mode == "extractive" and answer.answerable
    assert "licence key has expired" in answer.answer and answer.citations
    warning = next(w for w in answer.warnings if "language model failed" in w)
    assert code in warning
    # Bounded: transient faults are retried once (max_retries=1), unusable answers are not.
    assert 1 <= len(fake_llm.chat_requests) <= 2


@pytest.mark.llm
def test_ask_through_real_local_model(text_collection: Path, local_llm) -> None:  # type: ignore[no-untyped-def]
    # Generous deadlines: this tests the real model path, not the defaults, on shared cores.
    llm = local_llm.llm_settings(max_tokens=96, cache=False, timeout=120, budget=240)
    answer = DocSight(text_collection, settings=Settings(llm=llm)).ask(
        "How long does the warranty last?"
    )
    assert answer.mode == "llm"
    assert answer.model
    assert answer.answer.strip()
    shown = {s.n for s in answer.sources}
    assert {c.n for c in answer.citations} <= shown
    assert not set(answer.removed_citations) & shown
    if answer.answerable:
        for c in answer.citations:
            assert f"[{c.n}]" in answer.answer


REPORT = """# Quarterly report

## Sales

Sales rose in every region this quarter, as the table shows in detail.

| Region | Q1 | Q2 |
| --- | --- | --- |
| North | 10 | 14 |
| South | 7 | 9 |

Table 1: Sales by region and quarter.

The South region grew more slowly because a warehouse closed in April.
"""


def test_context_assembly_orders_sources_and_expands_placeholders(tmp_path: Path) -> None:
    from docsight.agents.context import assemble

    doc = tmp_path / "report.md"
    doc.write_text(REPORT)
    ds = DocSight(tmp_path / "col")
    ds.ingest([doc])
    chunks = ds.store.document_chunks(ds.resolve("report.md").id)
    text_chunk = next(c for c in chunks if c.kind == "text")
    table_chunk = next(c for c in chunks if c.kind == "table")
    # The text keeps a placeholder where the table stood; the index holds only its label.
    assert "[Table: Table 1: Sales by region and quarter.](#el-" in text_chunk.body
    assert "#el-" not in text_chunk.text
    # The table chunk is found by its row-by-row description, and read as Markdown.
    assert "North: Q1 10; Q2 14." in table_chunk.text
    assert table_chunk.body.startswith("Table 1: Sales by region and quarter.\n| Region |")

    only_text = [h for h in ds.search("warehouse closed in April", k=5) if h.kind == "text"]
    sources = assemble(only_text[:1], ds.store)
    assert "| North | 10 | 14 |" in sources[0].text  # expanded: the table was not a source
    both = ds.search("sales by region quarter warehouse", k=5)
    assert {h.kind for h in both} >= {"text", "table"}
    sources = assemble(both, ds.store)
    assert [s.n for s in sources] == list(range(1, len(sources) + 1))
    joined = "\n".join(s.text for s in sources)
    assert joined.count("| North | 10 | 14 |") == 1  # never twice
    orders = [next(c.order for c in chunks if c.id == s.chunk_id) for s in sources]
    assert orders == sorted(orders)  # document order


def _slide_deck(path: Path) -> Path:
    from reportlab.pdfgen.canvas import Canvas

    c = Canvas(str(path), pagesize=(768, 432))
    for title, bullets in [
        ("Widget strategy", ["Grow in Europe", "Cut unit cost"]),
        ("Key points", ["Revenue up 12 percent", "Two new plants opened"]),
        ("Next steps", ["Hire engineers", "Launch the T-300"]),
    ]:
        c.setFont("Helvetica-Bold", 32)
        c.drawString(48, 360, title)
        c.setFont("Helvetica", 22)
        for i, bullet in enumerate(bullets):
            c.drawString(72, 280 - 44 * i, f"- {bullet}")
        c.showPage()
    c.save()
    return path


def test_slide_pages_text_and_image_chunks_become_one_source(tmp_path: Path) -> None:
    from docsight.agents.context import assemble

    deck = _slide_deck(tmp_path / "deck.pdf")
    ds = DocSight(tmp_path / "col")
    ds.ingest([deck])
    assert ds.document("deck.pdf").layout == "horizontal"
    chunks = ds.store.document_chunks(ds.resolve("deck.pdf").id)
    assert {(c.page, c.kind) for c in chunks} == {
        (p, k) for p in range(3) for k in ("page", "page_image")
    }
    assert all(c.image_ids for c in chunks)  # the slide render travels with both
    hits = ds.search("key points revenue plants", k=10, doc_names=["deck.pdf"])
    assert {h.kind for h in hits if h.page == 1} == {"page", "page_image"}
    sources = assemble(hits, ds.store)
    on_slide = [s for s in sources if s.page == 1]
    assert len(on_slide) == 1 and "Page image: Page 2: Key points." in on_slide[0].text
    assert on_slide[0].image_ids
    assert [s.n for s in sources] == list(range(1, len(sources) + 1))


def test_claims_are_verified_against_their_sources(
    text_collection: Path, fake_llm: FakeLLM
) -> None:
    ds = _with_llm(text_collection, fake_llm.base_url)
    question = "How much does the Team plan cost?"
    pricing = next(s.n for s in ds.context(question) if "$45" in s.text)
    fake_llm.script(
        ok(f"The Team plan costs $45 per month [{pricing}]. It includes 12 seats [{pricing}]."),
        error(418),  # the entailment call fails: the offline check decides
    )
    answer = ds.ask(question)
    assert answer.answer.startswith("The Team plan costs $45 per month [1].")
    assert "It includes 12 seats (unsupported) [1]." in answer.answer
    assert any("12 is in none of the sources" in w for w in answer.warnings)
    assert [s.kind for s in answer.trace][-1] == "verify"

    ds.settings.answer.verify = "remove"
    fake_llm.script(
        ok(f"The Team plan costs $45 per month [{pricing}]. It includes 12 seats [{pricing}]."),
        ok('{"supported": [true, false]}'),  # the model's judgement
    )
    removed = ds.ask(question)
    assert removed.answer == "The Team plan costs $45 per month [1]."
    assert any(w.startswith("removed an unsupported claim") for w in removed.warnings)
    assert removed.trace[-1].by == "model"
