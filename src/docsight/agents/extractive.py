"""The offline answerer: the answer first, then the sentence, row or cell it comes from.

No model writes anything here. The question's wanted answer type is read first (a count, an
amount, a date, a name, a yes/no, a list, the winner of a comparison; ``agents.question``).
Candidates are the sentences and list items of the sources, the rows of their tables and, for
every table, the cell where the question's row and column terms meet (``agents.tables``).
Each is scored by the IDF-weighted share of the question's words it holds, its embedding
similarity, whether it holds the wanted type and period, and the retrieval rank of its source
(the formula and its constants: ``agents.ranking``);
captions and headings are context, not answers, and a sentence that only restates the question
is dropped. The best candidate's value (``agents.values``) leads the answer, its quote and
citation follow. A calibrated model over several signals (``agents.refusal``) decides whether
the sources answer the question at all; if not, the answer is "Not answerable" with what was
looked for and where the closest evidence was. The result is marked ``mode="extractive"`` so
nobody mistakes it for a generated answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from docsight.agents.answer import Answer, Citation, Source
from docsight.agents.evidence import Evidence, clip_words
from docsight.agents.question import (
    Intent,
    maker_label,
    options,
    prints_code,
    read_intent,
    unseen_appearance,
)
from docsight.agents.ranking import (
    CellFeatures,
    RankWeights,
    SentenceFeatures,
    cell_score,
    load_weights,
    sentence_score,
)
from docsight.agents.refusal import RefusalModel, Signals, load_model
from docsight.agents.tables import CellAnswer, chart_pairs, lookup, parse_tables
from docsight.agents.values import extract_value
from docsight.document.artifacts import description_body, description_content
from docsight.document.captions import CAPTION_RE
from docsight.document.text import content_terms, idf_weights, split_sentences
from docsight.encoders.base import Encoder
from docsight.retrieval.census import mentioned_pages
from docsight.settings import AnswerSettings

_MAX_CANDIDATES = 160
#: Candidates embedded for the dense score: the best by words and rank (embedding is the cost).
_EMBEDDED = 32
#: Words of a candidate its cosine reads: a sentence fits whole; a long row or an OCR run with no
#: sentence breaks would cost the encoder's full 256 tokens each (2.4 s for 48 of them).
_CANDIDATE_WORDS = 48
_MIN_WORDS = 3
# A sentence that announces a list ("... listed below.", "... as follows:") is quoted together
# with the list items that follow it, since that is where the answer is.
_ANNOUNCES = re.compile(r"(?::|\b(?:below|following|as follows|these|include)\.?)\s*$", re.I)
_RUN_ON_TABLE = re.compile(r"(?:\S\s\|\s[^|]*){3}")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•▪◦‣]|\d{1,3}[.)])\s+")
_CONTINUATION = 8
# Where a table or figure stood in the text, "[Table: its caption](#el-…)", or the same without
# its link once made inert: it names the artifact (the artifact itself is its own source), and
# answering "Table" to a "who" question is what quoting it would do.
_PLACEHOLDER = re.compile(
    r"\[(?:Table|Figure|Chart|Picture|Image)\b[^\]\n]{0,300}\](?:\(#el-[0-9a-f]{32}\))?"
)


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


@lru_cache(maxsize=8192)
def _sentences(line: str) -> tuple[str, ...]:
    """A source line's sentences, remembered: the questions of a conversation, a server's users
    or an evaluation read the same sources again, and sentence rules cost more than a lookup."""
    return tuple(split_sentences(line))


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
                line = _PLACEHOLDER.sub(" ", description_body(line))
                if not line.strip():
                    continue
                if line.lstrip().startswith("```"):
                    continue  # fences frame code
                if line.lstrip().startswith("#"):
                    # A heading names a topic and does not answer, unless it is a label with
                    # its figure, as infographics and slides print them ("Employees 1914").
                    label = line.lstrip("# ").strip()
                    if any(ch.isdigit() for ch in label) and len(label.split()) <= 6:
                        pieces.append(label)
                    continue
                if _LIST_ITEM.match(line):
                    pieces.append(line.strip())  # one item, marker kept to recognise it below
                else:
                    pieces.extend(_sentences(line))
        for position, piece in enumerate(pieces):
            # A picture's description frames what it holds ("Chart on page 7, section ...");
            # the frame is where the answer is, not what it is.
            text = description_content(_LIST_ITEM.sub("", piece))
            if not text.strip():
                continue
            if text.rstrip().endswith("?"):
                continue  # a question in the source (an FAQ, a heading) never answers one
            if _RUN_ON_TABLE.search(text) and not text.lstrip().startswith("|"):
                # A table run together into one line (a page image's text): its figures
                # follow the wrong labels. The table's own rows are candidates of their own.
                continue
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


@dataclass
class Scored:
    """A candidate with its score, and what it would answer."""

    source: Source
    text: str
    score: float
    value: str | None = None
    cell: CellAnswer | None = None
    #: What the score was computed from (``agents.ranking``).
    features: SentenceFeatures | CellFeatures | None = None

    @property
    def quote(self) -> str:
        return self.cell.quote if self.cell is not None else self.text

    @property
    def lead(self) -> str | None:
        """What it answers: its value, or its cell's."""
        return self.value or (self.cell.value if self.cell is not None else None)


@dataclass
class Draft:
    """What the sources offer for a question, before deciding to answer."""

    intent: Intent
    ranked: list[Scored]
    signals: Signals
    #: The question's names and years its documents never mention (the refusal says which).
    absent: tuple[str, ...] = ()
    #: The pages the question names, as (document id, page), in the document it is about.
    pages: frozenset[tuple[str, int]] = frozenset()


class ExtractiveAnswerer:
    mode = "extractive"

    def __init__(
        self,
        encoder: Callable[[], Encoder],
        settings: AnswerSettings,
        refusal: RefusalModel | None = None,
        weights: RankWeights | None = None,
    ) -> None:
        self._encoder = encoder
        self.settings = settings
        self.refusal = refusal if refusal is not None else load_model()
        self.weights = weights if weights is not None else load_weights()

    # --- scoring -----------------------------------------------------------------------------

    def draft(self, question: str, sources: Sequence[Source], evidence: Evidence) -> Draft:
        intent = read_intent(question)
        scored, weights = self.scored(question, intent, sources)
        pages = _named_here(scored, evidence.pages)
        if pages:
            # "the date on page 14", "the court on the cover": what that page prints answers,
            # not a better-matching sentence elsewhere (the sort is stable).
            scored.sort(key=lambda s: (s.source.doc_id, s.source.page) not in pages)
        signals = _signals(intent, sources, evidence, scored, weights)
        return Draft(intent, scored, signals, evidence.absent, pages)

    def scored(
        self,
        question: str,
        intent: Intent,
        sources: Sequence[Source],
        *,
        embedded: int = _EMBEDDED,
    ) -> tuple[list[Scored], dict[str, float]]:
        """Every candidate with its features and score, best first, and the IDF weights of the
        whole question's words (instructions included, for the refusal's signals). The
        ``embedded`` best by words and rank get their cosine measured
        (``benchmarks/fit_ranking.py`` measures every one, to refit which ones would be)."""
        pool = candidates(sources)
        # The quote: an announcing sentence restates the question, the items it brings answer.
        terms = [set(content_terms(c.quote)) for c in pool]
        q_terms = set(intent.terms)
        weights = idf_weights(terms or [q_terms], q_terms)
        total = sum(weights.values()) or 1.0
        typed = intent.type in ("count", "number", "date", "entity")
        worded = {t for t in q_terms if not any(ch.isdigit() for ch in t)}
        w = self.weights
        scored: list[Scored] = []
        for i, cand in enumerate(pool):
            value = _list_value(intent, cand) or extract_value(intent, cand.quote)
            new_words = terms[i] - q_terms
            if not value and len(new_words) <= 2 and not any(ch.isdigit() for ch in cand.text):
                continue  # it only restates the question
            # A share is not the amount asked for (see ``values.extract_value``).
            fitting = value and not (intent.numeric and "%" in value and not intent.wants_share)
            if fitting and worded and not (terms[i] & worded):
                # A value beside none of the question's words (only its model number, "T-200")
                # is some other figure about the same thing, not the one asked for.
                fitting = False
            periods = sum(1 for p in intent.periods if p in terms[i])
            features = SentenceFeatures(
                lexical=sum(wt for t, wt in weights.items() if t in terms[i]) / total,
                inverse_rank=1.0 / cand.source.rank,
                typed=typed,
                has_value=bool(fitting),
                period=periods / len(intent.periods) if intent.periods else 0.0,
                caption=bool(CAPTION_RE.match(cand.text)),
            )
            scored.append(
                Scored(
                    source=cand.source,
                    text=cand.quote,
                    score=0.0,
                    value=value,
                    features=features,
                )
            )
        self._add_dense(question, scored, embedded)
        for item in scored:
            assert isinstance(item.features, SentenceFeatures)
            item.score = sentence_score(item.features, w)
        scored.extend(_cells(intent, sources, terms, w))
        scored.sort(key=lambda s: -s.score)
        if intent.codes:
            # A question about "AR01" is answered where AR01 is printed: those candidates first
            # (the sort is stable), whatever else a map's noise of words shares with it.
            scored.sort(key=lambda s: not any(prints_code(s.quote, c) for c in intent.codes))
        maker = maker_label(question) if intent.type == "entity" else None
        if maker is not None:
            # "Who produced ...?" is answered by the "Produced by:" line, first.
            scored.sort(key=lambda s: not (s.value and maker.search(s.quote)))
        whole = set(intent.question_terms) or q_terms
        return scored, weights if whole == q_terms else idf_weights(terms or [whole], whole)

    def _add_dense(self, question: str, scored: list[Scored], limit: int) -> None:
        """The cosine with the question, for the ``limit`` best by words and retrieval rank."""
        if not scored or limit <= 0:
            return
        w = self.weights

        def prior(item: Scored) -> float:
            f = item.features
            assert isinstance(f, SentenceFeatures)
            return w.lexical * f.lexical + w.rank * f.inverse_rank

        order = sorted(range(len(scored)), key=lambda i: -prior(scored[i]))[:limit]
        encoder = self._encoder()
        # A sentence read twice (a hit and the page around it) is encoded once.
        texts = [clip_words(scored[i].text, _CANDIDATE_WORDS) for i in order]
        unique = list(dict.fromkeys(texts))
        vectors = encoder.encode_documents(unique)
        query = encoder.encode_queries([question])[0]
        sims = dict(zip(unique, np.clip(vectors @ query, 0.0, 1.0).tolist(), strict=True))
        for i, text in zip(order, texts, strict=True):
            f = scored[i].features
            assert isinstance(f, SentenceFeatures)
            scored[i].features = replace(f, dense=float(sims[text]))

    # --- answering ---------------------------------------------------------------------------

    def answer(self, question: str, sources: Sequence[Source], evidence: Evidence) -> Answer:
        base = Answer.not_answerable(question, "extractive", sources, evidence.score)
        if not sources:
            return base
        derived = _derived(question, sources)
        if derived is not None:
            return derived.model_copy(update={"confidence": 1.0, "evidence": base.evidence})
        counted = _census(question, sources) or _listed(question, sources)
        if counted is not None:
            return counted.model_copy(update={"confidence": 1.0, "evidence": base.evidence})
        draft = self.draft(question, sources, evidence)
        probability = self.refusal.probability(draft.signals)
        base = base.model_copy(update={"confidence": round(probability, 4)})
        # Offline only text is read: a question about a look that no text states ("How many
        # people with scarves are on page 5?") is not answered from words about something else.
        unseen = unseen_appearance(question, [s.text for s in sources])
        if unseen is not None:
            return base.model_copy(update={"explanation": _explain(draft, unseen=unseen)})
        # Pages the documents do not have cannot hold the answer, whatever the words match;
        # nor can a named page that prints nothing of the wanted kind.
        bare = _bare_pages(draft)
        if not draft.ranked or evidence.missing_pages or bare:
            return base.model_copy(update={"explanation": _explain(draft, bare_pages=bare)})
        if self.refusal.refuses(draft.signals):
            return base.model_copy(update={"explanation": _explain(draft)})
        best = _as_cell(draft.ranked)
        n = best.source.n
        lead = best.lead
        chosen = _chosen_option(question, best.quote, lead)
        if chosen is not None:
            lead = chosen
        if lead and lead.strip() != best.quote.strip():
            caption = best.cell.caption if best.cell is not None else ""
            context = f" ({caption})" if caption else ""
            text = f"{lead} [{n}]\n\n> {best.quote}{context} [{n}]"
        else:
            text = f"{best.quote} [{n}]"
        return base.model_copy(
            update={
                "answer": text,
                "answerable": True,
                "citations": [Citation.from_source(best.source, quote=best.quote)],
            }
        )


def _chosen_option(question: str, quote: str, lead: str | None) -> str | None:
    """Of the choices a question offers ("CA19 or Covina and West Covina"), the one the best
    quote names, when it names exactly one: the answer is the choice, the quote its evidence."""
    offered = options(question)
    if not offered:
        return None
    said = f"{lead or ''} {quote}".lower()
    named = [o for o in offered if re.search(rf"(?<!\w){re.escape(o.lower())}(?!\w)", said)]
    return named[0] if len(named) == 1 else None


def derived_working(question: str, sources: Sequence[Source]) -> str | None:
    """The ratio ``question`` asks for, worked out from the sources' statement lines with its
    citations (what the offline answer says), or ``None``: for a model to check and use."""
    derived = _derived(question, sources)
    return derived.answer if derived is not None else None


def _derived(question: str, sources: Sequence[Source]) -> Answer | None:
    """A ratio the statements' lines give (``agents.ratios``), shown with its working; every line
    it used is cited. ``None`` when the question asks no ratio or a line is missing."""
    from docsight.agents.ratios import compute, read_ratio

    asked = read_ratio(question)
    derived = compute(asked, sources) if asked is not None else None
    if derived is None:
        return None
    used = list({i.reading.source.n: i.reading.source for i in derived.inputs}.values())
    markers = "".join(f"[{s.n}]" for s in used)
    citations = [
        Citation.from_source(
            s,
            quote="; ".join(i.quote() for i in derived.inputs if i.reading.source.n == s.n),
        )
        for s in used
    ]
    return Answer(
        question=question,
        answer=f"{derived.text()} {markers}\n\n{derived.working()}",
        answerable=True,
        mode="extractive",
        sources=list(sources),
        citations=citations,
    )


_ASKS_PAGES = re.compile(r"\b(?:list|which|what|all)\b[^?.]{0,20}\bpages?\b", re.I)


def _census(question: str, sources: Sequence[Source]) -> Answer | None:
    """A count of the document's parts that the map gave (``retrieval.census``), when the
    question asks one: the count, then what was counted, cited. Of a name's mentions, the
    pages they are on when the question asks for pages ("List all pages", "On which pages")."""
    census = next((s for s in sources if s.via == "census"), None)
    if census is None:
        return None
    pages = mentioned_pages(census.text)
    if pages and _ASKS_PAGES.search(question):
        count = ", ".join(pages)  # the pages are the answer, the count is context
    elif read_intent(question).type == "count":
        count = census.text.split(" ", 1)[0]
    else:
        return None
    return _read_off(question, sources, count, census, census.text)


def _listed(question: str, sources: Sequence[Source]) -> Answer | None:
    """Whether an item is in a group the sources list, or how many the group has
    (``agents.membership``), or which item a list holds at a position and how long a numbered
    list is (``agents.enumeration``): the answer, then the list it was read from, cited."""
    from docsight.agents.enumeration import enumerated
    from docsight.agents.membership import membership

    found = membership(question, sources) or enumerated(question, sources)
    if found is None:
        return None
    return _read_off(question, sources, found.answer, found.source, found.quote)


def _read_off(
    question: str, sources: Sequence[Source], lead: str, source: Source, quote: str
) -> Answer:
    """An answer read off one source as a whole (a count, a list's verdict): the answer, then
    the quote it was read from, cited."""
    return Answer(
        question=question,
        answer=f"{lead} [{source.n}]\n\n> {quote} [{source.n}]",
        answerable=True,
        mode="extractive",
        sources=list(sources),
        citations=[Citation.from_source(source, quote=quote)],
    )


def _as_cell(ranked: list[Scored]) -> Scored:
    """The best candidate; when it is a table row whose value a cell of the same table holds,
    that cell, so the quote names the row, the column and the table's caption."""
    best = ranked[0]
    if best.cell is not None or best.source.kind != "table" or not best.value:
        return best
    for other in ranked[1:]:
        if (
            other.cell is not None
            and other.source.n == best.source.n
            and other.cell.value.strip() == best.value.strip()
        ):
            return other
    return best


def _list_value(intent: Intent, candidate: Candidate) -> str | None:
    """For a list question, the items an announcing sentence brings are the answer; for a
    count, how many there are, when the sentence states no number of its own."""
    items = [" ".join(i.split()).rstrip(" .;,") for i in candidate.continuation]
    items = [i for i in items if i]
    if len(items) < 2:
        return None
    if intent.type == "list":
        return "; ".join(items)
    if intent.type == "count" and not any(ch.isdigit() for ch in candidate.text):
        return str(len(items))
    return None


def _cells(
    intent: Intent, sources: Sequence[Source], terms: list[set[str]], w: RankWeights
) -> list[Scored]:
    """The best cell of every table in the sources, scored like the other candidates."""
    out: list[Scored] = []
    seen: set[tuple[str, str, str]] = set()
    asked = set(intent.terms) - set(intent.periods)
    weights_for = idf_weights(terms or [asked], asked)
    # A chart's text read offline, "Direct 62.67% Organic Search 40.12% ...", is a table of
    # labels and figures too (its data, as far as the reading goes) for "which label has the
    # most?"; which figure belongs to which label is too loose a reading for more.
    asks_label = intent.type == "comparison" and "which" in intent.question_words
    for source in sources:
        charts = chart_pairs(source.text) if asks_label else []
        for table in [*parse_tables(source.text), *charts]:
            cell = lookup(intent, table, terms)
            if cell is None or (cell.row, cell.column, cell.value) in seen:
                continue
            seen.add((cell.row, cell.column, cell.value))
            # Row and column both matching is strong evidence, stronger than a sentence with
            # the same words; a comparison or a value column is only as good as its match.
            column = max(0.0, cell.column_match)
            features = CellFeatures(
                strength=min(1.0, cell.row_match + column),
                both=cell.row_match > 0 and column > 0,
                numeric=intent.type in ("count", "number", "comparison"),
                inverse_rank=1.0 / source.rank,
                # A cell answers only for what its table is about: the question's words that
                # neither its row, its column, the table's caption nor its section hold
                # ("revenue" asked of a table of earnings) take their share of the score away.
                # (A comparison's row is its answer, and its words of direction are in no table.)
                coverage=1.0
                if intent.type == "comparison"
                else _coverage(cell, source, weights_for),
            )
            out.append(
                Scored(
                    source=source,
                    text=cell.quote,
                    score=cell_score(features, w),
                    cell=cell,
                    features=features,
                )
            )
    return out


_UNIT_WORDS = (
    ("%", " percentage percent share"),
    ("$", " dollars usd amount"),
    ("€", " euros eur amount"),
    ("£", " pounds gbp amount"),
)


def _coverage(cell: CellAnswer, source: Source, weights: dict[str, float]) -> float:
    """The weighted share of the question's words (periods aside: the column decides those)
    found in the cell's row, column, the table's caption or the source's section path."""
    total = sum(weights.values())
    if not total:
        return 1.0
    where = " ".join([cell.row, cell.column, cell.caption, *source.section_path])
    # A unit the question names in words is there when the cell shows its symbol.
    symbols = f"{cell.value} {cell.column}"
    where += "".join(words for symbol, words in _UNIT_WORDS if symbol in symbols)
    present = set(content_terms(where))
    return sum(w for t, w in weights.items() if t in present) / total


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _signals(
    intent: Intent,
    sources: Sequence[Source],
    evidence: Evidence,
    ranked: list[Scored],
    weights: dict[str, float],
) -> Signals:
    everything = "\n".join(s.text for s in sources)
    present = set(content_terms(everything))
    total = sum(weights.values()) or 1.0
    missing_terms = sum(w for t, w in weights.items() if t not in present) / total
    numbers = {n.replace(",", "") for n in _NUMBER.findall(everything)}
    asked = set(intent.question_numbers)
    missing_numbers = len(asked - numbers) / len(asked) if asked else 0.0
    best = ranked[0] if ranked else None
    runner = ranked[1].score if len(ranked) > 1 else 0.0
    fits = best is not None and (
        best.cell is not None or best.value is not None or intent.type in ("text", "yesno", "list")
    )
    return Signals(
        coverage=evidence.coverage,
        similarity=evidence.similarity,
        missing_terms=missing_terms,
        missing_numbers=missing_numbers,
        missing_pages=float(evidence.missing_pages),
        absent_names=len(evidence.absent) / evidence.named if evidence.named else 0.0,
        absent_years=float(any(w.isdigit() for w in evidence.absent)),
        best=best.score if best else 0.0,
        margin=(best.score - runner) if best else 0.0,
        type_fit=float(fits),
        cell=float(best is not None and best.cell is not None),
    )


#: Answer types a page either prints or does not: a figure, a date, a name, a contact.
_TYPED = ("count", "number", "date", "entity")


def _named_here(
    ranked: Sequence[Scored], pages: Sequence[tuple[str, int]]
) -> frozenset[tuple[str, int]]:
    """The named ``pages`` in the document of the best candidate: asked over a whole collection,
    "the operating income on page 3" means page 3 of the report that prints operating income,
    not page 3 of a slide deck that happens to have one."""
    if not pages or not ranked:
        return frozenset()
    doc = ranked[0].source.doc_id
    return frozenset(p for p in pages if p[0] == doc)


def _typed(draft: Draft, item: Scored) -> bool:
    """Whether ``item`` holds a value of the kind the question wants (a table's cell answers an
    amount or a name, not a phone number or an address)."""
    if item.cell is not None:
        return draft.intent.contact is None
    return bool(item.value)


def _bare_pages(draft: Draft) -> bool:
    """Whether the question names pages ("the fax number on page 13") and wants a typed value,
    and no candidate on those pages holds one: the answer is not where the user says it is,
    and the same value printed on another page answers a different question."""
    if not draft.pages or draft.intent.type not in _TYPED:
        return False
    return not any(
        _typed(draft, s) and (s.source.doc_id, s.source.page) in draft.pages for s in draft.ranked
    )


def _explain(draft: Draft, *, bare_pages: bool = False, unseen: str | None = None) -> str:
    """What was looked for, and where the closest evidence was."""
    wanted = {
        "count": "a count",
        "number": "a number",
        "date": "a date",
        "entity": "a name",
        "yesno": "a yes or no",
        "list": "a list",
        "comparison": "the highest or lowest of a comparison",
        "text": "a statement",
    }[draft.intent.type]
    contact = draft.intent.contact
    if contact is not None:
        wanted = {
            "email": "an email address",
            "phone": "a phone number",
            "url": "a web address",
            "code": "a code",
        }[contact]
    signals = draft.signals
    reasons = []
    if unseen is not None:
        reasons.append(
            f"it asks for {unseen}; offline only the documents' text is read (a vision model, "
            "DOCSIGHT_VLM_MODEL, looks at the pages)"
        )
    if signals.missing_pages:
        reasons.append("the pages it names are not in the document")
    elif bare_pages:
        kind = wanted.split(" ", 1)[1]
        reasons.append(f"the pages it names print no {kind}")
        elsewhere = next((s for s in draft.ranked if _typed(draft, s)), None)
        if elsewhere is not None:
            reasons.append(
                f"the closest {kind} is on page {elsewhere.source.page + 1} "
                f"[{elsewhere.source.n}]: {elsewhere.lead or ''}"
            )
    if signals.missing_numbers:
        reasons.append("numbers or years it names appear in no source")
    if draft.absent:
        named = ", ".join(f"“{w}”" for w in draft.absent[:3])
        reasons.append(f"the documents never mention {named}")
    if signals.missing_terms > 0.3:
        reasons.append("several of its words appear in no source")
    text = f"Looked for {wanted}"
    if reasons:
        text += "; " + "; ".join(reasons)
    if draft.ranked:
        best = draft.ranked[0]
        quote = " ".join(best.quote.split())
        quote = quote if len(quote) <= 160 else quote[:157] + "…"
        text += (
            f". Closest evidence: {best.source.doc_name}, page {best.source.page + 1}"
            f' [{best.source.n}]: "{quote}"'
        )
    return text + "."
