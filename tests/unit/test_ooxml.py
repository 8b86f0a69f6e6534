"""Office Open XML detection and archive checks, on small hostile ZIPs built in the tests."""

from __future__ import annotations

import io
import warnings
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from docsight.errors import EncryptedDocumentError, LimitExceededError, ParseError
from docsight.parsers.ooxml import (
    bounded_rows,
    check_archive,
    declared_members,
    image_asset,
    list_markdown,
    ooxml_media_type,
)
from docsight.parsers.sniff import DOCX, PPTX, XLSX, ZIP, detect_media_type
from docsight.parsers.xlsx import cell_range, split_regions
from docsight.settings import ParseSettings

CT_DOCX = (
    b'<?xml version="1.0" encoding="UTF-8"?>'
    b'<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    b'<Default Extension="xml" ContentType="application/xml"/>'
    b'<Override PartName="/word/document.xml" ContentType="application/'
    b'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
)
BODY = b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"/>'


def make_zip(members: list[tuple[str, bytes]], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are the point of some tests
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = compression
            archive.writestr(info, data)
    return out.getvalue()


def docx_members(*extra: tuple[str, bytes]) -> list[tuple[str, bytes]]:
    return [("[Content_Types].xml", CT_DOCX), ("word/document.xml", BODY), *extra]


@pytest.fixture
def settings() -> ParseSettings:
    return ParseSettings()


# --- type detection ------------------------------------------------------------------------------


def test_generated_office_files_are_told_apart(
    docx_file: Path, pptx_file: Path, xlsx_file: Path
) -> None:
    for path, expected in ((docx_file, DOCX), (pptx_file, PPTX), (xlsx_file, XLSX)):
        data = path.read_bytes()
        assert ooxml_media_type(data) == expected
        assert detect_media_type(data, path.with_suffix(".bin")) == expected


def test_plain_zip_stays_zip() -> None:
    data = make_zip([("readme.txt", b"hello"), ("data/x.csv", b"1,2")])
    assert ooxml_media_type(data) is None
    assert detect_media_type(data, Path("archive.docx")) == ZIP


def test_member_names_decide_without_content_types() -> None:
    assert ooxml_media_type(make_zip([("word/document.xml", BODY)])) == DOCX
    assert ooxml_media_type(make_zip([("ppt/presentation.xml", b"<p/>")])) == PPTX
    assert ooxml_media_type(make_zip([("xl/workbook.xml", b"<w/>")])) == XLSX


def test_content_types_win_over_member_names() -> None:
    data = make_zip([("[Content_Types].xml", CT_DOCX), ("xl/workbook.xml", b"<w/>")])
    assert ooxml_media_type(data) == DOCX


def test_truncated_office_file_is_still_recognised(docx_file: Path) -> None:
    data = docx_file.read_bytes()
    truncated = data[: len(data) // 2]
    assert ooxml_media_type(truncated) == DOCX  # so the error says "damaged Word file"
    with pytest.raises(ParseError, match="not a valid ZIP"):
        check_archive("t.docx", truncated, ParseSettings())


def test_non_zip_data_is_not_ooxml() -> None:
    assert ooxml_media_type(b"") is None
    assert ooxml_media_type(b"PK\x03\x04 not really a zip") is None
    assert ooxml_media_type(b"%PDF-1.7") is None


# --- archive checks ------------------------------------------------------------------------------


def test_valid_archive_passes(settings: ParseSettings, docx_file: Path) -> None:
    check_archive("ok.docx", make_zip(docx_members()), settings)
    check_archive(docx_file, docx_file.read_bytes(), settings)


def test_too_many_members(settings: ParseSettings) -> None:
    members = docx_members(*((f"x/{i}", b"") for i in range(20)))
    settings.max_zip_members = 10
    with pytest.raises(LimitExceededError, match=r"22 members.*max_zip_members") as info:
        check_archive("many.docx", make_zip(members), settings)
    assert "many.docx" in str(info.value)


def test_member_count_is_read_from_the_end_record(settings: ParseSettings) -> None:
    data = make_zip(docx_members(*((f"x/{i}", b"") for i in range(20))))
    assert declared_members(data) == 22
    assert declared_members(b"no zip here") is None
    # A lying end record is enough to refuse: the central directory is never parsed.
    at = data.rfind(b"PK\x05\x06")
    forged = data[: at + 8] + (60000).to_bytes(2, "little") * 2 + data[at + 12 :]
    with pytest.raises(LimitExceededError, match="declares 60000 members"):
        check_archive("forged.docx", forged, settings)


def test_ratio_bomb_member(settings: ParseSettings) -> None:
    bomb = make_zip(docx_members(("word/media/zeros.xml", b"\0" * (4 << 20))))
    with pytest.raises(LimitExceededError, match=r"zeros\.xml.*max_zip_ratio"):
        check_archive("bomb.docx", bomb, settings)


def test_small_compressible_members_are_not_bombs(settings: ParseSettings) -> None:
    # A blank part compresses extremely well; below 1 MiB the ratio is not judged.
    check_archive(
        "blank.docx", make_zip(docx_members(("word/blank.xml", b" " * 500_000))), settings
    )


def test_total_inflated_size(settings: ParseSettings) -> None:
    import random

    noise = random.Random(0).randbytes(700_000)  # incompressible: ratio ~1
    members = docx_members(("word/media/a.bin", noise), ("word/media/b.bin", noise[::-1]))
    settings.max_unzipped_mb = 1.0
    with pytest.raises(LimitExceededError, match="max_unzipped_mb"):
        check_archive("big.docx", make_zip(members), settings)


def test_duplicate_member_names(settings: ParseSettings) -> None:
    twice = make_zip(docx_members(("word/document.xml", BODY)))
    with pytest.raises(ParseError, match="more than once"):
        check_archive("dup.docx", twice, settings)
    # Part names are case-insensitive in OPC.
    cased = make_zip(docx_members(("WORD/Document.XML", BODY)))
    with pytest.raises(ParseError, match="more than once"):
        check_archive("dup.docx", cased, settings)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("../../etc/evil.txt", "escapes the archive"),
        ("word/../../evil.txt", "escapes the archive"),
        ("word\\..\\..\\evil.txt", "escapes the archive"),
        ("/tmp/evil.txt", "absolute member path"),
        ("C:/evil.txt", "absolute member path"),
    ],
)
def test_unsafe_member_paths(settings: ParseSettings, name: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        check_archive("trav.docx", make_zip(docx_members((name, b"pwned"))), settings)


def test_truncated_and_empty_archives(settings: ParseSettings) -> None:
    data = make_zip(docx_members())
    for broken in (data[: len(data) // 2], data[:-10], b"", b"PK\x05\x06" + b"\0" * 18):
        with pytest.raises(ParseError, match="ZIP archive"):
            check_archive("broken.docx", broken, settings)


def test_damaged_member_data(settings: ParseSettings) -> None:
    data = bytearray(make_zip(docx_members()))
    start = data.find(b"word/document.xml") + len("word/document.xml")
    data[start + 5 : start + 15] = b"\xff" * 10  # inside the deflate stream
    with pytest.raises(ParseError, match="damaged ZIP member"):
        check_archive("bad.docx", bytes(data), settings)


def test_dtd_in_any_xml_part_is_refused(settings: ParseSettings) -> None:
    xxe = b'<?xml version="1.0"?>\n<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>' + BODY
    with pytest.raises(ParseError, match=r"word/document\.xml.*DTD"):
        check_archive(
            "xxe.docx",
            make_zip([("[Content_Types].xml", CT_DOCX), ("word/document.xml", xxe)]),
            settings,
        )


def _mark_encrypted(data: bytes) -> bytes:
    """Set the "encrypted" flag in every central directory entry (zipfile cannot encrypt)."""
    out = bytearray(data)
    at = out.find(b"PK\x01\x02")
    while at >= 0:
        out[at + 8] |= 0x1
        at = out.find(b"PK\x01\x02", at + 4)
    return bytes(out)


def test_encrypted_and_exotic_members(settings: ParseSettings) -> None:
    with pytest.raises(EncryptedDocumentError):
        check_archive("enc.docx", _mark_encrypted(make_zip(docx_members())), settings)
    with pytest.raises(ParseError, match="compression method"):
        check_archive("bz.docx", make_zip(docx_members(), zipfile.ZIP_BZIP2), settings)


# --- shared helpers ------------------------------------------------------------------------------


def test_list_markdown_nests_and_numbers() -> None:
    items = [(0, False, "a"), (1, False, "a1"), (1, False, "a2"), (0, False, "b")]
    assert list_markdown(items) == "- a\n  - a1\n  - a2\n- b"
    ordered = [(0, True, "one"), (1, True, "sub"), (0, True, "two"), (3, False, "deep")]
    assert list_markdown(ordered) == "1. one\n   1. sub\n2. two\n   - deep"


def test_bounded_rows_caps_the_padded_grid() -> None:
    rows = [["x"] * 300, *([["y"]] * 5000)]  # one wide row would pad 5000 rows to 300 cells
    cut, was_cut = bounded_rows(rows, 1000)
    assert was_cut and len(cut) == 3 and all(len(r) <= 300 for r in cut)
    assert bounded_rows([["a", "b"], ["c"]], 1000) == ([["a", "b"], ["c"]], False)
    assert len(bounded_rows([["z"] * 5000], 1000)[0][0]) == 1000


def _png(width: int, height: int, fmt: str = "PNG") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 10, 10)).save(out, fmt)
    return out.getvalue()


def test_image_asset_limits_and_converts(docx_file: Path) -> None:
    from fixtures.office_fixtures import office_source

    builder = office_source(docx_file).builder("test")
    settings = ParseSettings(max_image_pixels=1_000_000)
    image_id, attrs = image_asset(builder, _png(1200, 1000), settings, "big")
    assert image_id is None and attrs["width"] == 1200
    assert any("max_image_pixels" in w for w in builder.warnings)
    image_id, _ = image_asset(builder, _png(30, 20, "BMP"), settings, "bmp")
    assert image_id is not None and builder.assets[image_id].media_type == "image/png"
    assert image_asset(builder, b"not an image", settings, "junk")[0] is None


# --- spreadsheet regions -------------------------------------------------------------------------


def test_regions_split_at_empty_rows_and_columns() -> None:
    cells = {(r, c): "x" for r in range(1, 4) for c in range(1, 4)}  # A1:C3
    cells.update({(r, 5): "y" for r in (1, 2)})  # E1:E2, one empty column away
    cells.update({(r, c): "z" for r in (6, 7) for c in (1, 2)})  # A6:B7, two empty rows away
    cells[(1_048_576, 16_384)] = "far"
    regions = split_regions(cells)
    assert [cell_range(r) for r in regions] == ["A1:C3", "E1:E2", "A6:B7", "XFD1048576"]
    assert split_regions({}) == []
