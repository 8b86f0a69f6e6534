from __future__ import annotations

import pytest
from pydantic import ValidationError

from docsight.document import SCHEMA_VERSION, BBox, Document, ElementKind, Font
from docsight.document.builder import DocumentBuilder


def _builder(keep_page_pixels: bool = True) -> DocumentBuilder:
    return DocumentBuilder(
        doc_id="d" * 32,
        name="report.pdf",
        source="/data/report.pdf",
        media_type="application/pdf",
        sha256="d" * 64,
        parser="test/1",
        size_bytes=1234,
        keep_page_pixels=keep_page_pixels,
    )


def _sample() -> Document:
    b = _builder()
    b.add_page(612, 792)
    b.add_page(612, 792)
    b.add(ElementKind.TITLE, "Annual Report", page=0, bbox=BBox(x0=0.1, y0=0.05, x1=0.9, y1=0.1))
    b.add(ElementKind.HEADER, "ACME Corp", page=0)
    b.add(
        ElementKind.HEADING,
        "1 Results",
        page=0,
        level=1,
        font=Font(name="Helvetica-Bold", size=14, bold=True),
    )
    b.add(ElementKind.PARAGRAPH, "Revenue grew.", page=0)
    b.add(ElementKind.HEADING, "1.1 Revenue", page=0, level=2)
    b.add(
        ElementKind.TABLE,
        "Year | Revenue\n2021 | 10",
        page=1,
        markdown="| Year | Revenue |\n| --- | --- |\n| 2021 | 10 |",
    )
    b.add(ElementKind.HEADING, "2 Outlook", page=1, level=1)
    b.add(ElementKind.PARAGRAPH, "Flat.", page=1)
    b.add(ElementKind.FOOTER, "Page 2", page=1)
    asset = b.add_asset("page", "image/png", b"\x89PNG fake", 10, 10)
    b.set_page_image(0, asset)
    return b.build().document


def test_builder_assigns_dense_order_sections_and_paths() -> None:
    doc = _sample()
    assert [e.order for e in doc.elements] == list(range(len(doc.elements)))
    assert doc.title == "Annual Report"
    table = next(e for e in doc.elements if e.kind == ElementKind.TABLE)
    assert doc.section_path(table.section_id) == ["1 Results", "1.1 Revenue"]
    outlook = next(e for e in doc.elements if e.text == "Flat.")
    assert doc.section_path(outlook.section_id) == ["2 Outlook"]
    # The title and page furniture belong to no section.
    assert all(
        e.section_id is None
        for e in doc.elements
        if e.kind in (ElementKind.TITLE, ElementKind.HEADER, ElementKind.FOOTER)
    )
    top = doc.children(None)
    assert [s.title for s in top] == ["1 Results", "2 Outlook"]
    assert [s.title for s in doc.children(top[0].id)] == ["1.1 Revenue"]
    assert doc.pages[0].image_id is not None


def test_indexable_elements_exclude_furniture() -> None:
    doc = _sample()
    kinds = {e.kind for e in doc.indexable_elements()}
    assert ElementKind.HEADER not in kinds and ElementKind.FOOTER not in kinds
    assert ElementKind.TABLE in kinds


def test_json_round_trip_is_lossless() -> None:
    doc = _sample()
    again = Document.model_validate_json(doc.model_dump_json())
    assert again == doc
    assert again.schema_version == SCHEMA_VERSION
    again.validate_structure()


def test_ids_are_content_hashes() -> None:
    first, second = _sample(), _sample()
    assert [e.id for e in first.elements] == [e.id for e in second.elements]
    assert len({e.id for e in first.elements}) == len(first.elements)
    b = _builder()
    b.add_page()
    b.add(ElementKind.PARAGRAPH, "Different text", page=0)
    assert b.elements[0].id not in {e.id for e in first.elements}


def test_bbox_normalisation_and_validation() -> None:
    box = BBox.from_absolute(61.2, 79.2, 306, 396, 612, 792)
    assert box.as_tuple() == pytest.approx((0.1, 0.1, 0.5, 0.5))
    clamped = BBox.from_absolute(-5, -5, 700, 900, 612, 792)
    assert clamped.as_tuple() == (0.0, 0.0, 1.0, 1.0)
    with pytest.raises(ValidationError):
        BBox(x0=0.5, y0=0.1, x1=0.2, y1=0.3)
    with pytest.raises(ValidationError):
        BBox(x0=0.0, y0=0.0, x1=1.5, y1=0.3)
    assert box.union(BBox(x0=0.0, y0=0.6, x1=0.2, y1=0.7)).as_tuple() == pytest.approx(
        (0.0, 0.1, 0.5, 0.7)
    )


def test_validate_structure_catches_broken_invariants() -> None:
    doc = _sample()
    broken = doc.model_copy(deep=True)
    broken.elements[2].order = 7
    with pytest.raises(ValueError, match="order"):
        broken.validate_structure()
    broken = doc.model_copy(deep=True)
    broken.elements[3].section_id = "nope"
    with pytest.raises(ValueError, match="unknown section"):
        broken.validate_structure()


def test_builder_rejects_out_of_range_page() -> None:
    b = _builder()
    b.add_page()
    with pytest.raises(ValueError):
        b.add(ElementKind.PARAGRAPH, "x", page=3)


def test_page_labels_are_inferred_from_page_number_furniture() -> None:
    b = _builder()
    for _ in range(8):
        b.add_page(612, 792)
    # cover and contents unnumbered, then "1".."6" printed in footers, one "Page 5 of 6" form
    for page, text in [(2, "1"), (3, "2"), (4, "- 3 -"), (5, "4"), (6, "Page 5 of 6"), (7, "6")]:
        b.add(ElementKind.FOOTER, text, page=page)
    b.add(ElementKind.HEADER, "Annual report 2024", page=3)
    doc = b.build().document
    assert [p.labels for p in doc.pages] == [[], [], ["1"], ["2"], ["3"], ["4"], ["5"], ["6"]]


def test_page_labels_keep_spreads_and_ignore_inconsistent_numbers() -> None:
    b = _builder()
    for _ in range(4):
        b.add_page(612, 792)
    b.add(ElementKind.FOOTER, "2", page=1)
    b.add(ElementKind.FOOTER, "3", page=1)
    b.add(ElementKind.FOOTER, "17", page=3)
    doc = b.build().document
    # no offset is supported by three pages: only what is printed is kept
    assert [p.labels for p in doc.pages] == [[], ["2", "3"], [], ["17"]]


def test_a_page_render_with_a_recipe_is_named_by_it_and_encoded_only_when_kept() -> None:
    encoded: list[int] = []

    def encode() -> bytes:
        encoded.append(1)
        return b"\x89PNG page"

    recipe = {"page": 3, "scale": 2.0}
    lean = _builder(keep_page_pixels=False)
    asset_id = lean.add_asset("page", "image/png", encode, 10, 10, render=recipe)
    assert encoded == []  # never encoded only to be hashed and dropped
    assert lean.assets[asset_id].data == b"" and lean.assets[asset_id].render == recipe

    kept = _builder()
    assert kept.add_asset("page", "image/png", encode, 10, 10, render=recipe) == asset_id
    assert encoded == [1] and kept.assets[asset_id].data == b"\x89PNG page"
    # Another recipe is another asset, even with the same pixels.
    other = kept.add_asset("page", "image/png", encode, 10, 10, render={"page": 4, "scale": 2.0})
    assert other != asset_id

    # Without a recipe, and for crops, the id is still the hash of the bytes.
    crop = kept.add_asset("crop", "image/png", lambda: b"logo", 4, 4, render={"page": 3})
    assert crop == kept.add_asset("crop", "image/png", b"logo", 4, 4)
    assert kept.add_asset("page", "image/png", b"x", 1, 1) != kept.add_asset(
        "page", "image/png", b"y", 1, 1
    )


def test_equal_fonts_are_one_object_when_built_and_when_read_back() -> None:
    from docsight.index.schema import element_from_row, element_rows

    b = _builder()
    b.add_page(612, 792)
    body = [
        b.add(ElementKind.PARAGRAPH, f"Line {i}.", page=0, font=Font(name="Helvetica", size=10))
        for i in range(3)
    ]
    bold = b.add(
        ElementKind.PARAGRAPH, "Total.", page=0, font=Font(name="Helvetica", size=10, bold=True)
    )
    plain = b.add(ElementKind.PARAGRAPH, "No font.", page=0)
    assert body[0].font is body[1].font is body[2].font
    assert bold.font is not body[0].font and bold.font is not None and bold.font.bold
    assert plain.font is None
    doc = b.build().document
    back = [element_from_row(row) for row in element_rows(doc)]
    assert back[0].font == body[0].font and back[0].font is back[1].font is back[2].font
    assert back[3].font is not None and back[3].font.bold and back[4].font is None
