"""docsight eval: runs over a small generic JSONL dataset, through the CLI as users call it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docsight.cli.main import app
from fixtures.corpus_fixtures import write_corpus
from fixtures.fake_llm import FakeLLM, ok

runner = CliRunner()

QUESTIONS = [
    {"id": "q1", "question": "How much does the Team plan cost per month?", "answer": "$45",
     "doc": "guide.md", "evidence_pages": [0], "domain": "guide", "evidence_sources": ["Table"]},
    {"id": "q2", "question": "What does error E42 mean?", "answer": "the licence key has expired",
     "doc": "guide.md", "evidence_pages": [0], "domain": "guide"},
    {"id": "q3", "question": "How long does the warranty last?", "answer": "two years",
     "doc": "faq.txt", "evidence_pages": [0], "domain": "faq"},
    {"id": "q4", "question": "Who won the 1998 football world cup final?",
     "answer": "Not answerable", "doc": "faq.txt", "evidence_pages": [], "domain": "faq"},
]  # fmt: skip


@pytest.fixture()
def dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    # Default collections and run directories are relative to the working directory.
    monkeypatch.chdir(tmp_path)
    docs = write_corpus(tmp_path / "docs")
    data = tmp_path / "questions.jsonl"
    data.write_text("\n".join(json.dumps(q) for q in QUESTIONS) + "\n")
    return data, docs


def _eval(*args: str) -> dict:
    result = runner.invoke(app, ["eval", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_retrieval_run_prints_the_contract_and_writes_a_run_directory(
    dataset: tuple[Path, Path], tmp_path: Path
) -> None:
    data, docs = dataset
    out = tmp_path / "run"
    summary = _eval("retrieval", str(data), "--docs", str(docs), "--out", str(out))
    assert summary["questions"] == 4
    for key in ("recall@1", "recall@5", "ndcg@10", "mrr"):
        assert 0.0 <= summary[key] <= 1.0
    assert summary["recall@5"] == 1.0  # one-page documents: the page is always found
    assert summary["ingest"]["added"] == 2
    assert {p.name for p in out.iterdir()} >= {
        "summary.json",
        "metrics.json",
        "questions.jsonl",
        "report.md",
    }
    lines = (out / "questions.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    assert first["retrieved"][0] == "guide.md#0" and first["timings"]["search"] > 0
    groups = json.loads((out / "metrics.json").read_text())
    assert (
        set(groups["by_domain"]) == {"guide", "faq"}
        and groups["by_domain"]["faq"]["questions"] == 2
    )
    assert "| all |" in (out / "report.md").read_text()
    # The collection is reused: nothing is ingested the second time.
    again = _eval(
        "retrieval",
        str(data),
        "--docs",
        str(docs),
        "--out",
        str(tmp_path / "run2"),
        "--scope",
        "corpus",
    )
    assert again["ingest"]["added"] == 0 and again["collection"] == summary["collection"]
    assert again["scope"] == "corpus"


def test_qa_run_offline_scores_answers_and_abstention(
    dataset: tuple[Path, Path], tmp_path: Path
) -> None:
    data, docs = dataset
    summary = _eval("qa", str(data), "--docs", str(docs), "--out", str(tmp_path / "qa"))
    assert summary["questions"] == 4 and summary["judge"] is None
    assert summary["answer_in_context@5"] == 1.0
    assert summary["token_recall"] > 0.5
    # the off-topic question is refused, and only it
    assert summary["abstention_precision"] == 1.0 and summary["abstention_recall"] == 1.0
    rows = [json.loads(x) for x in (tmp_path / "qa" / "questions.jsonl").read_text().splitlines()]
    refused = next(r for r in rows if r["id"] == "q4")
    assert refused["metrics"]["abstained"] == 1.0 and refused["metrics"]["mmlongbench_acc"] == 1.0


def test_qa_run_with_a_judge(
    dataset: tuple[Path, Path], tmp_path: Path, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    _data, docs = dataset
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps(QUESTIONS[2]) + "\n")
    monkeypatch.setenv("DOCSIGHT_LLM_BASE_URL", fake_llm.base_url)
    monkeypatch.setenv("DOCSIGHT_LLM_MODEL", "fake-model")
    monkeypatch.setenv("DOCSIGHT_LLM_CACHE", "false")
    monkeypatch.setenv("DOCSIGHT_GRAPH_SUMMARIES", "extractive")  # the script is for answers
    monkeypatch.setenv("DOCSIGHT_ANSWER_VERIFY", "off")  # and the judge, no claim check
    fake_llm.script(
        ok("The warranty lasts two years [1]."),  # the answer
        ok(json.dumps({"score": 5, "rationale": "matches"})),
        ok(json.dumps({"reference_facts": [{"fact": "warranty lasts two years", "covered": True}],
                       "candidate_facts": [{"fact": "warranty lasts two years", "supported": True},
                                           {"fact": "it covers batteries", "supported": False}]})),
        ok(json.dumps({"claims": [{"claim": "the warranty lasts two years", "supported": True}]})),
    )  # fmt: skip
    summary = _eval("qa", str(one), "--docs", str(docs), "--out", str(tmp_path / "judged"))
    assert summary["judge"] == "fake-model"
    assert summary["judge_correct"] == 1.0 and summary["judge_score"] == 5.0
    # precision 1/2 (one unsupported predicted fact), recall 1/1
    assert summary["fact_precision"] == 0.5 and summary["fact_recall"] == 1.0
    assert summary["fact_f1"] == pytest.approx(2 / 3, abs=1e-3)
    assert summary["faithfulness"] == 1.0
    assert len(fake_llm.chat_requests) == 4


def test_grid_runs_variants_over_one_collection(dataset: tuple[Path, Path], tmp_path: Path) -> None:
    data, docs = dataset
    grid = tmp_path / "grid.toml"
    grid.write_text(
        f'kind = "retrieval"\ndataset = "{data.name}"\ndocs = "{docs.name}"\n\n'
        '[[variants]]\nname = "default"\n\n'
        '[[variants]]\nname = "bm25 only"\nsettings = { retrieval = { channels = ["bm25"] } }\n'
    )
    result = _eval("grid", str(grid), "--out", str(tmp_path / "grid-runs"))
    runs = result["runs"]
    assert [r["label"] for r in runs] == ["default", "bm25 only"]
    assert runs[0]["collection"] == runs[1]["collection"]
    assert runs[1]["ingest"]["added"] == 0  # shared: the second variant ingests nothing
    assert runs[1]["settings"]["retrieval"]["channels"] == ["bm25"]
    report = (tmp_path / "grid-runs" / "report.md").read_text()
    assert "| default |" in report and "| bm25 only |" in report
    assert (tmp_path / "grid-runs" / "comparison.png").is_file()


def test_eval_errors_are_clear(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    result = runner.invoke(app, ["eval", "retrieval", str(bad), "--docs", str(tmp_path), "--json"])
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert "bad.jsonl" in error["message"]
