"""Ablations in one command: a grid of configurations over shared collections.

A grid file (TOML or JSON) names a dataset and a list of variants, each a label plus settings
overrides (and optionally its own ``k`` or ``scope``)::

    kind = "retrieval"
    dataset = "../shared/data/mmlongbench-dev/samples.json"
    docs = "../shared/data/mmlongbench-dev/documents"

    [[variants]]
    name = "default"

    [[variants]]
    name = "bm25 only"
    settings = { retrieval = { channels = ["bm25"] } }

    [[variants]]
    name = "page chunks"
    settings = { chunk = { strategy = "page" } }

Variants that change only retrieval or answering share one collection; a variant that changes
parsing, chunking or embedding gets (and keeps, for the next run) a collection of its own.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from docsight.errors import ConfigurationError
from docsight.evaluation.runner import EvalConfig, Evaluator, Kind, Progress, Scope
from docsight.settings import Settings


class Variant(BaseModel):
    name: str
    settings: dict[str, dict[str, Any]] = Field(default_factory=dict)
    k: int | None = None
    scope: Scope | None = None
    #: False: ask image + text questions with their text only (the stream-A baseline).
    images: bool | None = None


class Grid(BaseModel):
    kind: Kind = "retrieval"
    dataset: Path
    docs: Path | None = None
    format: str | None = None
    scope: Scope = "document"
    k: int = 10
    limit: int | None = None
    images: bool = True
    variants: list[Variant]


def load_grid(path: Path) -> Grid:
    try:
        text = path.read_text()
        data = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"{path}: cannot read the grid ({exc})") from exc
    try:
        grid = Grid.model_validate(data)
    except ValidationError as exc:
        raise ConfigurationError(f"{path}: invalid grid: {exc}") from exc
    if not grid.variants:
        raise ConfigurationError(f"{path}: the grid has no variants")
    # Relative paths in the file are relative to the file, not to where the command runs.
    base = path.parent
    updates = {"dataset": base / grid.dataset}
    if grid.docs is not None:
        updates["docs"] = base / grid.docs
    return grid.model_copy(update=updates)


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "variant"


def run_grid(
    grid: Grid,
    out: Path,
    base: Settings | None = None,
    progress: Progress | None = None,
    on_variant: Any = None,
) -> dict[str, Any]:
    """Run every variant, write each run under ``out`` and a comparison report beside them."""
    from docsight.evaluation.report import compare_report

    base = base or Settings()
    run_dirs = []
    summaries = []
    for variant in grid.variants:
        overrides = {
            group: {**getattr(base, group).model_dump(), **values}
            for group, values in variant.settings.items()
        }
        try:
            settings = base.model_copy(
                update={g: type(getattr(base, g))(**v) for g, v in overrides.items()}
            )
        except (AttributeError, ValidationError) as exc:
            raise ConfigurationError(f"variant {variant.name!r}: invalid settings: {exc}") from exc
        config = EvalConfig(
            dataset=grid.dataset,
            docs=grid.docs,
            format=grid.format,
            scope=variant.scope or grid.scope,
            k=variant.k or grid.k,
            limit=grid.limit,
            images=grid.images if variant.images is None else variant.images,
            out=out / _slug(variant.name),
            label=variant.name,
        )
        if on_variant is not None:
            on_variant(variant.name)
        summary = Evaluator(config, settings).run(grid.kind, progress=progress)
        run_dirs.append(Path(summary["run_dir"]))
        summaries.append(summary)
    report = compare_report(run_dirs, out)
    return {"runs": summaries, "report": str(out / "report.md"), "markdown": report}
