from __future__ import annotations

import pytest

from docsight.retrieval.pages import PageRef, page_references, resolve


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is the title of the diagram on page 9?", [PageRef("number", 9)]),
        ("What is INF SERCRL LLP FAX No on page fourteen?", [PageRef("number", 14)]),
        ("words in the first rectangle on the top of the page two?", [PageRef("number", 2)]),
        (
            "How many figures are in this paper from Page 3 to Page 10?",
            [PageRef("number", n) for n in range(3, 11)],
        ),
        ("compare pages 2-4", [PageRef("number", 2), PageRef("number", 3), PageRef("number", 4)]),
        ("cars on page 2 and bars on page 4", [PageRef("number", 2), PageRef("number", 4)]),
        ("the governor as mentioned on the first page of the document", [PageRef("position", 1)]),
        ("How many people are there in the images on the cover?", [PageRef("position", 1)]),
        ("What type of court is noted on the cover page?", [PageRef("position", 1)]),
        (
            "In the figure at Page at the second last, how many people",
            [PageRef("position", 2, from_end=True)],
        ),
        ("What does the last slide say?", [PageRef("position", 1, from_end=True)]),
        ("summarise slide 5", [PageRef("number", 5)]),
        ("see p. 12", [PageRef("number", 12)]),
        ("What was revenue in 2021?", []),
        ("How many pages does the manual have?", []),
        ("the 2nd objective of regulatory efficiency", []),
        # The pages of an example of the answer's form were not asked about.
        (
            'List the pages on reinstalling. As a list, for example ["Page 17", "Page 25"]',
            [],
        ),
        ("Format the date on page 14 as YYYY-MM-DD, e.g. 2020-01-31.", [PageRef("number", 14)]),
    ],
)
def test_page_references(question: str, expected: list[PageRef]) -> None:
    assert page_references(question) == expected


def test_resolve_prefers_printed_labels_then_physical_pages() -> None:
    labels = {"9": [11], "10": [12]}
    assert resolve([PageRef("number", 9)], 17, labels) == [11, 8]
    assert resolve([PageRef("number", 40)], 17, labels) == []
    assert resolve([PageRef("position", 1)], 17, labels) == [0]
    assert resolve([PageRef("position", 2, from_end=True)], 17, labels) == [15]
    assert resolve([PageRef("number", 9), PageRef("number", 12)], 17, labels) == [11, 8]
