"""Readers that turn each evaluation format into an :class:`EvalSet` in docsight's conventions.

Every source labels pages and boxes its own way (1-indexed strings, PDF points, "<doc>#p<page>"
corpus ids); the readers convert once, here, and say what they converted in ``EvalSet.notes`` so a
report can show how the labels were obtained. ``load_dataset`` picks the reader from the file name
or, failing that, from the content. ``write_jsonl`` exports any set to the generic JSONL format,
which ``load_jsonl`` reads back unchanged.
"""

from __future__ import annotations

import ast
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from docsight.document.model import BBox
from docsight.errors import ConfigurationError
from docsight.evaluation.types import EvalQuestion, EvalSet, Region

FORMATS = ("mmlongbench", "mmdocir", "vidoseek", "mmquery", "jsonl")

#: The file names each published set ships with.
_KNOWN_NAMES = {
    "samples.json": "mmlongbench",
    "mmdocir.jsonl": "mmdocir",
    "rag_dataset.json": "vidoseek",
    "queries.jsonl": "mmquery",
}
_EXPECTED = (
    "expected MMLongBench samples.json, MMDocIR mmdocir.jsonl, ViDoSeek rag_dataset.json, "
    "an mmquery directory (queries.jsonl + qrels.tsv) or generic JSONL"
)


# --- entry points --------------------------------------------------------------------------------


def load_dataset(path: str | Path, format: str | None = None) -> EvalSet:
    """Read an evaluation set; ``format`` is one of :data:`FORMATS`, or None to detect it."""
    if format is not None and format not in FORMATS:
        raise ConfigurationError(
            f"unknown dataset format {format!r}; use one of {', '.join(FORMATS)}"
        )
    fmt, file = _detect(Path(path)) if format is None else (format, _resolve(Path(path), format))
    return _READERS[fmt](file)


def detect_format(path: str | Path) -> str:
    """The format :func:`load_dataset` would read ``path`` as."""
    return _detect(Path(path))[0]


def write_jsonl(evalset: EvalSet, path: str | Path) -> Path:
    """Export ``evalset`` in the generic JSONL format; return the path written."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    base = out.parent.resolve()
    lines = []
    for q in evalset.questions:
        # The label fields are always written, even empty; the rest only when set.
        row = {"id": q.id, "question": q.question, "answer": q.answer, "doc": q.doc}
        row |= {"evidence_pages": q.evidence_pages} | q.model_dump(
            mode="json", exclude_defaults=True
        )
        if q.regions:
            row["regions"] = [{"page": r.page, "bbox": list(r.bbox.as_tuple())} for r in q.regions]
        if q.image:
            image = Path(q.image).resolve()
            # Relative where possible so the file and its images can be moved together.
            row["image"] = (
                image.relative_to(base).as_posix() if image.is_relative_to(base) else str(image)
            )
        lines.append(json.dumps(row, ensure_ascii=False))
    out.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return out


# --- MMLongBench-Doc -----------------------------------------------------------------------------


def load_mmlongbench(path: str | Path) -> EvalSet:
    """``samples.json``: 1-indexed ``evidence_pages`` and ``evidence_sources`` as list strings."""
    file = Path(path)
    items = _read_json(file)
    if not isinstance(items, list):
        raise ConfigurationError(f"{file}: expected a JSON list of MMLongBench samples")
    questions = []
    invalid = 0
    for index, item in enumerate(items):
        where = f"{file}: item {index}"
        _require(item, ("doc_id", "question", "answer", "evidence_pages"), where)
        pages, dropped = _from_one_based(item["evidence_pages"], f"{where}: evidence_pages")
        invalid += dropped
        questions.append(
            EvalQuestion(
                # The position in the file is the only identity a sample has.
                id=f"{item['doc_id']}#{index}",
                question=str(item["question"]),
                answer=item["answer"],
                doc=str(item["doc_id"]),
                evidence_pages=pages,
                answer_format=_optional_str(item.get("answer_format")),
                domain=_optional_str(item.get("doc_type")),
                evidence_sources=_str_list(
                    item.get("evidence_sources", []), f"{where}: evidence_sources"
                ),
            )
        )
    notes = _one_based_notes("evidence pages", invalid)
    if any(isinstance(i.get("evidence_pages"), str) for i in items):
        notes.append("evidence_pages and evidence_sources were Python list strings; parsed")
    return _evalset(file, "mmlongbench", questions, notes)


# --- MMDocIR -------------------------------------------------------------------------------------


def load_mmdocir(path: str | Path) -> EvalSet:
    """``mmdocir.jsonl``: one line per document, 0-indexed ``page_id`` and boxes in PDF points."""
    file = Path(path)
    questions = []
    boxes = clamped = off_label = 0
    for line_no, doc in _jsonl_objects(file):
        where = f"{file}: line {line_no}"
        _require(doc, ("doc_name", "questions"), where)
        if not isinstance(doc["questions"], list):
            raise ConfigurationError(f"{where}: 'questions' must be a list")
        name = str(doc["doc_name"])
        for index, item in enumerate(doc["questions"]):
            at = f"{where}: question {index}"
            _require(item, ("Q", "page_id"), at)
            pages = sorted(set(_int_list(item["page_id"], f"{at}: page_id")))
            if any(p < 0 for p in pages):
                raise ConfigurationError(f"{at}: page_id has a negative page: {pages}")
            regions = []
            for mapping in item.get("layout_mapping") or []:
                region, overhangs = _mmdocir_region(mapping, f"{at}: layout_mapping")
                regions.append(region)
                boxes += 1
                clamped += overhangs
                off_label += region.page not in pages
            questions.append(
                EvalQuestion(
                    # The numbering of mmquery's "<doc>__q<i>" ids, which came from this file.
                    id=f"{name}#{index}",
                    question=str(item["Q"]),
                    answer=item.get("A"),
                    doc=name,
                    evidence_pages=pages,
                    regions=regions,
                    domain=_optional_str(doc.get("domain")),
                    evidence_sources=_str_list(item.get("type", []), f"{at}: type"),
                )
            )
    notes = [
        "page_id labels are 0-indexed; kept as they are",
        f"{boxes} evidence boxes were in PDF points with a top-left origin (checked against "
        "rendered pages); divided by page_size to [0, 1]",
    ]
    if clamped:
        notes.append(f"{clamped} boxes overhung their page and were clamped to it")
    if off_label:
        notes.append(f"{off_label} boxes lie on pages that page_id does not list")
    return _evalset(file, "mmdocir", questions, notes)


def _mmdocir_region(mapping: Any, where: str) -> tuple[Region, bool]:
    _require(mapping, ("page", "page_size", "bbox"), where)
    try:
        width, height = (float(v) for v in mapping["page_size"])
        x0, y0, x1, y1 = (float(v) for v in mapping["bbox"])
        page = int(mapping["page"])
        bbox = BBox.from_absolute(x0, y0, x1, y1, width, height)
        region = Region(page=page, bbox=bbox)
    except (TypeError, ValueError, ValidationError) as exc:
        raise ConfigurationError(f"{where}: bad region {mapping}: {exc}") from None
    overhangs = min(x0, y0, x1, y1) < 0 or max(x0, x1) > width or max(y0, y1) > height
    return region, overhangs


# --- ViDoSeek ------------------------------------------------------------------------------------


def load_vidoseek(path: str | Path) -> EvalSet:
    """``rag_dataset.json``: ``{"examples": [...]}`` with 1-indexed ``meta_info.reference_page``."""
    file = Path(path)
    data = _read_json(file)
    if not isinstance(data, dict) or not isinstance(data.get("examples"), list):
        raise ConfigurationError(f"{file}: expected a ViDoSeek object with an 'examples' list")
    questions = []
    invalid = 0
    query_types = set()
    for index, item in enumerate(data["examples"]):
        where = f"{file}: example {index}"
        _require(item, ("query", "meta_info"), where)
        meta = _require(item["meta_info"], ("file_name",), f"{where}: meta_info")
        pages, dropped = _from_one_based(meta.get("reference_page", []), f"{where}: reference_page")
        invalid += dropped
        query_types.add(str(meta.get("query_type") or ""))
        source_type = meta.get("source_type")
        questions.append(
            EvalQuestion(
                id=str(item.get("uid") or f"{meta['file_name']}#{index}"),
                question=str(item["query"]),
                answer=item.get("reference_answer"),
                doc=str(meta["file_name"]),
                evidence_pages=pages,
                evidence_sources=[str(source_type)] if source_type else [],
            )
        )
    notes = _one_based_notes("reference pages", invalid)
    if query_types - {""}:
        kinds = ", ".join(sorted(query_types - {""}))
        notes.append(f"query_type ({kinds}) has no field in EvalQuestion; not kept")
    return _evalset(file, "vidoseek", questions, notes)


# --- mmquery (derived) ---------------------------------------------------------------------------


def load_mmquery(path: str | Path) -> EvalSet:
    """A directory with ``queries.jsonl``, ``qrels.tsv`` and query images (or its queries file).

    ``qrels.tsv`` decides relevance; ``relevant_pages`` in the queries only fills in when there is
    no qrels file.
    """
    file = _resolve(Path(path), "mmquery")
    base = file.parent
    qrels_file = base / "qrels.tsv"
    qrels = _read_qrels(qrels_file) if qrels_file.is_file() else None
    questions = []
    missing_images = disagreements = multi_doc = 0
    for line_no, item in _jsonl_objects(file):
        where = f"{file}: line {line_no}"
        _require(item, ("qid", "question"), where)
        qid = str(item["qid"])
        listed = [
            _corpus_page(c, f"{where}: relevant_pages") for c in item.get("relevant_pages", [])
        ]
        relevant = qrels.get(qid, []) if qrels is not None else listed
        if qrels is not None and set(relevant) != set(listed):
            disagreements += 1
        docs = Counter(doc for doc, _ in relevant) or Counter(doc for doc, _ in listed)
        # EvalQuestion holds one document: keep the one with most relevant pages.
        doc = docs.most_common(1)[0][0] if docs else None
        multi_doc += len(docs) > 1
        image = None
        if item.get("image"):
            image = os.path.abspath(base / str(item["image"]))
            missing_images += not Path(image).is_file()
        questions.append(
            EvalQuestion(
                id=qid,
                question=str(item["question"]),
                answer=item.get("answer"),
                doc=doc,
                evidence_pages=sorted({page for d, page in relevant if d == doc}),
                image=image,
                evidence_sources=[str(item["type"])] if item.get("type") else [],
            )
        )
    notes = [
        "derived set (questions plus crops of their evidence regions), not a published benchmark",
        "pages come from corpus ids '<doc>#p<page>', already 0-indexed",
    ]
    if qrels is None:
        notes.append(f"no {qrels_file.name}; relevance taken from relevant_pages")
    else:
        notes.append(f"relevance taken from {qrels_file.name} (score > 0)")
        if disagreements:
            notes.append(f"{disagreements} queries list relevant_pages that disagree with qrels")
    if multi_doc:
        notes.append(f"{multi_doc} queries had relevant pages in several documents; kept one")
    if missing_images:
        notes.append(f"{missing_images} query images do not exist")
    return _evalset(file, "mmquery", questions, notes)


def _read_qrels(file: Path) -> dict[str, list[tuple[str, int]]]:
    relevant: dict[str, list[tuple[str, int]]] = {}
    for line_no, line in enumerate(_read_text(file).splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.rstrip("\n").split("\t")
        if len(fields) < 3:
            raise ConfigurationError(f"{file}: line {line_no}: expected query-id, corpus-id, score")
        try:
            score = float(fields[2])
        except ValueError:
            if line_no == 1:  # the header
                continue
            raise ConfigurationError(
                f"{file}: line {line_no}: score {fields[2]!r} is not a number"
            ) from None
        if score > 0:
            page = _corpus_page(fields[1], f"{file}: line {line_no}")
            relevant.setdefault(fields[0], []).append(page)
    return relevant


def _corpus_page(corpus_id: object, where: str) -> tuple[str, int]:
    doc, sep, page = str(corpus_id).rpartition("#p")
    if not sep or not doc or not page.isdigit():
        raise ConfigurationError(f"{where}: {corpus_id!r} is not '<doc>#p<page>'")
    return doc, int(page)


# --- generic JSONL -------------------------------------------------------------------------------


def load_jsonl(path: str | Path) -> EvalSet:
    """The generic format: one question per line, 0-based pages; see the README."""
    file = Path(path)
    base = file.parent
    questions = []
    seen: dict[str, int] = {}
    for line_no, item in _jsonl_objects(file):
        where = f"{file}: line {line_no}"
        question = _generic_question(item, base, where)
        if question.id in seen:
            raise ConfigurationError(
                f"{where}: duplicate id {question.id!r} (first on line {seen[question.id]})"
            )
        seen[question.id] = line_no
        questions.append(question)
    missing = sum(1 for q in questions if q.image and not Path(q.image).is_file())
    notes = [f"{missing} query images do not exist"] if missing else []
    return _evalset(file, "jsonl", questions, notes)


def _generic_question(item: dict[str, Any], base: Path, where: str) -> EvalQuestion:
    unknown = sorted(set(item) - set(_JSONL_CHECKS))
    if unknown:
        # Mostly typos ("evidence_page"), which would otherwise silently drop the labels.
        raise ConfigurationError(
            f"{where}: unknown keys {unknown}; allowed: {', '.join(_JSONL_CHECKS)}"
        )
    for key, (valid, expected) in _JSONL_CHECKS.items():
        if key in ("id", "question") and key not in item:
            raise ConfigurationError(f"{where}: missing '{key}'")
        if key in item and not valid(item[key]):
            raise ConfigurationError(f"{where}: '{key}' must be {expected}, got {item[key]!r}")
    pages = item.get("evidence_pages") or []
    if pages and not item.get("doc"):
        raise ConfigurationError(f"{where}: 'evidence_pages' needs the 'doc' they belong to")
    try:
        regions = [_generic_region(r) for r in item.get("regions") or []]
    except (TypeError, ValueError, KeyError, ValidationError) as exc:
        problem = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigurationError(
            f"{where}: bad region ({problem}); expected "
            '{"page": 0-based int, "bbox": [x0, y0, x1, y1] in [0, 1], top-left origin}'
        ) from None
    return EvalQuestion(
        id=str(item["id"]),
        question=item["question"],
        answer=item.get("answer"),
        doc=item.get("doc"),
        evidence_pages=sorted(set(pages)),
        regions=regions,
        image=os.path.abspath(base / item["image"]) if item.get("image") else None,
        answer_format=item.get("answer_format"),
        domain=item.get("domain"),
        evidence_sources=item.get("evidence_sources") or [],
    )


def _generic_region(raw: Any) -> Region:
    x0, y0, x1, y1 = (float(v) for v in raw["bbox"])
    return Region(page=raw["page"], bbox=BBox(x0=x0, y0=y0, x1=x1, y1=y1))


# --- detection -----------------------------------------------------------------------------------


def _detect(path: Path) -> tuple[str, Path]:
    if path.is_dir():
        # Only mmquery is a directory; the other sets are one file, named explicitly.
        if (path / "queries.jsonl").is_file():
            return "mmquery", path
        raise ConfigurationError(f"{path}: a directory without queries.jsonl; {_EXPECTED}")
    if not path.is_file():
        raise ConfigurationError(f"{path}: no such dataset file; {_EXPECTED}")
    if path.name in _KNOWN_NAMES:
        return _KNOWN_NAMES[path.name], path
    return _sniff(path), path


def _sniff(path: Path) -> str:
    text = _read_text(path)
    if not text.strip():
        raise ConfigurationError(f"{path}: the file is empty; {_EXPECTED}")
    try:
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, list):
        if whole and isinstance(whole[0], dict) and "evidence_pages" in whole[0]:
            return "mmlongbench"
        raise ConfigurationError(f"{path}: a JSON list, but not MMLongBench samples; {_EXPECTED}")
    if isinstance(whole, dict):
        if "examples" in whole:
            return "vidoseek"
        if "\n" in text.strip():
            raise ConfigurationError(f"{path}: a JSON object, but not ViDoSeek; {_EXPECTED}")
    # A one-line JSONL file is also a JSON object, so everything else is sniffed line by line.
    try:
        _, first = next(_jsonl_objects(path, text))
    except StopIteration:
        raise ConfigurationError(f"{path}: no JSON lines; {_EXPECTED}") from None
    except ConfigurationError as exc:
        raise ConfigurationError(f"{exc.message}; {_EXPECTED}") from None
    if "questions" in first and "doc_name" in first:
        return "mmdocir"
    if "qid" in first and "relevant_pages" in first:
        return "mmquery"
    return "jsonl"


def _resolve(path: Path, fmt: str) -> Path:
    if fmt == "mmquery" and path.is_dir():
        path = path / "queries.jsonl"
    elif path.is_dir():
        raise ConfigurationError(f"{path}: a directory; give the {fmt} file itself")
    if not path.is_file():
        raise ConfigurationError(f"{path}: no such dataset file ({fmt} expected)")
    return path


# --- shared helpers ------------------------------------------------------------------------------


def _evalset(file: Path, fmt: str, questions: list[EvalQuestion], notes: list[str]) -> EvalSet:
    unlabeled = [q for q in questions if not q.evidence_pages]
    if unlabeled:
        unanswerable = sum(1 for q in unlabeled if not q.answerable)
        notes.append(
            f"{len(unlabeled)} questions have no evidence pages "
            f"({unanswerable} of them 'Not answerable')"
        )
    # Kept: such labels name the page the question is about (where a reader would look).
    labelled = sum(1 for q in questions if q.evidence_pages and not q.answerable)
    if labelled:
        notes.append(f"{labelled} 'Not answerable' questions have evidence pages; kept as given")
    source = str(file.resolve())
    return EvalSet(
        name=_dataset_name(file), format=fmt, source=source, questions=questions, notes=notes
    )


def _dataset_name(file: Path) -> str:
    # "samples", "queries" and "rag_dataset" say nothing; the folder names the set.
    folder = file.resolve().parent.name
    if file.name in ("samples.json", "queries.jsonl", "rag_dataset.json") and folder:
        return folder
    return file.stem


def _read_text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"{file}: cannot read the dataset: {exc}") from None


def _read_json(file: Path) -> Any:
    try:
        return json.loads(_read_text(file))
    except json.JSONDecodeError as exc:
        raise ConfigurationError(
            f"{file}: line {exc.lineno}: invalid JSON ({exc.msg}); {_EXPECTED}"
        ) from None


def _jsonl_objects(file: Path, text: str | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each line that is not blank or a ``#`` comment."""
    for line_no, line in enumerate((text or _read_text(file)).splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            item = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{file}: line {line_no}: invalid JSON ({exc.msg})") from None
        if not isinstance(item, dict):
            raise ConfigurationError(
                f"{file}: line {line_no}: expected a JSON object, got {type(item).__name__}"
            )
        yield line_no, item


def _require(item: Any, keys: tuple[str, ...], where: str) -> dict[str, Any]:
    """``item`` as an object holding ``keys``, or an error saying where it is not."""
    if not isinstance(item, dict):
        raise ConfigurationError(f"{where}: expected an object, got {type(item).__name__}")
    missing = [k for k in keys if k not in item]
    if missing:
        raise ConfigurationError(f"{where}: missing {', '.join(repr(k) for k in missing)}")
    return item


def _literal(value: Any, where: str) -> Any:
    """Sources store lists as their Python repr ("[5]", "['Table']"); parse those safely."""
    if not isinstance(value, str):
        return value
    try:
        return ast.literal_eval(value.strip() or "[]")
    except (ValueError, SyntaxError):
        raise ConfigurationError(f"{where}: {value!r} is not a list") from None


def _from_one_based(value: Any, where: str) -> tuple[list[int], int]:
    """0-based pages from 1-indexed labels, and how many labels were below 1 (dropped)."""
    raw = _int_list(value, where)
    return sorted({p - 1 for p in raw if p >= 1}), sum(1 for p in raw if p < 1)


def _one_based_notes(what: str, invalid: int) -> list[str]:
    notes = [f"{what} were 1-indexed; converted to 0-based"]
    if invalid:
        notes.append(f"{invalid} page labels below 1 (invalid when 1-indexed) were dropped")
    return notes


def _int_list(value: Any, where: str) -> list[int]:
    parsed = _literal(value, where)
    if _is_int(parsed):  # a single page written without brackets
        parsed = [parsed]
    if not isinstance(parsed, list | tuple) or not all(_is_int(p) for p in parsed):
        raise ConfigurationError(f"{where}: expected a list of page numbers, got {value!r}")
    return [int(p) for p in parsed]


def _str_list(value: Any, where: str) -> list[str]:
    if isinstance(value, str) and not value.lstrip().startswith("["):
        return [value]  # one source written plainly ("Table")
    parsed = _literal(value, where)
    if not isinstance(parsed, list | tuple):
        raise ConfigurationError(f"{where}: expected a list of strings, got {value!r}")
    return [str(s) for s in parsed]


def _is_int(value: Any) -> bool:
    # bool is an int subclass, and true would otherwise read as page 1.
    return isinstance(value, int) and not isinstance(value, bool)


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _optional(valid: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or valid(value)


#: The generic format's keys, in the order written, with what each must hold.
_JSONL_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "id": (lambda v: (isinstance(v, str) and v != "") or _is_int(v), "a non-empty string"),
    "question": (lambda v: isinstance(v, str) and v.strip() != "", "a non-empty string"),
    "answer": (lambda v: True, "anything"),
    "doc": (_optional(lambda v: isinstance(v, str)), "a file name or null"),
    "evidence_pages": (
        _optional(lambda v: isinstance(v, list) and all(_is_int(p) and p >= 0 for p in v)),
        "a list of 0-based page numbers (ints >= 0)",
    ),
    "regions": (_optional(lambda v: isinstance(v, list)), "a list of regions"),
    "image": (_optional(lambda v: isinstance(v, str)), "a path or null"),
    "answer_format": (_optional(lambda v: isinstance(v, str)), "a string or null"),
    "domain": (_optional(lambda v: isinstance(v, str)), "a string or null"),
    "evidence_sources": (
        _optional(lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v)),
        "a list of strings",
    ),
}

_READERS = {
    "mmlongbench": load_mmlongbench,
    "mmdocir": load_mmdocir,
    "vidoseek": load_vidoseek,
    "mmquery": load_mmquery,
    "jsonl": load_jsonl,
}
