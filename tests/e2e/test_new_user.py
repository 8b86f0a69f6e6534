"""What a new user trips over in the first hour (issue 13): every mistake gets one clear line
and the right exit status, never a traceback, and the output reads well where it is shown."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from docsight import DocSight, Settings
from docsight.cli.main import app
from docsight.errors import (
    AmbiguousDocumentError,
    ConfigurationError,
    DocumentNotFoundError,
    EmptyQuestionError,
    InvalidSettingError,
)
from fixtures.corpus_fixtures import write_corpus

runner = CliRunner()


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env=env)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


# --- settings -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("variable", "value", "allowed"),
    [
        ("DOCSIGHT_LLM_TIMEOUT", "abc", "valid number"),
        ("DOCSIGHT_LLM_TIMEOUT", "-3", "greater than 0"),
        ("DOCSIGHT_PARSE_OCR", "sometimes", "'auto', 'always' or 'never'"),
        ("DOCSIGHT_RETRIEVAL_WEIGHTS", "bm25", "expected JSON"),
        ("DOCSIGHT_IMAGE_STREAMS", "A,Q", "'A', 'B' or 'C'"),
    ],
)
def test_invalid_settings_are_one_line_usage_errors(
    text_collection: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, allowed: str
) -> None:
    code, out, err = invoke("-c", str(text_collection), "docs", env={variable: value})
    assert code == 2, (out, err)
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert variable in err and allowed in err and "invalid_setting" in err
    monkeypatch.setenv(variable, value)
    with pytest.raises(ConfigurationError) as caught:
        DocSight(text_collection)
    assert isinstance(caught.value, InvalidSettingError) and caught.value.variables == [variable]


def test_list_settings_take_words_or_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCSIGHT_RETRIEVAL_CHANNELS", "bm25")
    assert Settings().retrieval.channels == ["bm25"]
    monkeypatch.setenv("DOCSIGHT_RETRIEVAL_CHANNELS", "bm25, dense")
    assert Settings().retrieval.channels == ["bm25", "dense"]
    monkeypatch.setenv("DOCSIGHT_RETRIEVAL_CHANNELS", '["page_bm25"]')
    assert Settings().retrieval.channels == ["page_bm25"]


# --- paths, collections, questions, images -------------------------------------------------------


def test_ingest_of_a_missing_path_creates_nothing(tmp_path: Path) -> None:
    col = tmp_path / "col"
    code, _, err = invoke("-c", str(col), "ingest", str(tmp_path / "wrong" / "path"))
    assert code == 2 and "path_not_found" in err and "wrong/path" in err
    assert not col.exists()


def test_mistyped_collection_is_not_an_empty_one(tmp_path: Path, text_collection: Path) -> None:
    code, _, err = invoke("-c", str(tmp_path / "colection"), "docs")
    assert code == 2 and "no collection at" in err and "no such directory" in err
    assert "empty" not in err
    (tmp_path / "fresh").mkdir()
    code, out, _ = invoke("-c", str(tmp_path / "fresh"), "docs")
    assert code == 0 and "the collection is empty" in out


@pytest.mark.parametrize("question", ["", "   ", "?!"])
def test_blank_questions_are_usage_errors(text_collection: Path, question: str) -> None:
    for command in ("ask", "search"):
        code, out, err = invoke("-c", str(text_collection), command, question)
        assert code == 2 and "empty_question" in err and "Not answerable" not in out
    with pytest.raises(EmptyQuestionError):
        DocSight(text_collection).ask(question)


def test_a_text_file_as_image_is_named_not_an_object(text_collection: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("meeting notes, not a picture")
    code, _, err = invoke("-c", str(text_collection), "ask", "what is this?", "--image", str(notes))
    assert code == 2 and "notes.txt" in err and "not an image" in err
    assert "object at 0x" not in err and "BytesIO" not in err


def test_doc_accepts_a_stem_or_a_prefix_and_suggests_on_a_miss(text_collection: Path) -> None:
    ds = DocSight(text_collection)
    assert ds.resolve("guide").name == "guide.md"
    assert ds.resolve("GUI").name == "guide.md"
    assert ds.resolve("faq.txt").name == "faq.txt"
    with pytest.raises(DocumentNotFoundError, match=r"did you mean guide\.md"):
        ds.resolve("giude")
    code, _, err = invoke("-c", str(text_collection), "search", "warranty", "--doc", "fqa.txt")
    assert code == 2 and "did you mean faq.txt" in err
    code, out, _ = invoke(
        "-c", str(text_collection), "search", "warranty", "--doc", "faq", "--json"
    )
    assert code == 0 and {h["doc_name"] for h in json.loads(out)} == {"faq.txt"}


def test_a_prefix_shared_by_two_documents_is_ambiguous(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    (corpus / "guide-2.md").write_text("# Second guide\n\nAnother guide about widgets.\n")
    ds = DocSight(tmp_path / "col")
    ds.ingest([corpus])
    with pytest.raises(AmbiguousDocumentError, match=r"guide-2\.md.*guide\.md|guide\.md.*guide-2"):
        ds.resolve("gui")
    assert ds.resolve("guide").name == "guide.md"  # the stem reading comes first


# --- the command line -----------------------------------------------------------------------------


def test_collection_works_after_the_command_name(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus")
    col = str(tmp_path / "col")
    code, out, _ = invoke("ingest", str(corpus), "--collection", col, "--json")
    assert code == 0 and json.loads(out)["counts"]["added"] == 2
    for args in (("docs", "-c", col), ("info", "--collection", col), ("check", "-c", col)):
        code, out, err = invoke(*args, "--json")
        assert code == 0, (args, err)
    code, out, _ = invoke("search", "warranty", "-c", col, "-k", "1", "--json")
    assert code == 0 and json.loads(out)[0]["doc_name"] == "faq.txt"


def test_docs_fits_80_columns(text_collection: Path) -> None:
    code, out, _ = invoke("-c", str(text_collection), "docs", env={"COLUMNS": "80"})
    assert code == 0
    assert max(len(line) for line in out.splitlines()) <= 80
    assert re.search(r"guide\.md +\d+ +\d+ +md +\d{4}-\d\d-\d\d +[0-9a-f]{8}", out)


def test_json_pages_say_how_they_count(text_collection: Path) -> None:
    hits = json.loads(invoke("-c", str(text_collection), "search", "warranty", "--json")[1])
    assert all(h["page_number"] == h["page"] + 1 for h in hits)
    answer = json.loads(
        invoke("-c", str(text_collection), "ask", "How long does the warranty last?", "--json")[1]
    )
    for item in answer["citations"] + answer["sources"]:
        assert item["page_number"] == item["page"] + 1


def test_info_names_the_model_settings(text_collection: Path) -> None:
    code, out, _ = invoke("-c", str(text_collection), "info", "--json")
    info = json.loads(out)
    assert code == 0 and "DOCSIGHT_LLM_MODEL" in info["llm"]
    code, out, _ = invoke(
        "-c",
        str(text_collection),
        "info",
        "--json",
        env={"DOCSIGHT_LLM_MODEL": "m", "DOCSIGHT_LLM_BASE_URL": "http://127.0.0.1:9/v1"},
    )
    assert json.loads(out)["llm"].startswith("m at http://127.0.0.1:9/v1 (timeout 20 s")


def test_cited_sources_are_numbered_from_one(text_collection: Path) -> None:
    for question in ("How long does the warranty last?", "What does error E42 mean?"):
        code, out, _ = invoke("-c", str(text_collection), "ask", question, "--json")
        answer = json.loads(out)
        numbers = [c["n"] for c in answer["citations"]]
        assert code == 0 and numbers == list(range(1, len(numbers) + 1)), answer
        assert {int(n) for n in re.findall(r"\[(\d+)\]", answer["answer"])} == set(numbers)
        assert [s["n"] for s in answer["sources"]] == list(range(1, len(answer["sources"]) + 1))
