"""Members of a listed group: "is X part of Y?" and "how many are listed under Y?"."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from docsight.agents.answer import Source
from docsight.agents.evidence import Evidence
from docsight.agents.extractive import ExtractiveAnswerer
from docsight.agents.membership import group_lists, membership
from docsight.agents.question import read_intent
from docsight.agents.refusal import RefusalModel, Signals
from docsight.agents.values import extract_value
from docsight.document.text import content_terms
from docsight.settings import AnswerSettings

BAY = "\n".join(
    f"{n}. {name} CA{n:02d}"
    for n, name in enumerate(
        ["Marin", "San Francisco", "Contra Costa", "Oakland", "Alameda", "San Mateo"], start=4
    )
)
# A map's labels: its section is the neighbouring group's, its text names its own group.
MAP = (
    "Chart on page 10. Text in it: Market Service — Los Angeles Area Code California 14-18 "
    "14. San Fernando Valley CA14 15. Glendale CA15 16. Hollywood CA16 17. South Bay CA17 "
    "18. Long Beach CA18. Context: Victoria County TX10."
)


def _source(n: int, text: str, path: list[str], kind: str = "text") -> Source:
    return Source(
        n=n,
        doc_id="d",
        doc_name="markets.pdf",
        page=9,
        chunk_id=f"c{n}",
        kind=kind,
        text=text,
        section_path=path,
    )


SOURCES = [
    _source(1, "All California markets: CA01 CA02 CA03 CA04 CA12 CA13", ["Western Region"]),
    _source(2, BAY, ["Market Service — San Francisco Bay Area", "California 4-9"]),
    _source(3, MAP, ["Market Service — San Francisco Bay Area"], kind="figure"),
]


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        (
            "In the context of the guide, is market CA03 part of the San Francisco Bay Area?",
            "No",
        ),
        ("Is CA07 considered part of the San Francisco Bay Area? Answer 'yes' or 'no'.", "Yes"),
        # The map's labels sit in the Bay Area's section, but running text lists the Bay Area.
        ("Is CA16 in the San Francisco Bay Area?", "No"),
        ("Is CA15 part of the Los Angeles Area?", "Yes"),
        ("How many market names are listed under the Los Angeles area?", "5"),
        ("How many markets are listed under San Francisco Bay Area?", "6"),
    ],
)
def test_membership_is_read_from_the_groups_list(question: str, answer: str) -> None:
    found = membership(question, SOURCES)
    assert found is not None and found.answer == answer


def test_a_code_of_other_letters_printed_under_another_group_is_not_a_member() -> None:
    regions = [
        _source(1, "1. Lakeside NR01\n2. Hill Valley NR02", ["Regions", "Northern Region"]),
        _source(2, "1. Sandford SR01\n2. Dunmore SR03", ["Regions", "Southern Region"]),
    ]
    found = membership("Is SR03 part of the Northern Region?", regions)
    assert found is not None and found.answer == "No" and found.source.n == 1
    # Printed nowhere: whether it exists at all is not for the list to say.
    assert membership("Is SR09 part of the Northern Region?", regions[:1]) is None


def test_a_list_without_codes_is_counted_by_its_lines() -> None:
    offices = [
        _source(1, "Our offices:\n1. Dubai\n2. Riyadh\n3. Doha", ["Gulf Region"]),
        _source(2, "- Cairo\n- Amman", ["Levant Region"]),
        _source(3, "1. Muscat\n2. Manama\n3. Kuwait City", ["Gulf Region"], kind="figure"),
    ]
    gulf = membership("How many offices are listed under the Gulf Region?", offices)
    assert gulf is not None and gulf.answer == "3" and gulf.source.n == 1
    levant = membership("How many offices are listed under Levant Region?", offices)
    assert levant is not None and levant.answer == "2" and "Cairo, Amman" in levant.quote
    parts = _source(
        4,
        "Table 1: Spare parts\n| Part | Order number |\n| --- | --- |\n"
        "| Housing seal | NW-S-204 |\n| Desiccant pack | NW-D-017 |\n| Probe cable | NW-P-310 |",
        ["Maintenance", "Spare parts"],
        kind="table",
    )
    counted = membership("How many spare parts are listed under Spare parts?", [parts])
    assert counted is not None and counted.answer == "3" and "Desiccant pack" in counted.quote
    # No yes or no from names: a name is not told apart from prose.
    assert membership("Is Dubai part of the Gulf Region?", offices) is None


def test_questions_it_does_not_answer_are_left_to_the_answerer() -> None:
    # No code in the item: names are not told apart from prose, so no yes or no is given.
    assert membership("Is Marin part of the San Francisco Bay Area?", SOURCES) is None
    # A group no source lists, and a question that asks no membership.
    assert membership("Is CA03 part of the Central Valley?", SOURCES) is None
    assert membership("How many markets does California have?", SOURCES) is None
    # A "group" that only names the document is no group.
    assert membership("Is CA03 in the report?", SOURCES) is None
    assert membership("How many codes are listed in this document?", SOURCES) is None
    # One code of a shape is no list.
    assert group_lists("Western Region", [_source(9, "See AB12 only.", ["Western Region"])]) == []


def test_a_group_list_keeps_its_commonest_shape_in_print_order() -> None:
    (bay,) = [g for g in group_lists("San Francisco Bay Area", SOURCES) if g.source.n == 2]
    assert bay.members == ("CA04", "CA05", "CA06", "CA07", "CA08", "CA09")
    (la,) = group_lists("Los Angeles Area", SOURCES)
    # TX10 follows the list but is of another shape; the range's numbers are no codes.
    assert la.members == ("CA14", "CA15", "CA16", "CA17", "CA18") and la.source.n == 3


def test_yes_no_questions_are_read_after_a_leading_clause_or_from_their_instructions() -> None:
    assert read_intent("According to the guide, is the warranty valid abroad?").type == "yesno"
    assert read_intent("Was CA03 listed? Answer 'yes' or 'no'.").type == "yesno"
    assert read_intent("In 2015, what are the domains?").type == "list"
    assert read_intent("Which of these, apples or pears, is larger?").type != "yesno"


def test_the_answerer_says_no_and_quotes_the_list() -> None:
    keep = RefusalModel(weights=(0.0,) * len(Signals.names()), bias=10.0, threshold=0.5)
    answerer = ExtractiveAnswerer(lambda: None, AnswerSettings(), refusal=keep)  # type: ignore[arg-type,return-value]
    answer = answerer.answer(
        "Is market CA03 considered part of the San Francisco Bay Area?", SOURCES, Evidence(0.5, 0.5)
    )
    assert answer.answerable and answer.answer.startswith("No [2]")
    assert "CA04 … CA09 (6 listed), not CA03" in answer.answer
    assert [c.n for c in answer.citations] == [2]


def test_a_stated_code_is_what_the_question_is_about_not_its_answer() -> None:
    asked = read_intent("What's the geographic market name for EPS Code AR01?")
    assert asked.codes == ("AR01",)
    # Periods, model versions and the choices offered are no stated codes.
    assert read_intent("What was the capex in FY2019 and F2018 for Q3?").codes == ()
    assert read_intent("Which is larger, CA19 or Covina and West Covina?").codes == ()
    # A question stating one code that asks for another still wants a code, not the stated one.
    order = read_intent("What is the order code of the spare part for model KX200?")
    assert order.contact == "code" and order.codes == ("KX200",)
    assert extract_value(order, "Seal for KX200: order code SP-4471-B, 12 dollars") == "SP-4471-B"
    line = "1. Little Rock AR01 2. Fort Smith AR02 17. City of Houston (East) TX17"
    assert extract_value(asked, line) == "Little Rock"
    assert extract_value(asked, "Markets: AR01, AR02") is None  # no name printed before it


def test_candidates_holding_the_stated_code_are_read_first() -> None:
    keep = RefusalModel(weights=(0.0,) * len(Signals.names()), bias=10.0, threshold=0.5)
    answerer = ExtractiveAnswerer(lambda: _Words(), AnswerSettings(), refusal=keep)  # type: ignore[arg-type,return-value]
    sources = [
        _source(
            1,
            "Geographic market names of the EPS: see the enlarged maps of each market code.",
            ["Maps"],
        ),
        _source(2, "1. Little Rock AR01\n2. Fort Smith AR02", ["Arkansas (AR)"]),
    ]
    answer = answerer.answer(
        "What's the geographic market name for EPS Code AR01?", sources, Evidence(0.5, 0.5)
    )
    assert answer.answer.startswith("Little Rock [2]")


SLIDE = (
    "BAD FONTS\nTimes New Roman\nArial\nComic Sans\nPapyrus Display Pro\nBAD COLORS\n"
    "## SLOPPY\nPage image: Page 6: SLOPPY. BAD FONTS Times New Roman Arial Comic Sans"
)


def test_so_many_members_are_the_lines_under_the_line_naming_the_group() -> None:
    sources = [_source(1, SLIDE, [], kind="page")]
    three = membership("According to the presentation, what are three bad fonts?", sources)
    assert three is not None and three.answer == "Times New Roman; Arial; Comic Sans"
    assert three.quote == "BAD FONTS: Times New Roman; Arial; Comic Sans"
    two = membership("List the two bad fonts.", sources)
    assert two is not None and two.answer == "Times New Roman; Arial"
    # More than the slide prints (a heading ends the list), no group line, no number: nothing.
    assert membership("What are the six bad fonts?", sources) is None
    assert membership("What are the five bad fonts?", sources) is None  # "BAD COLORS" is next
    assert membership("What are the four bad fonts?", sources) is not None
    assert membership("What are three good fonts?", sources) is None
    assert membership("What are the bad fonts?", sources) is None
    # A picture's words are not read for a list.
    assert membership("What are three bad fonts?", [_source(1, SLIDE, [], "figure")]) is None


class _Words:
    """Hashed bag-of-words vectors, stable across processes: the dense score of shared words."""

    dim = 64

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for term in content_terms(text):
            v[zlib.crc32(term.encode()) % self.dim] += 1.0
        return v / max(float(np.linalg.norm(v)), 1e-9)

    def encode_documents(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dim))

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self.encode_documents(texts)
