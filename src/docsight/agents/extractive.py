"""The offline answerer: quote the sentences and table rows that best answer the question.

No model writes anything here. Candidates (sentences of text sources, rows of table sources with
their header) are scored by IDF-weighted overlap with the question's content words plus the cosine
between their embeddings, and the best few are quoted with their citation numbers. The result is
marked ``mode="extractive"`` so nobody mistakes it for a generated answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from docsight.agents.answer import Answer, Citation, Source
from docsight.agents.evidence import Evidence, content_terms, idf_weights
from docsight.document.text import split_sentences
from docsight.encoders.base import Encoder
from docsight.settings import AnswerSettings

_MAX_CANDIDATES = 160
_MIN_WORDS = 3
# Further sentences are quoted only when nearly as good as the best one.
_KEEP_RATIO = 0.8


# A sentence that announces a list ("... listed below.", "... as follows:") is quoted together
# with the list items that follow it, since that is where the answer is.
_ANNOUNCES = re.compile(r"(?::|\b(?:below|following|as follows|these|include)\.?)\s*$", re.I)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•▪◦‣]|\d{1,3}[.)])\s+")
_CONTINUATION = 8


@dataclass(frozen=True)
class Candidate:
    source: Source
    position: int
    text: str
    #: Lines an announcing sentence introduces, quoted along with it.
    continuation: tuple[str, ...] = ()

    @property
    def quote(self) -> str:
        if not self.continuation:
            return self.text
        return f"{self.text} " + "; ".join(self.continuation)


def table_rows(markdown: str) -> tuple[list[str], list[str]]:
    """Split a table chunk into rendered data rows ("header: value; ...") and other lines."""
    header: list[str] | None = None
    rows: list[str] = []
    other: list[str] = []
    for line in markdown.splitlines():
        stripped = line.strip()
        if not (stripped.startswith("|") and stripped.endswith("|")):
            if stripped:
                other.append(stripped)
            continue
        cells = [c.strip() for c in stripped.strip("|").split("|")]
        if all(set(c) <= set("-: ") for c in cells):
            continue  # the separator row
        if header is None:
            header = cells
            continue
        pairs = [f"{h}: {v}" if h else v for h, v in zip(header, cells, strict=False) if v]
        if pairs:
            rows.append("; ".join(pairs))
    if header is not None and not rows:
        rows.append("; ".join(c for c in header if c))
    return rows, other


def candidates(sources: Sequence[Source]) -> list[Candidate]:
    out: list[Candidate] = []
    # Best-ranked sources first, so the cap on candidates cuts what retrieval trusted least
    # (the readout numbers sources in document order).
    for source in sorted(sources, key=lambda s: (s.rank, s.n)):
        pieces: list[str] = []
        if source.kind == "table":
            rows, other = table_rows(source.text)
            pieces.extend(other)
            pieces.extend(rows)
        else:
            for line in source.text.splitlines():
                if line.lstrip().startswith(("#", "```")):
                    continue  # headings name topics and fences frame code: neither answers
                if _LIST_ITEM.match(line):
                    pieces.append(line.strip())  # one item, marker kept to recognise it below
                else:
                    pieces.extend(split_sentences(line))
        for position, piece in enumerate(pieces):
            text = _LIST_ITEM.sub("", piece)
            if text.rstrip().endswith("?"):
                continue  # a question in the source (an FAQ, a heading) never answers one
            if len(text.split()) >= _MIN_WORDS or any(ch.isdigit() for ch in text):
                following: list[str] = []
                if _ANNOUNCES.search(piece):
                    for nxt in pieces[position + 1 : position + 1 + _CONTINUATION]:
                        if not _LIST_ITEM.match(nxt):
                            break
                        following.append(_LIST_ITEM.sub("", nxt))
                out.append(Candidate(source, position, text, tuple(following)))
        if len(out) >= _MAX_CANDIDATES:
            break
    return out[:_MAX_CANDIDATES]


class ExtractiveAnswerer:
    mode = "extractive"

    def __init__(self, encoder: Callable[[], Encoder], settings: AnswerSettings) -> None:
        self._encoder = encoder
        self.settings = settings

    def answer(self, question: str, sources: Sequence[Source], evidence: Evidence) -> Answer:
        base = Answer.not_answerable(question, "extractive", sources, evidence.score)
        pool = candidates(sources)
        if not pool or evidence.score < self.settings.min_evidence:
            return base

        q_terms = content_terms(question)
        cand_terms = [set(content_terms(c.text)) for c in pool]
        weights = idf_weights(cand_terms, q_terms)
        total = sum(weights.values()) or 1.0
        lexical = np.array(
            [sum(w for t, w in weights.items() if t in terms) / total for terms in cand_terms],
            dtype=np.float32,
        )
        encoder = self._encoder()
        vectors = encoder.encode_documents([c.text for c in pool])
        query = encoder.encode_queries([question])[0]
        dense = np.clip(vectors @ query, 0.0, 1.0)
        # Earlier (higher-ranked) sources get a small prior: retrieval already judged them.
        prior = np.array([0.05 / c.source.rank for c in pool], dtype=np.float32)
        scores = 0.5 * lexical + 0.5 * dense + prior

        chosen: list[int] = []
        best = float(scores.max())
        for i in np.argsort(-scores, kind="stable"):
            if len(chosen) >= self.settings.max_sentences or scores[i] < _KEEP_RATIO * best:
                break
            if any(_similar(cand_terms[i], cand_terms[j]) for j in chosen):
                continue
            chosen.append(int(i))
        chosen.sort(key=lambda i: (pool[i].source.n, pool[i].position))

        parts: list[str] = []
        citations: dict[int, Citation] = {}
        for i in chosen:
            cand = pool[i]
            parts.append(f"{cand.quote} [{cand.source.n}]")
            citations.setdefault(cand.source.n, Citation.from_source(cand.source, quote=cand.quote))
        return base.model_copy(
            update={
                "answer": " ".join(parts),
                "answerable": True,
                "citations": sorted(citations.values(), key=lambda c: c.n),
            }
        )


def _similar(a: set[str], b: set[str]) -> bool:
    if not a or not b:
        return False
    return len(a & b) / len(a | b) > 0.8
