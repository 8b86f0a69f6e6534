"""Renders at another resolution keep the region: the crop box scales with the page."""

from __future__ import annotations

from docsight.index.renders import MAX_RENDER_PIXELS, at_dpi


def test_a_crop_scales_with_the_resolution() -> None:
    recipe = {"page": 3, "scale": 96 / 72, "crop": [100, 200, 300, 260]}
    sharper = at_dpi(recipe, 192)
    assert sharper["scale"] == 2 * recipe["scale"] and sharper["page"] == 3
    assert sharper["crop"] == [200, 400, 600, 520]
    assert recipe["crop"] == [100, 200, 300, 260]  # the stored recipe is not touched


def test_a_huge_crop_is_capped() -> None:
    recipe = {"page": 0, "scale": 1.0, "crop": [0, 0, 5000, 5000]}
    capped = at_dpi(recipe, 600)
    x0, y0, x1, y1 = capped["crop"]
    assert (x1 - x0) * (y1 - y0) <= MAX_RENDER_PIXELS * 1.001
