"""``leading_sentence`` splits only the start of a long line: it must give what splitting the
whole line gives, whatever comes after the part it reads."""

from __future__ import annotations

import random

import pytest

from docsight.document.text import leading_sentence, split_sentences


def _whole_line(line: str, min_words: int = 4) -> str | None:
    for sentence in split_sentences(line):
        if len(sentence.split()) >= min_words:
            return sentence
    return None


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   ",
        "Net revenue by segment and region in millions",
        "Short. Too short! The first sentence with enough words ends here. " + "More text " * 30,
        # An abbreviation just before the cut: the sentence does not end at "Inc.".
        "Acme Holdings Inc. reported results for the quarter ended in June of that year. "
        + "Then the board met again to discuss the outlook for the next year. " * 4,
        # A bracket opened in the first sentence and closed far beyond the part read.
        "Revenue grew (see the discussion of results. It rose in every segment "
        + "word " * 60
        + "and so on) as the table shows. The end of it all comes after that.",
        # A quotation that runs past the part read.
        'He said "the plan is final. We will ship it in the spring ' + "x " * 60 + '" and left.',
        # List items: pysbd splits before "(ii)" only because "(iii)" follows.
        "(i) keep records that in reasonable detail reflect the transactions; and (ii) provide "
        "assurance that the receipts are made only as authorised; and (iii) provide assurance "
        "regarding the prevention of loss. " + "Further text follows here. " * 10,
        "We find three things: 1) the rules matter a great deal here. 2) the order matters "
        "too. 3) nothing else does. " + "Filler words appear. " * 10,
        "The amounts are 3.5 and 4.25 million dollars for the year. " + "Again a sentence. " * 9,
        "Dr. Smith paid $3.5 million. Then he left the company for good and never came back.",
        "No terminator at all in this line but many words in it " * 5,
        # Full-width stops end sentences too; pysbd's own placeholder symbols come back changed.
        "one two three four。five six seven eight",
        "one two three four！five six seven eight",
        "one two three four？ five six seven eight",
        "Dots ．in full width and more words here",
        "Weird ☉ symbol in a line with several words",
        "Letters ȸ and ȹ in a line with words",
        # Several lines: pysbd ends a sentence at each break.
        "first words here now\nsecond line words here",
        "Short.\nThe second line has the sentence with words. " + "More of it. " * 10,
    ],
)
def test_the_same_sentence_as_splitting_the_whole_line(line: str) -> None:
    assert leading_sentence(line) == _whole_line(line)


def test_generated_lines_agree_with_the_whole_split() -> None:
    """Lines made of the things pysbd treats specially, in random order and length: the part
    read must never end a sentence where the whole line does not."""
    pieces = [
        "The company reported growth in every segment this year.",
        "Inc.",
        "U.S.",
        "e.g.",
        "Fig. 3",
        "No. 12",
        "3.5 million",
        "(see Note 4.",
        "and more)",
        "[1]",
        '"It works.',
        'he said."',
        "“Quoted text.",
        "ends here.”",
        "1.",
        "2)",
        "(iii)",
        "a.",
        "Short.",
        "Why not?",
        "Wow!",
        "etc.",
        "...",
        "words without an end",
        "another clause, with a comma",
        "\n",
        "。",
        "？",
        "Mr. Smith",
        "at 9 a.m. Then",
        "Vol. 2",
        "(a)",
        "Ltd.",
        "etc. And",
        "... And",
        "Jan. 5",
    ]
    rng = random.Random(17)
    for _ in range(1000):
        line = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        for min_words in (1, 4):
            assert leading_sentence(line, min_words) == _whole_line(line, min_words), line
