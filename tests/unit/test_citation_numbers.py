"""Citations are numbered 1..n in the order the answer cites them (issue 13)."""

from __future__ import annotations

from docsight.agents.answer import Answer, Citation, Source, number_citations


def _source(n: int, text: str = "") -> Source:
    return Source(n=n, doc_id="d", doc_name="report.pdf", page=n - 1, text=text or f"text {n}")


def _answer(text: str, cited: list[int], quotes: dict[int, str] | None = None) -> Answer:
    quotes = quotes or {}
    sources = [_source(n) for n in range(1, 7)]
    return Answer(
        question="q",
        answer=text,
        answerable=True,
        mode="extractive",
        citations=[Citation.from_source(sources[n - 1], quote=quotes.get(n)) for n in cited],
        sources=sources,
        removed_citations=[9],
    )


def test_gaps_close_in_the_order_of_citation() -> None:
    numbered = number_citations(_answer("Revenue rose [4]. Costs fell [2][4].", [2, 4]))
    assert numbered.answer == "Revenue rose [1]. Costs fell [2][1]."
    assert [(c.n, c.page) for c in numbered.citations] == [(1, 3), (2, 1)]
    # Sources the answer cites come first, the rest keep their order after them.
    assert [(s.n, s.page) for s in numbered.sources] == [
        (1, 3),
        (2, 1),
        (3, 0),
        (4, 2),
        (5, 4),
        (6, 5),
    ]
    assert numbered.removed_citations == [9]  # the model's own numbers, as it wrote them


def test_numbers_inside_a_quote_are_the_documents_own() -> None:
    quote = "BERT [5] improves on ELMo [2] by a wide margin."
    numbered = number_citations(_answer(f"{quote} [5] Training took days. [3]", [3, 5], {5: quote}))
    assert numbered.answer == f"{quote} [1] Training took days. [2]"
    assert [c.quote for c in numbered.citations] == [quote, None]


def test_answers_already_in_order_and_refusals_are_unchanged() -> None:
    ordered = _answer("A [1]. B [2].", [1, 2])
    assert number_citations(ordered) is ordered
    refusal = Answer.not_answerable("q", "extractive", [_source(1)], 0.1)
    assert number_citations(refusal) is refusal
