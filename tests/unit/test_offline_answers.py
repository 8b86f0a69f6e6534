"""The offline answerer's parts: answer types, values, tables, refusal, strict scoring."""

from __future__ import annotations

import zlib
from dataclasses import replace

import numpy as np
import pytest

from docsight.agents.answer import Source
from docsight.agents.evidence import Evidence
from docsight.agents.extractive import ExtractiveAnswerer
from docsight.agents.question import named_words, read_intent
from docsight.agents.refusal import RefusalModel, Signals, load_model
from docsight.agents.tables import chart_pairs, lookup, number_value, parse_tables
from docsight.agents.values import extract_value
from docsight.document.text import content_terms
from docsight.evaluation.strict import anls, short_answer, strict_score


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How many figures are in the paper?", "count"),
        ("What percentage of land area was rezoned?", "number"),
        ("What was the revenue in fiscal 2021?", "number"),
        ("When was the policy revised?", "date"),
        ("Who produced the document?", "entity"),
        ("Is the warranty transferable?", "yesno"),
        ("List the areas that PwC supports.", "list"),
        ("Which model performs the best on CLADDER?", "comparison"),
        ("Which region had the lowest sales in Q2?", "comparison"),
        ("What is the email of Laurent Nahmiash?", "entity"),
        ("Describe the audit process.", "text"),
    ],
)
def test_answer_types(question: str, kind: str) -> None:
    assert read_intent(question).type == kind


def test_intent_periods_units_and_contacts() -> None:
    intent = read_intent("What was Nike's revenue in FY2021 and Q3 2020, in millions?")
    assert intent.periods == ("2021", "2020", "q3") and "million" in intent.units
    assert read_intent("What is the highest score?").direction == "max"
    assert read_intent("Which is the least common?").direction == "min"
    assert read_intent("What is the FAX No of INF LLP?").contact == "phone"
    assert read_intent("What is the e-mail of the author?").contact == "email"
    assert read_intent("What is the email id of the author?").contact == "email"


def test_a_duration_is_read_off_its_clock_face() -> None:
    asked = read_intent("What is the average session duration for desktop?")
    row = "Desktop Sessions 10,505,727 Bounce Rate 38.10% Avg. Session Duration 00:04:14"
    assert asked.wants_duration and extract_value(asked, row) == "00:04:14"
    # Without a clock face the number rules apply; a count never reads one.
    assert extract_value(asked, "Sessions last 95 seconds on average") == "95 seconds"
    count = read_intent("How many sessions were there at 10:30?")
    assert extract_value(count, "At 10:30 there were 1,204 sessions") == "1,204 sessions"


def test_a_duration_in_a_table_read_row_by_row_is_the_named_rows() -> None:
    asked = read_intent("What is the average session duration for desktop?")
    # A chart's text: the header, the totals, then one row per device, each label first.
    table = (
        "Device Sessions Avg. Session Duration 19,149,315 00:03:51 Avg for View: 00:03:51 "
        "mobile 2,872,777 00:02:04 desktop 15,390,335 (80.37%) 00:04:14 tablet 886,203 00:02:53"
    )
    assert extract_value(asked, table) == "00:04:14"
    # Every question word in the header: the clock nearest to them.
    assert extract_value(asked, "Avg. Session Duration 00:03:51 mobile 00:02:04") == "00:03:51"


def test_values_of_each_type() -> None:
    count = read_intent("How many employees does PwC Assurance have?")
    assert extract_value(count, "Offices 20 and then Employees 1914") == "1914"
    assert extract_value(count, "We employ 1,914 employees in 20 offices") == "1,914 employees"
    amount = read_intent("What percentage of land was rezoned in 2007?")
    assert extract_value(amount, "In 2007 the City rezoned almost 18% of its lot area") == "18%"
    date = read_intent("When was the plan revised?")
    assert extract_value(date, "The plan was revised on May 12, 2016 by the board") == (
        "May 12, 2016"
    )
    who = read_intent("What is the name of the governor?")
    assert extract_value(who, "Rick Scott GOVERNOR Celeste Philip SURGEON GENERAL") == (
        "Rick Scott"
    )
    mail = read_intent("What is the email of Mtre Laurent Nahmiash?")
    text = "Mtre Marianne Ignacz Mtre Laurent Nahmiash mignacz@inf.com lnahmiash@inf.com"
    assert extract_value(mail, text) == "lnahmiash@inf.com"
    assert extract_value(count, "No numbers here at all.") is None


TABLE = """Table 2: Rated pressure by model
| Model | Rated pressure (kPa) | Flow rate 2021 | Flow rate 2020 |
| --- | --- | --- | --- |
| K-20 | 250 | 12 | 11 |
| K-40 | 380 | 18 | 16 |
| K-60 | 510 | 25 | 24 |"""


def test_tables_are_parsed_with_their_caption_and_folded_headers() -> None:
    (table,) = parse_tables(TABLE)
    assert table.caption == "Table 2: Rated pressure by model"
    assert table.columns[1] == "Rated pressure (kPa)" and len(table.rows) == 3
    (two_row,) = parse_tables(
        "| | Land area | Capacity |\n| --- | --- | --- |\n| | rezoned | 2007 |\n"
        "| Bronx | 18.4% | 290,000 |"
    )
    assert two_row.columns == ["", "Land area rezoned", "Capacity 2007"]
    # A title spanning the table over the real column names (a slide's table): the names are
    # the header, the title their prefix; a first body row of labels and numbers stays a row.
    (titled,) = parse_tables(
        "| Structured Markup | Structured Markup | | |\n| --- | --- | --- | --- |\n"
        "| Data Type | Source | Items | Errors |\n| hatom | microformats.org | 137 | 137 |"
    )
    assert titled.columns[2:] == ["Items", "Errors"] and titled.rows[0][0] == "hatom"
    # A header printed on three lines: a title split over the cells, a row of words, and the
    # names under an empty first cell; a first row of words over data stays a row.
    (three,) = parse_tables(
        "| Phone adoption | among | seniors |\n| --- | --- | --- |\n"
        "| % of seniors | who own a … | |\n| | Cell phone | Smartphone |\n"
        "| Total for all 65+ | 77% | 18% |"
    )
    assert three.columns[2] == "seniors Smartphone" and three.rows == [
        ["Total for all 65+", "77%", "18%"]
    ]
    (kept,) = parse_tables(
        "| Model | Source | Notes |\n| --- | --- | --- |\n| K-20 | lab | new |\n"
        "| K-40 | field | 12 |"
    )
    assert kept.rows[0] == ["K-20", "lab", "new"]
    (plain,) = parse_tables("| Model | Source | Items |\n| --- | --- | --- |\n| K-20 | lab | 12 |")
    assert plain.columns == ["Model", "Source", "Items"] and plain.rows == [["K-20", "lab", "12"]]
    assert number_value("(1,234.5)") == -1234.5 and number_value("18.4%") == 18.4


def _corpus(*texts: str) -> list[set[str]]:
    return [set(content_terms(t)) for t in texts]


def test_cell_lookup_meets_row_and_column() -> None:
    (table,) = parse_tables(TABLE)
    corpus = _corpus(TABLE, "pumps and seals", "maintenance schedule")
    cell = lookup(read_intent("What is the rated pressure of the K-40?"), table, corpus)
    assert cell is not None and (cell.row, cell.value) == ("K-40", "380")
    assert cell.quote == "K-40 — Rated pressure (kPa): 380"
    flow = lookup(read_intent("What was the flow rate of the K-60 in 2020?"), table, corpus)
    assert flow is not None and flow.value == "24"  # the 2020 column, not 2021's
    top = lookup(read_intent("Which model has the highest rated pressure?"), table, corpus)
    assert top is not None and top.value == "K-60"
    low = lookup(read_intent("Which model has the lowest flow rate in 2021?"), table, corpus)
    assert low is not None and low.value == "K-20"
    assert lookup(read_intent("Who wrote the manual?"), table, corpus) is None


def test_strict_scoring_takes_the_answer_line() -> None:
    response = "380 kPa [1]\n\n> K-40 — Rated pressure (kPa): 380 (Table 2) [1]"
    assert short_answer(response) == "380 kPa"
    assert strict_score(response, "380", "Int") == 1.0
    assert strict_score("The K-40 is rated 380 kPa [1]", "380", "Int") == 0.0  # first number: 40
    assert strict_score("18.4% [2]", "18.40%", "Float") == 1.0
    assert strict_score("0.184", "18.4%", "Float") == 1.0  # a fraction of a percentage
    assert strict_score("Florida Department of Health [1]", "Florida Dept of Health", "Str") > 0.5
    assert strict_score("lnahmiash@inf.com", "lnahmiash@inf.com", "Str") == 1.0
    assert strict_score("lnahmiash@inf.co", "lnahmiash@inf.com", "Str") == 0.0  # exact needed
    assert strict_score("UK, Israel and China [1]", "['China', 'UK', 'Israel']", "List") == 1.0
    assert strict_score("UK and Israel [1]", "['China', 'UK', 'Israel']", "List") == 0.0
    assert strict_score("Not answerable", "Not answerable", "None") == 1.0
    assert strict_score("Not answerable", "380", "Int") == 0.0
    assert anls("abc", "xyz") == 0.0 and anls("abcd", "abcd") == 1.0


def test_shipped_refusal_model_loads_and_is_monotone_in_evidence() -> None:
    model = load_model()
    assert len(model.weights) == len(Signals.names())
    strong = Signals(
        coverage=0.9, similarity=0.8, missing_terms=0.0, missing_numbers=0.0,
        missing_pages=0.0, absent_names=0.0, absent_years=0.0, best=0.9, margin=0.3,
        type_fit=1.0, cell=1.0,
    )  # fmt: skip
    weak = replace(
        strong, coverage=0.1, similarity=0.1, missing_terms=0.9, missing_numbers=1.0,
        missing_pages=1.0, best=0.1, margin=0.0, type_fit=0.0, cell=0.0,
    )  # fmt: skip
    assert model.probability(strong) > model.probability(weak)
    # A name the documents never mention lowers it, whatever else the sources hold.
    unknown = replace(strong, absent_names=1.0, absent_years=1.0)
    assert model.probability(unknown) < model.probability(strong)


@pytest.mark.parametrize(
    ("question", "names"),
    [
        ("What is on the left side of the Thinkpad's camera?", ("thinkpad",)),
        ("What is the FY2019 fixed asset turnover for Activision Blizzard?",
         ("2019", "activision blizzard")),
        ("How many adults in the survey of May 2022 approve?", ("may", "2022")),
        ("Which areas lie on the English Channel coast?", ("english channel",)),
        ("How many people are in the HAQ Executive Leadership?", ("haq executive leadership",)),
        ("What is the address of the Florida Department of Health?",
         ("florida department of health",)),
        # A question in capitals: only its years are names.
        ("WHAT IS THE 2ND OBJECTIVE OF REGULATORY EFFICIENCY IN 2019?", ("2019",)),
        # A format to answer in is not a name; neither is the question's first word.
        ("Format the date on page 14 as YYYY-MM-DD.", ()),
        ("Describe the audit process.", ()),
    ],
)  # fmt: skip
def test_named_words(question: str, names: tuple[str, ...]) -> None:
    assert named_words(question) == names


def test_a_name_of_several_words_is_absent_only_when_all_of_them_are() -> None:
    from docsight.agents.question import absent_names

    names = ["english channel", "haq executive leadership", "department of science", "2022"]
    absent = {"english", "haq", "department", "science", "2022", "of"}
    assert absent_names(names, absent) == ["department of science", "2022"]


def test_a_name_with_a_code_the_document_never_prints_is_absent() -> None:
    from docsight.agents.question import absent_names, named_words

    names = named_words("What is the market name for EPS Code AR03?")
    assert names == ("eps code ar03",)
    # "eps" and "code" are printed, "ar03" is not: the market is not in this document.
    assert absent_names(names, {"ar03"}) == ["eps code ar03"]
    # The code is printed: the name is mentioned, even though "eps" is not.
    assert absent_names(names, {"eps"}) == []
    # A year is not a code, and a word of letters only is matched loosely as before.
    assert absent_names(["fiscal 2021 review"], {"2021"}) == []


def test_words_absent_probes_the_full_text_index_per_word_part() -> None:
    from docsight.retrieval.locate import words_absent

    class Store:
        def __init__(self) -> None:
            self.probes: list[str] = []

        def text_search(self, query: str, limit: int, doc_ids: object = None) -> list[object]:
            self.probes.append(query)
            return [object()] if query in {"activision", "blizzard", "2019"} else []

    store = Store()
    words = ["activision", "thinkpad", "u.s", "2022", "activision-blizzard"]
    assert words_absent(words, store, ["d1"]) == ["thinkpad", "2022"]  # type: ignore[arg-type]
    assert store.probes.count("activision") == 1  # each part probed once
    assert words_absent(words, store, []) == []  # type: ignore[arg-type]


def _source(n: int, text: str, kind: str = "text") -> Source:
    return Source(
        n=n, doc_id="d" * 32, doc_name="manual.pdf", page=n - 1, chunk_id=f"c{n}", kind=kind,
        text=text,
    )  # fmt: skip


class _Encoder:
    """Bag-of-words vectors: enough to rank candidates without the model."""

    dim = 64
    fingerprint = "test"

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for term in content_terms(text):
            v[zlib.crc32(term.encode()) % self.dim] += 1.0  # stable across processes
        return v / max(float(np.linalg.norm(v)), 1e-9)

    def encode_documents(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim))

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self.encode_documents(texts)


def _answering() -> ExtractiveAnswerer:
    """An offline answerer whose refusal model always answers, so the tests see its choice."""
    from docsight.settings import AnswerSettings

    always = RefusalModel(weights=(0.0,) * len(Signals.names()), bias=10.0, threshold=0.5)
    return ExtractiveAnswerer(lambda: _Encoder(), AnswerSettings(), refusal=always)  # type: ignore[arg-type,return-value]


def test_answer_leads_with_the_value_then_quotes_and_cites() -> None:

    answerer = _answering()
    sources = [
        _source(1, "The K-40 pump must never run above its rated pressure."),
        _source(2, TABLE, kind="table"),
    ]
    answer = answerer.answer(
        "What is the rated pressure of the K-40 pump?", sources, Evidence(0.8, 0.8)
    )
    assert answer.answerable and answer.answer.startswith("380 [2]")
    assert (
        "K-40 — Rated pressure (kPa): 380 (Table 2: Rated pressure by model) [2]" in answer.answer
    )
    assert [c.n for c in answer.citations] == [2] and answer.confidence is not None


def test_refusal_says_what_was_looked_for_and_where() -> None:
    from docsight.settings import AnswerSettings

    never = RefusalModel(weights=(0.0,) * len(Signals.names()), bias=-10.0, threshold=0.5)
    answerer = ExtractiveAnswerer(lambda: _Encoder(), AnswerSettings(), refusal=never)  # type: ignore[arg-type,return-value]
    sources = [_source(1, "The K-40 pump must never run above its rated pressure.")]
    answer = answerer.answer(
        "How many pumps are shown on page 40?", sources, Evidence(0.2, 0.2, missing_pages=True)
    )
    assert not answer.answerable and answer.answer == "Not answerable"
    assert answer.explanation is not None
    assert answer.explanation.startswith("Looked for a count")
    assert "pages it names are not in the document" in answer.explanation
    assert "manual.pdf, page 1 [1]" in answer.explanation


def test_the_shipped_model_refuses_a_question_about_a_name_never_mentioned() -> None:
    from docsight.settings import AnswerSettings

    answerer = ExtractiveAnswerer(lambda: _Encoder(), AnswerSettings())  # type: ignore[arg-type,return-value]
    sources = [_source(1, "The camera sits at the top of the display; its light glows green.")]
    question = "What is on the left side of the Thinkpad's camera?"
    answered = answerer.answer(question, sources, Evidence(0.7, 0.7))
    refused = answerer.answer(question, sources, Evidence(0.7, 0.7, named=1, absent=("thinkpad",)))
    assert answered.answerable
    assert not refused.answerable and refused.explanation is not None
    assert "the documents never mention “thinkpad”" in refused.explanation


def test_a_row_value_is_the_one_under_the_asked_label() -> None:
    intent = read_intent("What is the rated pressure of the K-40?")
    assert intent.type == "number"
    row = "Model: K-40; Rated pressure: 380 kPa; Flow rate: 18 l/min"
    assert extract_value(intent, row) == "380 kPa"
    # Outside a labelled row the nearest value to the question's words still wins.
    assert (
        extract_value(intent, "Its rated pressure is 380 kPa at a flow of 18 l/min.") == "380 kPa"
    )


def test_without_a_period_asked_the_latest_year_answers() -> None:
    (table,) = parse_tables(
        "| Metric | 2023 | 2024 |\n| --- | --- | --- |\n"
        "| Revenue | 412.0 | 468.5 |\n| Employees at year end | 1,840 | 2,015 |"
    )
    latest = lookup(read_intent("How many employees are there at year end?"), table, [])
    assert latest is not None and (latest.value, latest.column) == ("2,015", "2024")
    asked = lookup(read_intent("How many employees were there at the end of 2023?"), table, [])
    assert asked is not None and asked.value == "1,840"


def test_a_picture_descriptions_frame_is_never_the_answer() -> None:
    from docsight.document.artifacts import description_content

    assert description_content("Chart on page 7, section Codes > Arkansas (AR).") == ""
    assert description_content("Text in it: AR01 Little Rock.") == "AR01 Little Rock."
    answerer = _answering()
    description = (
        "Chart on page 7, section EPS Geographic Market Name Code > Arkansas (AR). "
        "Text in it: EPS code AR01 is the geographic market Little Rock. "
        "Context: Markets are listed by state."
    )
    answer = answerer.answer(
        "What's the geographic market name for EPS Code AR01?",
        [_source(1, description, kind="figure")],
        Evidence(0.8, 0.8),
    )
    assert answer.answerable and "Little Rock" in answer.answer
    assert "Chart on page" not in answer.answer and "Text in it" not in answer.answer


def test_a_list_question_is_answered_by_the_items_a_sentence_announces() -> None:

    answerer = _answering()
    announced = (
        "The service team supports these regions:\n- Northern Europe\n- Iberia\n- Baltic states"
    )
    sources = [_source(1, "Regions vary by season."), _source(2, announced)]
    listed = answerer.answer(
        "List the regions the service team supports.", sources, Evidence(0.8, 0.8)
    )
    first = listed.answer.split("\n", 1)[0]
    assert first == "Northern Europe; Iberia; Baltic states [2]"
    assert (
        strict_score(listed.answer, "['Iberia', 'Northern Europe', 'Baltic states']", "List") == 1.0
    )
    # The quote the items come from follows the answer.
    assert "> The service team supports these regions:" in listed.answer
    counted = answerer.answer(
        "How many regions does the service team support?", sources, Evidence(0.8, 0.8)
    )
    assert counted.answer.startswith("3 [2]")
    # A sentence that states its own number is quoted for it, not counted over.
    stated = [_source(1, "The team supports 4 regions, listed below:\n- North\n- South\n- East")]
    own = answerer.answer("How many regions does the team support?", stated, Evidence(0.8, 0.8))
    assert own.answer.startswith("4 regions [1]")


def test_a_cell_answers_only_for_what_its_table_is_about() -> None:

    answerer = _answering()
    earnings = (
        "| (Dollars in millions) | FISCAL 2021 |\n| --- | --- |\n"
        "| North America | $ 5,089 |\n| TOTAL NORTHWIND BRAND | $ 8,641 |\n| Corporate | (2,261) |"
    )
    sentence = (
        "In fiscal 2021, Northwind achieved record revenues which increased 19% "
        "to $44.5 billion compared with fiscal 2020."
    )
    sources = [_source(1, sentence), _source(2, earnings, kind="table")]
    answer = answerer.answer(
        "What was Northwind's revenue in fiscal 2021?", sources, Evidence(0.8, 0.8)
    )
    # Revenue is no word of the earnings table; the sentence that states it answers, with the
    # amount rather than the growth rate or the year next to it.
    assert answer.answer.startswith("$44.5 billion [1]"), answer.answer


def test_an_amount_is_not_a_share_nor_a_year() -> None:
    revenue = read_intent("What was Northwind's revenue in fiscal 2021?")
    assert revenue.type == "number" and not revenue.wants_share
    text = "Revenues increased 19% to $44.5 billion in fiscal 2021, from fiscal 2020."
    assert extract_value(revenue, text) == "$44.5 billion"
    growth = read_intent("By what percentage did revenue grow in fiscal 2021?")
    assert growth.wants_share and extract_value(growth, text) == "19%"
    assert extract_value(revenue, "Revenue was higher in fiscal 2020.") is None


def test_a_description_frame_is_cut_whole_even_when_its_section_has_full_stops() -> None:
    from docsight.document.artifacts import description_body

    line = (
        "Chart on page 35, section PART II > ITEM 7. MANAGEMENT'S DISCUSSION > REVENUE. "
        "Figure 3: Revenue by region. Text in it: North 5,089. Context: Regions grew."
    )
    assert description_body(line) == "Text in it: North 5,089. Context: Regions grew."
    assert description_body("Picture on page 2, section A. B.") == ""
    assert description_body("Plain text stays.") == "Plain text stays."


def test_which_row_is_longest_or_latest_compares_durations_and_dates_by_their_units() -> None:
    (table,) = parse_tables(
        "Leadership programmes\n"
        "| Programme | Duration | Closes |\n| --- | --- | --- |\n"
        "| Leaders in Education | 7 months | 19 Mar 2024 |\n"
        "| Middle Leaders | 17 weeks | 2 May 2024 |\n"
        "| Bridges | 2 weeks | 28 Feb 2024 |"
    )
    # 17 weeks is the larger number and the shorter time: 7 months is about 213 days.
    longest = lookup(read_intent("Which programme has the longest duration?"), table, [])
    assert longest is not None and longest.value == "Leaders in Education"
    shortest = lookup(read_intent("Which programme has the shortest duration?"), table, [])
    assert shortest is not None and shortest.value == "Bridges"
    # Dates are compared as dates (19 Mar < 2 May), not by their leading day numbers.
    latest = lookup(read_intent("Which programme closes latest?"), table, [])
    assert latest is not None and latest.value == "Middle Leaders"
    earliest = lookup(read_intent("Which programme closes earliest?"), table, [])
    assert earliest is not None and earliest.value == "Bridges"


def test_ambiguous_or_mixed_cells_are_not_compared_as_dates() -> None:
    from docsight.agents.tables import _date, _duration

    assert _date("03/04/2024") is None  # day-first or month-first: not guessed
    assert _date("March 19, 2024") == _date("19 March 2024") == 20240319
    assert _date("31 Foo 2024") is None and _date("Mayor 2024") is None
    assert _date("Sept. 2023") == 20230901
    assert _duration("2-3 years") == 3 * 365.25
    assert _duration("about 18 months") is not None and _duration("several weeks") is None


def test_a_list_written_inline_after_an_introducer_is_the_answer() -> None:
    from docsight.agents.values import inline_list

    sentence = (
        "We focus our product offerings in five key categories: Running, Basketball, "
        "Football (Soccer, Futsal), Training and Sportswear (lifestyle products)."
    )
    assert inline_list(sentence) == (
        "Running; Basketball; Football (Soccer, Futsal); Training; Sportswear (lifestyle products)"
    )
    # Prose after a colon is not a list, nor are two long clauses joined by "and".
    assert inline_list("Results: our method beats every baseline on all four datasets.") is None
    assert (
        inline_list("Note: the survey ran for a month and the panel was reweighted by age.") is None
    )
    assert inline_list("Spare parts include gaskets and seals.") == "gaskets; seals"

    answerer = _answering()
    answer = answerer.answer(
        "What are the key categories of the product offerings?",
        [_source(1, "Sales grew in every region."), _source(2, sentence.replace(", Futsal", ""))],
        Evidence(0.8, 0.8),
    )
    gold = "['Running', 'Basketball', 'Football (Soccer)', 'Training', 'Sportswear (lifestyle)']"
    assert answer.answer.startswith("Running; Basketball; Football (Soccer); Training; ")
    assert strict_score(answer.answer, gold, "List") > 0.5


def test_ranking_weights_default_load_and_decide_the_best_candidate(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from docsight.agents.ranking import SCHEMA_VERSION, RankWeights, load_weights
    from docsight.errors import ConfigurationError
    from docsight.settings import AnswerSettings

    assert load_weights(tmp_path / "absent.json") == RankWeights()
    good = tmp_path / "w.json"
    weights = {**RankWeights().as_dict(), "rank": 0.4}
    good.write_text(json.dumps({"schema_version": SCHEMA_VERSION, "weights": weights}))
    assert load_weights(good).rank == 0.4
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps({"schema_version": 0, "weights": {"lexical": 1.0}}))
    with pytest.raises(ConfigurationError, match=r"refit with benchmarks/fit_ranking\.py"):
        load_weights(stale)

    always = RefusalModel(weights=(0.0,) * len(Signals.names()), bias=10.0, threshold=0.5)
    sources = [
        _source(1, "The pump was serviced in 2019 by the vendor."),
        _source(2, "The north pump was serviced in 2021 by the city's own crew."),
    ]
    question = "When was the north pump serviced by the city's crew?"

    def first(w: RankWeights) -> str:
        answerer = ExtractiveAnswerer(
            lambda: _Encoder(),  # type: ignore[arg-type,return-value]
            AnswerSettings(),
            refusal=always,
            weights=w,
        )
        return answerer.answer(question, sources, Evidence(0.8, 0.8)).answer.split("\n")[0]

    # By its words the second source answers; weighing only the retrieval rank, the first.
    assert first(RankWeights()) == "2021 [2]"
    assert first(RankWeights(lexical=0.0, dense=0.0, rank=1.0)) == "2019 [1]"


def test_a_question_offering_choices_is_answered_with_the_choice_the_evidence_names() -> None:
    from docsight.agents.question import options

    question = "Which of the two pumps, the K-40 or the K-60, runs at the higher pressure?"
    assert options(question) == ("K-40", "K-60")
    assert options("Which is larger: Bronx or Queens or Brooklyn?") == (
        "Bronx",
        "Queens",
        "Brooklyn",
    )
    assert options("On the left or right side of the screen, what is shown?") == ()
    # Choices the question quotes are offered too, unless a yes/no reading answers them.
    told = "On which side is the total shown? Answer 'left' or 'right'."
    assert options(told) == ("left", "right")
    assert options("Is CA03 in the Bay Area? Answer 'yes' or 'no'.") == ()
    answerer = _answering()
    sources = [_source(1, "Of all our pumps, the K-60 runs at the highest pressure, 510 kPa.")]
    answer = answerer.answer(question, sources, Evidence(0.8, 0.8))
    assert answer.answer.startswith("K-60 [1]\n\n> ")
    # A quote naming both choices does not say which: it is quoted as it is.
    both = [_source(1, "The K-60 runs at a higher pressure than the K-40 does, 510 kPa.")]
    answer = answerer.answer(question, both, Evidence(0.8, 0.8))
    assert not answer.answer.startswith(("K-60 [1]", "K-40 [1]"))
    side = [_source(1, "As you work, look to the right of the screen for the running total.")]
    assert answerer.answer(told, side, Evidence(0.8, 0.8)).answer.startswith("right [1]\n\n> ")


CHART = (
    "Chart on page 16, section Audit. Text in it: Conversion Visualizer. Select up to four "
    "channels. % of total Channel conversions Direct 62.67% Organic Search 40.12% 18.49% "
    "Referral: 5.34% Social Network 0.48% Other Advertising 0.00% The overlap areas are "
    "approximations. Context: Pull the data."
)


def test_a_charts_text_of_labels_and_figures_is_a_table() -> None:
    (table,) = chart_pairs(CHART)
    assert table.rows[:3] == [
        ["Direct", "62.67%"],
        ["Organic Search", "40.12%"],
        ["Referral", "5.34%"],
    ]
    # The unlabelled 18.49% is noise, and the words before the first figure name the column.
    assert len(table.rows) == 5 and table.columns[1].endswith("% of total Channel conversions")
    most = lookup(read_intent("Which channel led to the most conversions?"), table, [])
    least = lookup(read_intent("Which channel had the fewest conversions?"), table, [])
    assert most is not None and most.value == "Direct"
    assert least is not None and least.value == "Other Advertising"


def test_measurements_in_prose_and_short_readings_are_no_chart_table() -> None:
    prose = (
        "Chart on page 2. Text in it: Buddy Scheme 10 hours Ambassador Scheme 12 hours "
        "Seminars 4 hours."
    )
    assert chart_pairs(prose) == []
    assert chart_pairs("Chart on page 2. Text in it: Direct 62% Referral 5%. Context: x.") == []
    assert chart_pairs("Direct 62% Organic 40% Referral 5% Social 1%") == []  # not a chart's text


def test_a_which_question_over_a_charts_text_answers_with_the_label() -> None:

    answerer = _answering()
    sources = [
        _source(1, "Conversions are tracked for every channel of the site."),
        _source(2, CHART, kind="figure"),
    ]
    answer = answerer.answer(
        "According to the conversion visualizer, which channel led to the most conversions?",
        sources,
        Evidence(0.6, 0.6),
    )
    assert answer.answer.startswith("Direct [2]")


def test_the_one_item_of_an_announced_list_that_a_question_asks_for() -> None:
    from docsight.agents.values import listed_item

    text = (
        "We identify the following six subskills: 1 causal graph extraction; 2 query type "
        "interpretation; 3 symbolic formalization of the query; 4 semantic parsing to compile "
        "the available data; 5 estimand derivation; and 6 arithmetic calculation to solve the "
        "estimand, as in the boxes of Figure 1."
    )
    asked = read_intent("What subskill does we need to collect the available data?")
    assert extract_value(asked, text) == "semantic parsing"
    assert listed_item(read_intent("Which subskill solves the estimand?"), text) == (
        "arithmetic calculation"
    )
    # The list must be of what the question names, and one item must match best.
    assert listed_item(read_intent("Which method compiles the available data?"), text) is None
    assert listed_item(read_intent("Which subskill is about the query?"), text) is None
    # Items set off by commas are as often a sentence's clauses: not read as a list here.
    assert listed_item(asked, "Three subskills: parsing, data collection, arithmetic.") is None


def test_offline_a_picture_only_question_is_refused_with_the_reason() -> None:
    from docsight.agents.question import unseen_appearance

    texts = ["The K-40 housing is painted red.", "Staff at the launch event on page 5."]
    # Looks no text prints cannot be read from text.
    assert unseen_appearance("How many people with a scarf are there on page 5?", texts)
    assert "“yellow”" in (unseen_appearance("Which words are yellow?", texts) or "")
    # A count naming no look is left to the answerer (a caption may state it).
    assert unseen_appearance("How many people are in the photo on page 5?", texts) is None
    # A look a text states can be read; a question about no picture is left alone.
    assert unseen_appearance("What colour is the K-40 housing, red or blue?", texts) is None
    assert unseen_appearance("What is the rated pressure of the K-40?", texts) is None
    # A colour counts when a sentence gives it to what the question names, not elsewhere.
    assert unseen_appearance("What colour is the K-40 housing?", texts) is None
    assert unseen_appearance("What is the colour of the bike on page 2?", texts) is not None

    answerer = _answering()
    sources = [_source(1, "Staff at the launch event: 12 engineers and 7 years of work.")]
    refused = answerer.answer(
        "How many people are wearing glasses in the photo on page 1?", sources, Evidence(0.8, 0.8)
    )
    assert not refused.answerable and refused.answer == "Not answerable"
    assert "“glasses”, “wearing”, which only a picture would show" in refused.explanation
    assert "DOCSIGHT_VLM_MODEL" in refused.explanation
    stated = answerer.answer(
        "What colour is the K-40 housing?",
        [_source(1, "The K-40 housing is painted red.")],
        Evidence(0.8, 0.8),
    )
    assert stated.answerable


def test_a_dates_year_is_never_a_count() -> None:
    asked = read_intent(
        "How many adults in the survey conducted April 25 - May 1, 2018 rated it poor?"
    )
    # "1," before 2018 repeats the question's own number: no label, and a date's year anyway.
    assert extract_value(asked, "Survey of U.S. adults conducted April 25-May 1, 2018.") is None
    tracked = read_intent("How many seniors go online in the July 18-September 30, 2013 survey?")
    line = "Internet Project July 18-September 30, 2013 tracking survey of 6,010 adults"
    assert extract_value(tracked, line) == "6,010 adults"


def test_a_figure_with_its_unit_is_a_numeric_cell() -> None:
    (table,) = parse_tables(
        "| Property | Value |\n| --- | --- |\n| Operating range | -40 to 125 °C |\n"
        "| Accuracy | ±0.1 °C |\n| Battery life | 18 months at a 5-minute interval |"
    )
    cell = lookup(read_intent("What is the accuracy of the T-200?"), table, [])
    assert cell is not None and (cell.row, cell.value) == ("Accuracy", "±0.1 °C")
    life = lookup(read_intent("How long is the battery life?"), table, [])
    assert life is not None and life.value.startswith("18 months")


def test_who_made_a_document_is_read_off_its_made_by_label() -> None:
    from docsight.agents.question import maker_label

    assert maker_label("What is the name of the company that created this deck?") is not None
    assert maker_label("Who wrote the foreword?").search("Written by: Ann Lee") is not None  # type: ignore[union-attr]
    assert maker_label("Who won the cup in 2019?") is None
    label = maker_label("Who produced the plan?")
    assert label is not None and label.search("PRODUCED BY: Harbor Water Authority")
    assert not label.search("it was produced by the committee")  # a name starts with a capital
    answerer = _answering()
    sources = [
        _source(1, "The plan was revised in 2016 by the Planning Unit of the division."),
        _source(2, "Produced by: Harbor Water Authority, 12 Quay Street, Portsmouth"),
    ]
    question = "Who produced the plan that was revised in 2016?"
    answer = answerer.answer(question, sources, Evidence(0.8, 0.8))
    assert answer.answer.startswith("Harbor Water Authority [2]")
    # Without such a label, the best-matching sentence answers as before.
    answer = answerer.answer(question, sources[:1], Evidence(0.8, 0.8))
    assert "> The plan was revised in 2016" in answer.answer


def test_a_figure_beside_none_of_the_questions_words_does_not_answer_it() -> None:
    answerer = _answering()
    sources = [
        # Only the model number is shared with the question: the -40 is another figure.
        _source(1, "The T-200 records temperatures from -40 to 125 °C in every cold room."),
        _source(2, "Property: Accuracy; Value: ±0.1 °C"),
    ]
    question = "What is the rated accuracy of the T-200?"
    answer = answerer.answer(question, sources, Evidence(0.8, 0.8))
    # The tolerance sign stays with its figure.
    assert answer.answer.startswith("±0.1 °C [2]")
