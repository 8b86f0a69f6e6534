"""Crops' bytes wait on disk while a streamed parse runs, and its readers still see them."""

from __future__ import annotations

import pytest

from docsight.document import ElementKind
from docsight.document.builder import DocumentBuilder
from docsight.document.model import Asset
from docsight.document.pixels import AssetsWithPixels, PixelFile
from docsight.document.stream import ElementBatch

CROP = b"\x89PNG crop " * 300
PAGE = b"\x89PNG page " * 300
PLAIN = b"\x89PNG pasted " * 300


def _builder(keep_crop_pixels: bool) -> DocumentBuilder:
    return DocumentBuilder(
        doc_id="e" * 32,
        name="r.pdf",
        source="/r.pdf",
        media_type="application/pdf",
        sha256="e" * 64,
        parser="t/1",
        keep_crop_pixels=keep_crop_pixels,
    )


def _pages(b: DocumentBuilder, n: int = 3) -> dict[str, str]:
    """``n`` pages, each with a render and a figure whose crop has a recipe; page 1 also has a
    pasted picture without one (it can only be stored as bytes)."""
    ids: dict[str, str] = {}
    for page in range(n):
        b.add_page(612, 792)
        render = b.add_asset("page", "image/png", PAGE, 816, 1056, render={"page": page})
        b.set_page_image(page, render)
        crop = b.add_asset(
            "crop", "image/png", CROP + bytes([page]), 40, 30, render={"page": page, "crop": [1]}
        )
        b.add(ElementKind.FIGURE, "", page=page, image_id=crop)
        ids[f"crop{page}"] = crop
        if page == 1:
            ids["plain"] = b.add_asset("crop", "image/png", PLAIN, 20, 10)
            b.add(ElementKind.FIGURE, "", page=page, image_id=ids["plain"])
        b.flush()
    return ids


def test_the_file_gives_back_what_it_was_given() -> None:
    pixels = PixelFile()
    pixels.put("a", b"first")
    pixels.put("b", b"")
    pixels.put("a", b"again")  # a key kept already keeps its first bytes
    assert pixels.get("a") == b"first" and pixels.get("b") == b""
    assert "a" in pixels and "c" not in pixels and len(pixels) == 2
    with pytest.raises(KeyError):
        pixels.get("c")
    pixels.close()


def test_a_streamed_build_reads_the_crops_from_disk_and_returns_them_without_bytes() -> None:
    seen: dict[str, bytes] = {}

    def sink(batch: ElementBatch) -> None:
        for element in batch.elements:
            assert element.image_id in batch.assets  # asked without reading the bytes
            seen[element.image_id] = batch.assets[element.image_id].data

    whole = _builder(keep_crop_pixels=True)
    expected = _pages(whole)
    kept = {a.id: a for a in whole.build().assets}

    lean = _builder(keep_crop_pixels=False)
    lean.stream(sink)
    ids = _pages(lean)
    # Held in memory: records without the crops' bytes; on disk: the three crops'.
    assert [lean.assets[ids[f"crop{p}"]].data for p in range(3)] == [b""] * 3
    assert lean._pixels is not None and len(lean._pixels) == 3
    assets = lean.build().assets

    assert ids == expected
    # The stream's readers got every crop's bytes, and the picture without a recipe's.
    assert seen == {i: kept[i].data for i in ids.values()}
    by_id = {a.id: a for a in assets}
    assert by_id.keys() == kept.keys()
    for asset_id, asset in kept.items():
        lean_asset = by_id[asset_id]
        # Page renders and a picture without a recipe keep their bytes; the crops go without.
        gone = asset.kind == "crop" and asset.render is not None
        assert lean_asset.data == (b"" if gone else asset.data)
        assert lean_asset == Asset(**{**vars(asset), "data": lean_asset.data})
    assert lean._pixels is None  # the file is closed with the build


def test_a_build_without_a_stream_gets_the_bytes_back() -> None:
    whole = _builder(keep_crop_pixels=True)
    _pages(whole)
    lean = _builder(keep_crop_pixels=False)
    _pages(lean)
    assert lean._pixels is not None and len(lean._pixels) == 3
    assert lean.build().assets == whole.build().assets


def test_a_full_disk_keeps_the_bytes_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    def full(self: PixelFile, key: str, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(PixelFile, "put", full)
    whole = _builder(keep_crop_pixels=True)
    _pages(whole)
    lean = _builder(keep_crop_pixels=False)
    seen: list[bytes] = []
    lean.stream(lambda batch: seen.extend(batch.assets[e.image_id].data for e in batch.elements))
    _pages(lean)
    assert all(seen)
    assert lean.build().assets == whole.build().assets


def test_assets_of_other_builders_are_kept_as_their_own() -> None:
    """A document parsed in parts takes the parts' assets: crops go to disk as if made here,
    and an asset met again keeps its first record."""
    donor = _builder(keep_crop_pixels=True)
    ids = _pages(donor)
    made = list(donor.assets.values())
    taker = _builder(keep_crop_pixels=False)
    for asset in made + made[:2]:
        taker.keep_asset(asset)
    assert list(taker.assets) == [a.id for a in made]
    assert taker._pixels is not None
    view = AssetsWithPixels(taker.assets, taker._pixels)
    assert [view[a.id] for a in made] == made
    assert taker.assets[ids["crop0"]].data == b""
