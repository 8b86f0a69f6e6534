"""Geometry of the PDF parser on synthetic glyphs and word boxes (no PDF involved)."""

from __future__ import annotations

import pytest

from docsight.parsers.pdf.figures import cluster_boxes
from docsight.parsers.pdf.furniture import find_furniture
from docsight.parsers.pdf.layout import (
    Glyph,
    Line,
    Word,
    font_style,
    group_lines,
    words_from_glyphs,
)
from docsight.parsers.pdf.reading import (
    group_blocks,
    join_lines,
    merge_row_segments,
    reading_order,
)
from docsight.parsers.pdf.tables import grid_from_lines, rule_regions

PAGE_W = 612.0


def words_of(
    text: str,
    x: float,
    top: float,
    size: float = 10.0,
    font: str = "Times-Roman",
    space: float = 2.5,
) -> list[Word]:
    """Words of ``text`` laid out from ``x`` on the line whose top is ``top``."""
    out = []
    for token in text.split():
        width = 0.5 * size * len(token)
        out.append(Word(token, x, top, x + width, top + size, size, font))
        x += width + space
    return out


def column(
    x: float,
    first: int,
    n: int,
    word: str,
    top: float = 100.0,
    pitch: float = 12.0,
    width: float = 240.0,
) -> list[Word]:
    """``n`` justified lines filling a ``width``-pt column, numbered from ``first``."""
    out: list[Word] = []
    for k in range(n):
        tokens = [word, f"{first + k:02d}"] + ["text"] * 40
        line = words_of(" ".join(tokens), x, top + k * pitch)
        line = [w for w in line if w.x1 <= x + width]
        # justify: spread the spare room over the gaps, as TeX does
        spare = x + width - line[-1].x1
        step = spare / (len(line) - 1)
        out += [
            Word(w.text, w.x0 + i * step, w.top, w.x1 + i * step, w.bottom, w.size, w.font)
            for i, w in enumerate(line)
        ]
    return out


def ordered_text(words: list[Word]) -> list[str]:
    lines = group_lines(words)
    return [ln.text for ln, _ in merge_row_segments(reading_order(lines, PAGE_W))]


# --- glyphs, words, lines ----------------------------------------------------------------------


def test_words_split_at_spaces_and_gaps() -> None:
    def g(ch: str, x: float, bottom: float = 110.0) -> Glyph:
        return Glyph(ch, x, bottom - 10, x + 5, bottom, 10.0, "Times-Roman")

    glyphs = [
        g("a", 0),
        g("b", 5),
        g(" ", 10),
        g("c", 15),
        g("d", 20.5),
        g("e", 30),  # a gap of 4.5 pt (0.45 em) ends the word without a space glyph
        g("f", 35, bottom=130),
    ]  # the next line
    assert [w.text for w in words_from_glyphs(glyphs)] == ["ab", "cd", "e", "f"]


def _set(text: str, x: float, letter_gap: float, width: float = 6.0) -> list[Glyph]:
    """``text`` set from ``x`` with ``letter_gap`` pt between letters; a space glyph is typed."""
    out: list[Glyph] = []
    for ch in text:
        out.append(Glyph(ch, x, 100.0, x + width, 110.0, 10.0, "Arial-BoldMT"))
        x += width + letter_gap
    return out


def test_letter_spaced_title_is_read_as_words() -> None:
    # A cover's "SUPERIOR COURT" set with tracking: 1.4-1.6 pt between letters (0.14-0.16 em,
    # some above the word gap, some below), a typed space between the two words.
    glyphs = _set("SUPERIOR", 0.0, 1.5) + _set(" ", 62.0, 0.0) + _set("COURT", 70.0, 1.4)
    glyphs[3] = glyphs[3]._replace(x0=glyphs[3].x0 - 0.2)  # E nudged: "PE" closer than "EP"
    words = words_from_glyphs(glyphs)
    assert [w.text for w in words] == ["SUPERIOR", "COURT"]
    assert words[0].x0 == 0.0 and words[0].x1 == glyphs[7].x1


def test_evenly_spaced_short_words_are_not_joined() -> None:
    # "it is a" typeset without space glyphs (as TeX does): the letters inside "it" touch, so
    # the even word gaps are word gaps, not tracking.
    glyphs = _set("it", 0.0, 0.0) + _set("is", 15.0, 0.0) + _set("a", 30.0, 0.0)
    assert [w.text for w in words_from_glyphs(glyphs)] == ["it", "is", "a"]
    # Letter pieces spaced unevenly (a table's column letters) stay apart too.
    uneven = [
        Glyph(c, x, 100, x + 6, 110, 10.0, "F") for c, x in zip("ABCD", (0, 8, 19, 28), strict=True)
    ]
    assert [w.text for w in words_from_glyphs(uneven)] == ["A", "B", "C", "D"]


def test_line_text_spaces_follow_gaps() -> None:
    line = Line(
        [Word("infor", 0, 0, 25, 10), Word("mation", 25.2, 0, 55, 10), Word("here", 58, 0, 78, 10)]
    )
    assert line.text == "information here"


def test_columns_with_aligned_baselines_stay_apart() -> None:
    left = column(72, 1, 3, "left")
    right = column(72 + 240 + 20, 1, 3, "right")
    lines = group_lines(left + right)
    assert len(lines) == 6
    assert all(ln.text.startswith(("left", "right")) for ln in lines)
    assert all(("left" in ln.text) != ("right" in ln.text) for ln in lines)


def test_superscript_stays_on_its_line() -> None:
    words = words_of("see the note", 72, 100)
    words.append(Word("1", words[-1].x1 + 0.2, 99, words[-1].x1 + 3.5, 105, 6.0))
    words += words_of("next line", 72, 113)
    lines = group_lines(words)
    texts = [ln.text for ln in sorted(lines, key=lambda ln: ln.top)]
    assert texts == ["see the note1", "next line"]


def test_giant_glyph_does_not_swallow_lines() -> None:
    words = [Word("3", 20, 90, 60, 180, 90.0)]  # a 90-pt numeral beside three lines
    for k, text in enumerate(
        ("Take advantage of work-study", "that integrate classroom", "job training.")
    ):
        words += words_of(text, 80, 100 + 13 * k)
    texts = sorted((ln.top, ln.text) for ln in group_lines(words))
    assert [t for _, t in texts] == [
        "3",
        "Take advantage of work-study",
        "that integrate classroom",
        "job training.",
    ]


# --- reading order -----------------------------------------------------------------------------


def test_title_then_left_column_then_right_column() -> None:
    words = words_of("A Title Across Both Columns", 200, 60, size=18)
    words += column(72, 1, 10, "left", top=100)
    words += column(72 + 240 + 20, 1, 10, "right", top=100)
    texts = ordered_text(words)
    assert texts[0] == "A Title Across Both Columns"
    labels = [t.split()[0] + t.split()[1] for t in texts[1:]]
    expected = [f"left{k:02d}" for k in range(1, 11)] + [f"right{k:02d}" for k in range(1, 11)]
    assert labels == expected


def test_line_overflowing_into_the_gutter_keeps_columns() -> None:
    left = column(72, 1, 6, "left") + column(72, 8, 5, "left", top=100 + 7 * 12)
    right = column(332, 1, 6, "right") + column(332, 8, 5, "right", top=100 + 7 * 12)
    # line 7 of the left column runs across the 20-pt gutter, 10 pt into the right column,
    # where the right column happens to have a blank line (as before a heading)
    left += column(72, 7, 1, "left", top=100 + 6 * 12, width=270)
    texts = ordered_text(left + right)
    assert [t.split()[1] for t in texts[:12]] == [f"{k:02d}" for k in range(1, 13)]
    first_right = next(i for i, t in enumerate(texts) if t.startswith("right"))
    assert all(t.startswith("left") for t in texts[:first_right])
    assert all(t.startswith("right") for t in texts[first_right:])


def test_table_rows_read_across() -> None:
    words: list[Word] = []
    for k, (label, a, b) in enumerate(
        (
            ("Revenue", "44,538", "37,403"),
            ("Cost of sales", "24,576", "21,162"),
            ("Gross profit", "19,962", "16,241"),
        )
    ):
        top = 100 + 12 * k
        words += words_of(label, 72, top) + words_of(a, 400, top) + words_of(b, 480, top)
    assert ordered_text(words) == [
        "Revenue 44,538 37,403",
        "Cost of sales 24,576 21,162",
        "Gross profit 19,962 16,241",
    ]


def test_bullet_joins_its_text() -> None:
    words: list[Word] = []
    for k, item in enumerate(("first item here", "second item here")):
        words += [Word("•", 72, 100 + 14 * k, 76, 110 + 14 * k)]
        words += words_of(item, 90, 100 + 14 * k)
    assert ordered_text(words) == ["• first item here", "• second item here"]


# --- blocks and text ---------------------------------------------------------------------------


def blocks_of(words: list[Word]) -> list[str]:
    lines = group_lines(words)
    return [b.text for b in group_blocks(merge_row_segments(reading_order(lines, PAGE_W)))]


def test_blocks_split_at_gaps_indents_and_headings() -> None:
    long = " ".join(["word"] * 12)
    words = words_of("2 Method", 72, 80, size=12, font="Times-Bold")
    words += words_of(f"First {long}", 72, 100)
    words += words_of(f"para {long}", 72, 112)
    words += words_of(f"Second {long}", 84, 124)  # first-line indent, no extra space
    words += words_of(f"para {long}", 72, 136)
    words += words_of(f"Third {long}", 72, 160)  # extra space
    texts = blocks_of(words)
    assert [t.split()[0] for t in texts] == ["2", "First", "Second", "Third"]
    assert texts[0] == "2 Method"


def test_bold_run_in_heading_stays_in_its_paragraph() -> None:
    words = words_of("Results.", 72, 100, font="Times-Bold")
    words += words_of("We found that the method works on " + "more " * 4, 115, 100)
    words += words_of("every dataset we tried in the end.", 72, 112)
    assert len(blocks_of(words)) == 1


def test_join_lines_dehyphenates() -> None:
    assert join_lines(["useful infor-", "mation here"]) == "useful information here"
    assert join_lines(["Program-", "Guided Reasoning"]) == "Program-Guided Reasoning"
    assert join_lines(["on-the-", "job training"]) == "on-the-job training"
    assert join_lines(["ends with a dash -", "next"]) == "ends with a dash - next"
    assert join_lines(["soft\u00adhyphen", "ok"]) == "softhyphen ok"


def test_font_style_from_names() -> None:
    assert font_style("ABCDEF+NimbusRomNo9L-Medi").bold
    assert font_style("Arial,Bold").bold and not font_style("Arial").bold
    assert font_style("Franklin Gothic Demi").bold
    assert font_style("Times-Italic").italic and font_style("NimbusRomNo9L-ReguItal").italic
    assert font_style("Courier").monospace and font_style("Inconsolatazi4-Regular").monospace
    assert font_style("CMMI10").math and font_style("CMSY10").math
    assert not font_style("Symbol").math


# --- furniture ---------------------------------------------------------------------------------


def test_running_headers_and_page_numbers() -> None:
    pages = []
    for p in range(6):
        lines = [
            Line(words_of(f"Annual Report {2020 + p}", 72, 30)),
            Line(words_of(f"Body text of page {p}", 72, 300)),
            Line(words_of("A unique closing line" if p == 0 else "More body", 72, 700)),
            Line(words_of(str(p + 1), 300, 760)),
        ]
        pages.append(lines)
    marks = find_furniture(pages, [(0.0, 792.0)] * 6)
    assert marks[0] == {0: "header", 3: "footer"}  # digits differ, text repeats
    assert all(m == {0: "header", 3: "footer"} for m in marks)


def test_lone_body_text_in_the_band_is_not_furniture() -> None:
    pages = [
        [Line(words_of("Introduction to the topic", 72, 30)), Line(words_of("Body", 72, 300))],
        [Line(words_of("Something else entirely", 72, 30)), Line(words_of("Body", 72, 300))],
    ]
    marks = find_furniture(pages, [(0.0, 792.0)] * 2)
    assert marks == [{}, {}]


# --- tables and figures ------------------------------------------------------------------------


def test_rule_regions_and_grid() -> None:
    rules = [
        (100.0, 200.0, 300.0),
        (100.2, 300.0, 400.0),  # one rule drawn in two pieces
        (120.0, 200.0, 400.0),
        (180.0, 200.0, 400.0),
        (400.0, 72.0, 150.0),
    ]  # a footnote rule elsewhere
    lines = [Line(words_of("Animal", 205, 105) + words_of("Price", 350, 105))]
    for k, (a, b) in enumerate((("Gnat", "13.65"), ("Gnu", "92.50"), ("Emu", "33.33"))):
        lines.append(Line(words_of(a, 205, 125 + 15 * k) + words_of(b, 350, 125 + 15 * k)))
    regions = rule_regions(rules, lines, max_gap=400)
    assert len(regions) == 1
    x0, top, x1, bottom, ys = regions[0]
    assert (x0, top, x1, bottom) == (200.0, 100.0, 400.0, 180.0)
    assert ys == [100.0, 120.0, 180.0]
    assert grid_from_lines(lines, ys[1]) == [
        ["Animal", "Price"],
        ["Gnat", "13.65"],
        ["Gnu", "92.50"],
        ["Emu", "33.33"],
    ]


def test_prose_between_rules_breaks_the_region() -> None:
    rules = [(100.0, 72.0, 540.0), (300.0, 72.0, 540.0)]
    prose = [Line(words_of(" ".join(["running"] * 14), 72, 200))]
    assert rule_regions(rules, prose, max_gap=400) == []


def test_grid_folds_currency_columns() -> None:
    lines = [
        Line(words_of("Revenue", 72, 100) + words_of("$", 300, 100) + words_of("5,748", 320, 100)),
        Line(words_of("Costs", 72, 115) + words_of("2,347", 320, 115)),
    ]
    assert grid_from_lines(lines) == [["Revenue", "$ 5,748"], ["Costs", "2,347"]]


def test_cluster_boxes() -> None:
    boxes = [
        (0.0, 0.0, 10.0, 10.0),
        (14.0, 0.0, 20.0, 10.0),  # 4 pt apart
        (100.0, 100.0, 110.0, 110.0),
    ]
    clusters = cluster_boxes(boxes, gap=6.0)
    assert sorted(clusters) == [((0.0, 0.0, 20.0, 10.0), 2), ((100.0, 100.0, 110.0, 110.0), 1)]
    # a big box containing a small one is one cluster
    assert cluster_boxes([(0.0, 0.0, 300.0, 300.0), (100.0, 100.0, 110.0, 110.0)], 6.0) == [
        ((0.0, 0.0, 300.0, 300.0), 2)
    ]


def test_a_packed_page_keeps_what_is_keyed_by_identity() -> None:
    """Roles, OCR hints and line scores are keyed by ``id()``; a page packed between the passes
    (``passes.PageStore``) carries them by position, and drops those of units gone."""
    from docsight.document.model import ElementKind
    from docsight.parsers.pdf.page import Page
    from docsight.parsers.pdf.passes import PageStore
    from docsight.parsers.pdf.reading import Block
    from docsight.parsers.pdf.roles import Role

    head = Block(group_lines(words_of("Revenue", 72, 80, size=14)))
    body = Block(group_lines(words_of("Sales rose in the second half", 72, 110)))
    gone = Block(group_lines(words_of("Page 3", 72, 760)))
    page = Page(0, PAGE_W, 792.0, lines=[*head.lines, *body.lines, *gone.lines])
    page.units = [head, body]
    page.roles = {id(head): Role(ElementKind.HEADING, 1), id(gone): Role(ElementKind.FOOTER)}
    page.hints = {id(body): (ElementKind.PARAGRAPH, None)}
    page.ocr_scores = {id(body.lines[0]): 0.9}
    store = PageStore(packed=True)
    store.add(page)
    back = store.load(0)
    assert back is not page and back.units == page.units
    new_head, new_body = back.units
    assert back.roles == {id(new_head): Role(ElementKind.HEADING, 1)}
    assert back.hints == {id(new_body): (ElementKind.PARAGRAPH, None)}
    assert back.ocr_scores == {id(new_body.lines[0]): 0.9}
    # The furniture candidates were taken when the page came in, not when it is laid out.
    assert [c[2] for c in store.furniture[0]] == ["revenue", "page #"]


def test_a_spilled_store_keeps_its_pages_in_a_file() -> None:
    """``spill`` keeps packed pages out of memory; saved pages read back as saved, a pickled
    store carries its pages with it, and a closed store has none."""
    import pickle

    from docsight.parsers.pdf.page import Page
    from docsight.parsers.pdf.passes import PageStore

    store = PageStore(packed=True, spill=True)
    for k in range(3):
        page = Page(k, PAGE_W, 792.0, lines=group_lines(words_of(f"Line on page {k}", 72, 100)))
        store.add(page)
    assert store.spilled() == 3 and store.packed_bytes() > 0
    page = store.load(1)
    page.lines = group_lines(words_of("Changed", 72, 100))
    store.save(1, page)
    assert store.load(1).lines[0].text == "Changed"
    assert store.load(2).lines[0].text == "Line on page 2"
    # A pickled store (a part of a long file) takes the bytes along and no file.
    copy = pickle.loads(pickle.dumps(store))
    assert copy.spilled() == 0 and copy.load(1).lines[0].text == "Changed"
    joined = PageStore(packed=True, spill=True)
    joined.extend(copy)
    assert joined.spilled() == 3 and joined.load(0).lines[0].text == "Line on page 0"
    store.close()
    with pytest.raises(ValueError, match="released"):
        store.load(0)


def test_a_store_that_cannot_spill_keeps_its_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from docsight.parsers.pdf.page import Page
    from docsight.parsers.pdf.passes import PageStore

    def no_room(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", no_room)
    store = PageStore(packed=True, spill=True)
    store.add(Page(0, PAGE_W, 792.0, lines=group_lines(words_of("Kept", 72, 100))))
    assert store.spilled() == 0 and store.load(0).lines[0].text == "Kept"


def test_section_numbers_are_read_off_a_headings_start() -> None:
    from docsight.parsers.pdf.roles import section_number

    assert section_number("4.1 TASKS") == (4, 1)
    assert section_number("5 Related Work") == (5,)
    assert section_number("B.2 Dataset Construction") == (101, 2)
    assert section_number("4.3.1 BOOTSTRAPPING WITH INTERMEDIATE SIZES") == (4, 3, 1)
    # A list marker, a lower-case sentence, a year, a letter alone: no section number.
    for text in ("4. Introduction", "4 apples were sold", "2019 Annual Report", "A Note"):
        assert section_number(text) is None


def test_only_numbers_with_a_neighbour_are_in_sequence() -> None:
    from docsight.parsers.pdf.roles import in_sequence

    numbers = [(1,), (1, 1), (1, 2), (2, 1), (2, 3), (3, 1, 4), (30,), (101, 1), (101, 2)]
    assert in_sequence(numbers) == {
        (1,),  # a child, 1.1
        (1, 1),  # its parent and 1.2
        (1, 2),
        (101, 1),  # B.1 and B.2
        (101, 2),
    }
    assert in_sequence([]) == frozenset()


def test_numbered_headings_go_as_deep_as_their_numbers() -> None:
    from docsight.parsers.pdf.roles import numbered_depths

    plain = (10.0, False, 10.0)
    numbered = [((4,), None), ((4, 1), plain), ((4, 2), plain), ((4, 2, 1), plain), ((9, 9), plain)]
    # "4" is a bigger heading (no style): a neighbour, not one of the plain ones; "9.9" has none.
    assert numbered_depths(numbered) == {(4, 1): 0, (4, 2): 0, (4, 2, 1): 1}
    assert numbered_depths([]) == {}
