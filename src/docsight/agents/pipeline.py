"""Answering policy: from a cleaned question to the answer the user gets.

The facade (:class:`docsight.api.DocSight`) wires the collection in as :class:`Ports` (search,
page lookups, the models) and calls :func:`answer_question`. Everything that decides how an
answer is reached lives here:

* the strategy (``fast``, ``agent``, ``plan``; ``auto`` chosen per question);
* the evidence gate, weighed on what retrieval found rather than on the context read around it;
* the choice of answerer (a vision model when one is configured and the sources carry page
  renders or figure crops, else the language model, else the offline extractive answerer) and the
  fallback to the extractive answer when a model fails;
* the claim check, citation numbering and the sanitising every answer passes, whoever wrote it.

This module never imports ingestion or the store: the ports are plain callables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from docsight.agents.answer import Answer, Source, number_citations
from docsight.agents.evidence import Evidence
from docsight.agents.trace import Trace, TraceStep
from docsight.errors import LLMError, UsageError
from docsight.retrieval.census import Census, mention_text, read_census
from docsight.settings import Settings

MODES = ("fast", "agent", "plan", "auto")


@dataclass
class Ports:
    """What answering needs from the collection, supplied by the facade.

    ``chat`` and ``vision`` return ``None`` when no such model is configured; both are called
    only when needed, so an offline answer never builds a client.
    """

    #: The numbered sources for a query (retrieval and readout).
    retrieve: Callable[[str], list[Source]]
    #: Whether the question names pages its documents do not have.
    pages_missing: Callable[[str, Sequence[Source]], bool]
    #: The offline encoder (dense similarity for the evidence measure and sentence scoring).
    encoder: Callable[[], Any]
    chat: Callable[[], Any]
    vision: Callable[[], Any] = lambda: None
    #: Page renders and figure crops of sources, as ``(source number, PNG)``, at most ``limit``.
    images: Callable[[Sequence[Source], int], list[tuple[int, bytes]]] | None = None
    #: Reading around sources along the map and graph (``None``: no graph to walk).
    walk: Callable[[Sequence[Source]], list[Source]] | None = None
    #: Which of these words (a question's names and years) no document of the sources
    #: contains (``None``: not known, nothing counts as absent).
    absent: Callable[[Sequence[str], Sequence[Source]], list[str]] | None = None
    #: The count of a document's parts a question asks for ("How many tables are in the
    #: report?"), from its map (``retrieval.census``), for the documents of the sources.
    census: Callable[[str, Sequence[Source]], Census | None] | None = None
    #: The pages a question names ("on page 14", "the cover") in the sources' documents, as
    #: document id → 0-based pages (``None``: not known).
    named_pages: Callable[[str, Sequence[Source]], dict[str, list[int]]] | None = None


def choose_strategy(question: str, mode: str | None, default: str) -> str:
    """``mode`` (or the setting), with ``auto`` resolved for ``question``."""
    chosen = mode or default
    if chosen not in MODES:
        raise UsageError(f"mode must be fast, agent, plan or auto, not {chosen!r}")
    if chosen == "auto":
        from docsight.agents.plan import choose_mode

        chosen = choose_mode(question)
    return chosen


def answer_question(
    question: str,
    ports: Ports,
    settings: Settings,
    *,
    asked: str | None = None,
    mode: str | None = None,
    on_step: Callable[[TraceStep], None] | None = None,
    on_token: Callable[[str, int], None] | None = None,
) -> Answer:
    """Answer ``question`` (already cleaned). ``asked`` is what the answerer reads when it
    differs from what is searched (a question with its image's text); ``on_step`` hears each
    trace step as it finishes (a server streaming progress); ``on_token(piece, draft)`` hears a
    model's words as it writes them, ``draft`` counting its answers from 1 (a later draft, such
    as the agent's after reading more, replaces an earlier one). Streamed words are provisional:
    the returned answer, with its citations checked, is what counts."""
    from docsight.llm.deadline import time_budget

    asked = asked or question
    strategy = choose_strategy(question, mode, settings.answer.mode)
    ports = with_census(question, with_statements(question, ports))
    trace = Trace(on_step)
    answering = _Answering(ports, settings, trace, on_token, question, asked)

    def answer_once(query: str, sources: Sequence[Source], evidence: Evidence) -> Answer:
        return answering.answer(asked if query == question else query, sources, evidence)

    # One budget for every model call of this answer (reranking included), whatever retries.
    with time_budget(settings.llm.budget):
        if strategy == "fast":
            with trace.step("retrieve", question) as step:
                sources = ports.retrieve(question)
                step.pages = list(dict.fromkeys((s.doc_name, s.page) for s in sources))
                step.output = f"{len(sources)} sources on {len(step.pages)} pages"
            with trace.step("answer", asked) as step:
                answer = answer_once(question, sources, answering.weigh(asked, sources))
                step.by = "model" if answer.mode == "llm" else "offline"
        else:
            from docsight.agents.modes import Tools, run

            tools = Tools(
                retrieve=ports.retrieve,
                evidence=answering.weigh,
                answer=answer_once,
                chat=answering.inspector(),
                settings=settings.answer,
                walk=ports.walk,
                images=answering.images if answering.vision is not None else None,
            )
            answer, _ = run(strategy, question, tools, trace)  # type: ignore[arg-type]
            answer.question = question
            answer.strategy = strategy  # type: ignore[assignment]
        if answer.mode == "llm" and settings.answer.verify != "off":
            from docsight.agents.verify import verify

            with trace.step("verify", answer.answer[:200]) as step:
                before = len(answer.warnings)
                answer, by = verify(answer, answering.text_model(), settings.answer.verify)
                step.by = "model" if by == "model" else "offline"
                step.output = f"{len(answer.warnings) - before} unsupported claims"
    answer.trace = trace.steps
    # Whoever wrote the answer, its citations are numbered 1..n in the order it cites them.
    answer = number_citations(answer)
    final = next((s for s in reversed(trace.steps) if s.kind == "answer"), None)
    if final is not None:  # its words as the user sees them, citations renumbered
        final.output = answer.answer.split("\n", 1)[0][:200]
    return make_inert(answer)


def with_statements(question: str, ports: Ports) -> Ports:
    """For a ratio question, retrieval also brings the statement lines the ratio is computed
    from (``agents.ratios``): "inventory turnover" names neither cost of sales nor
    inventories, so a search for the question alone rarely finds both statements."""
    from docsight.agents.ratios import (
        read_ratio,
        statement_sources,
        title_queries,
        unread_lines,
    )

    asked = read_ratio(question)
    if asked is None:
        return ports
    retrieve, walk = ports.retrieve, ports.walk

    def with_lines(query: str) -> list[Source]:
        sources = retrieve(query)
        if query != question:
            return sources
        seen = {(s.doc_name, s.page, s.text) for s in sources}
        merged = list(sources)

        def add(found: Sequence[Source]) -> None:
            for source in found:
                key = (source.doc_name, source.page, source.text)
                if key not in seen:
                    seen.add(key)
                    merged.append(source.model_copy(update={"n": len(merged) + 1}))

        for extra in asked.queries():
            add(retrieve(extra))
        # A statement's page is often found by one of its parts while the line sits in
        # another (a long statement is several chunks, and search ranks the dotted lines low):
        # read around the parts found, whole pages, for the lines still missing.
        missing = unread_lines(asked, merged)
        if missing and walk is not None:
            around = statement_sources(missing, merged)[:2]
            walked = {(s.doc_name, s.page) for s in around}
            add(walk(around) if around else [])
            missing = unread_lines(asked, merged)
            if missing:
                # The searches found notes and segment tables, not the statement: its title
                # still finds the page it heads.
                titled: list[Source] = []
                for query in title_queries(missing):
                    titled.extend(retrieve(query))
                fresh = [
                    s
                    for s in statement_sources(missing, titled)
                    if (s.doc_name, s.page) not in walked
                ]
                add(walk(fresh[:2]) if fresh else [])
        return merged

    return replace(ports, retrieve=with_lines)


def with_census(question: str, ports: Ports) -> Ports:
    """For a question counting a document's parts, retrieval also brings the count, as a
    source of its own: no passage says how many tables a report has."""
    if ports.census is None or read_census(question) is None:
        return ports
    retrieve, census = ports.retrieve, ports.census

    def with_count(query: str) -> list[Source]:
        sources = retrieve(query)
        if query != question or not sources:
            return sources
        counted = census(question, sources)
        if counted is None:
            return sources
        return [*sources, census_source(counted, sources, len(sources) + 1)]

    return replace(ports, retrieve=with_count)


#: Parts listed by name in a census source; the count covers them all.
_CENSUS_LISTED = 40


def _without_vision(question: str, answer: Answer) -> Answer:
    """An answer to a question about what a picture shows, given without a vision model, says
    it was read from text (``question.asks_appearance``)."""
    from docsight.agents.question import asks_appearance

    if answer.answerable and asks_appearance(question):
        answer.warnings.append(
            "the question asks what a picture shows (colours, people, objects); without a "
            "vision model (DOCSIGHT_VLM_MODEL) this answer was read from text only"
        )
    return answer


def census_source(census: Census, sources: Sequence[Source], n: int) -> Source:
    """A census as a source: the count first (what the answer is), then what was counted."""
    doc = next(s for s in sources if s.doc_id == census.doc_id)
    where = doc.doc_name
    if census.scoped and census.pages:
        first, last = census.pages[0] + 1, census.pages[-1] + 1
        pages = f"page {first}" if first == last else f"pages {first}-{last}"
        where = f"{pages} of {where}"
    first = census.items[0][1] if census.items else (census.pages[0] if census.pages else 0)
    text = mention_text(census, where) if census.basis == "mentions" else _counted(census, where)
    return Source(
        n=n,
        rank=1,
        kind="census",
        via="census",
        text=text,
        doc_id=census.doc_id,
        doc_name=doc.doc_name,
        page=first,
    )


def _counted(census: Census, where: str) -> str:
    """A census of parts as text: the count, where and how it was counted, the parts named."""
    basis = {
        "captions": "by their numbered captions",
        "sections": "by the appendices its titles and text name",
        "pages": "by its pages",
        "labels": "by the labels its text names them with",
    }.get(census.basis, "as found on its pages")
    shown = [] if census.basis == "pages" else census.items[:_CENSUS_LISTED]
    listed = ", ".join(
        name if " on page " in name else f"{name} (page {page + 1})" for name, page in shown
    )
    more = ", …" if len(census.items) > _CENSUS_LISTED else ""
    noun = census.noun
    if census.count == 1:
        noun = "appendix" if noun.startswith("append") else noun.removesuffix("s")
    text = f"{census.count} {noun} in {where}, counted {basis}"
    return text + (f": {listed}{more}." if listed else ".")


def make_inert(answer: Answer) -> Answer:
    """The one place every answer passes, whoever wrote it: the words come from untrusted
    documents or from a model that read them, and whatever shows them may render Markdown."""
    from docsight.document.sanitize import inert_markdown

    inert = inert_markdown(answer.answer)
    if inert != answer.answer:
        answer.answer = inert
        answer.warnings.append(
            "the answer held raw HTML, an image or a non-http(s) link; "
            "they were removed or escaped as text"
        )
    for citation in answer.citations:
        if citation.quote:
            citation.quote = inert_markdown(citation.quote)
    if answer.explanation:
        answer.explanation = inert_markdown(answer.explanation)
    return answer


class _Answering:
    """One answer's models and evidence measure, built lazily."""

    def __init__(
        self,
        ports: Ports,
        settings: Settings,
        trace: Trace,
        on_token: Callable[[str, int], None] | None = None,
        question: str = "",
        asked: str = "",
    ) -> None:
        #: The user's question, and what the answerer reads for it (with an image's text).
        self.question, self.asked = question, asked
        self.ports = ports
        self.settings = settings
        self.trace = trace
        self.on_token = on_token
        self.drafts = 0
        self.chat = ports.chat()
        # A vision model sees what the sources show only when there is something to show.
        self.vision = ports.vision() if ports.images is not None else None

    def text_model(self) -> Any:
        """The model that reads text: the language model, else the vision model."""
        return self.chat if self.chat is not None else self.vision

    def inspector(self) -> Any:
        return self.vision if self.vision is not None else self.chat

    def images(self, sources: Sequence[Source]) -> list[tuple[int, bytes]]:
        if self.ports.images is None:
            return []
        return self.ports.images(sources, self.settings.answer.max_images)

    def weigh(self, query: str, sources: Sequence[Source]) -> Evidence:
        """The evidence gate weighs what retrieval found, not the context read around it:
        whole pages and neighbours would cover a question's words by sheer volume."""
        from docsight.agents.evidence import measure
        from docsight.agents.question import absent_names, named_words

        found = [s.text for s in sources if s.via not in ("page", "neighbour")]
        evidence = measure(query, found or [s.text for s in sources], self.ports.encoder())
        # The names are the user's: a question read with its image's text would take every
        # capitalised word of a screenshot for one.
        names = named_words(self.question if query == self.asked else query)
        absent: list[str] = []
        if self.ports.absent is not None and names and sources:
            words = list(dict.fromkeys(w for n in names for w in n.split()))
            absent = absent_names(names, set(self.ports.absent(words, sources)))
        named_pages = self.ports.named_pages(query, sources) if self.ports.named_pages else {}
        return replace(
            evidence,
            missing_pages=self.ports.pages_missing(query, sources),
            named=len(names),
            absent=tuple(absent),
            pages=tuple((doc, page) for doc, pages in named_pages.items() for page in pages),
        )

    def answer(self, question: str, sources: Sequence[Source], evidence: Evidence) -> Answer:
        """By the vision model (with the sources' images), the language model, or offline;
        a model's failure falls back to the cited extractive answer."""
        from docsight.agents.extractive import ExtractiveAnswerer

        offline = ExtractiveAnswerer(self.ports.encoder, self.settings.answer)
        pictures = self.images(sources) if self.vision is not None else []
        model = self.vision if pictures else self.text_model()
        if model is None:
            return _without_vision(question, offline.answer(question, sources, evidence))
        written = self._by_model(model, offline, question, sources, evidence, pictures)
        return written if self.vision is not None else _without_vision(question, written)

    def _by_model(
        self,
        model: Any,
        offline: Any,
        question: str,
        sources: Sequence[Source],
        evidence: Evidence,
        pictures: Sequence[tuple[int, bytes]] = (),
    ) -> Answer:
        from docsight.agents.llm_answerer import LLMAnswerer

        stream = None
        if self.on_token is not None:
            self.drafts += 1
            sink, draft = self.on_token, self.drafts

            def stream(piece: str) -> None:
                sink(piece, draft)

        from docsight.agents.extractive import derived_working

        writer = LLMAnswerer(model, self.settings.answer)
        try:
            return writer.answer(
                question,
                sources,
                evidence,
                images=pictures,
                on_token=stream,
                computed=derived_working(question, sources),
            )
        except LLMError as exc:
            fallback = offline.answer(question, sources, evidence)
            fallback.warnings.append(
                f"the language model failed ({exc.code}: {exc.message}); "
                "this is an extractive answer instead"
            )
            return fallback
        finally:
            # The step that asked for this answer (``answer``, or a mode's ``inspect``/``read``)
            # carries its cost, so a trace's tokens add up to what the models were sent.
            self.trace.charge(writer.tokens)


__all__ = ["MODES", "Ports", "answer_question", "choose_strategy", "make_inert"]
