"""Turn a query image into text streams: route it, parse it by type, caption it; all cached.

Everything derived from an image is stored in the collection's artifact cache, keyed by the image's
hash and the producer's identity, so a repeated question makes no OCR or vision-model call:

* the routing under ``image-router/<strategy>`` (and the routing settings), so router ablations
  never read each other's answers;
* each typed text under ``image-parser/<type>`` keyed by (image hash, parser version or model);
* the caption under ``image-caption/<captioner version>`` keyed by (image hash, routed types).

The router and the typed parsers share one decoded, OCR'd image (OCR lines are cached by pixel
hash too). Parsers run in parallel, each with a time budget; a parser that fails or overruns is
reported in ``warnings`` and the others still count.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docsight.cache import JsonCache, content_key
from docsight.errors import DocsightError
from docsight.query.image import (
    Captioner,
    QueryImage,
    Router,
    Routing,
    TypedParser,
    TypedText,
    load_query_image,
    symbolic_block,
)
from docsight.settings import ImageQuerySettings

#: Bump when the meaning of cached analysis entries changes.
ANALYSIS_VERSION = "1"


@dataclass(frozen=True)
class ImageAnalysis:
    """What a query image contributes to search: its types, typed text and caption."""

    source: str
    digest: str
    routing: Routing
    typed: tuple[TypedText, ...]
    caption: str | None
    warnings: tuple[str, ...] = ()
    #: Seconds per step ("load", "route", "parse", "caption").
    timings: dict[str, float] = field(default_factory=dict)
    #: Steps answered from the cache, e.g. {"route": True, "parse:chart": True, "caption": False}.
    cached: dict[str, bool] = field(default_factory=dict)

    @property
    def symbolic(self) -> str:
        """Typed texts with upper-case type tags (``[CHART] ...``): stream B's addition."""
        return symbolic_block(list(self.typed))

    @property
    def warm(self) -> bool:
        """True when every step came from the cache (no OCR or model call was needed)."""
        return bool(self.cached) and all(self.cached.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "digest": self.digest,
            "types": [t.model_dump() for t in self.routing.types],
            "router": self.routing.strategy,
            "router_fallback": self.routing.fallback,
            "typed": [t.model_dump() for t in self.typed],
            "symbolic": self.symbolic,
            "caption": self.caption,
            "warnings": list(self.warnings),
            "timings": self.timings,
            "cached": self.cached,
        }


class ImageQueryAnalyzer:
    """Route, parse and caption query images. Cheap to construct; models load on first use."""

    def __init__(
        self,
        settings: ImageQuerySettings,
        *,
        chat: Any = None,
        cache: JsonCache | None = None,
        router: Router | None = None,
        parsers: dict[str, TypedParser] | None = None,
        captioner: Captioner | None = None,
    ) -> None:
        self.settings = settings
        self.chat = chat
        self.cache = cache
        self._router = router
        self._parsers = parsers
        self._captioner = captioner
        self._captioner_built = captioner is not None

    # --- parts (lazy) --------------------------------------------------------------------------

    @property
    def router(self) -> Router:
        if self._router is None:
            from docsight.query.router import create_router

            self._router = create_router(self.settings, self.chat)
        return self._router

    @property
    def parsers(self) -> dict[str, TypedParser]:
        if self._parsers is None:
            from docsight.query.typed import create_parsers

            self._parsers = create_parsers(self.settings, self.chat)
        return self._parsers

    @property
    def captioner(self) -> Captioner | None:
        if not self._captioner_built:
            from docsight.query.typed import create_captioner

            self._captioner = create_captioner(self.settings, self.chat)
            self._captioner_built = True
        return self._captioner

    # --- analysis ------------------------------------------------------------------------------

    def analyze(self, source: str | Path | bytes) -> ImageAnalysis:
        timings: dict[str, float] = {}
        cached: dict[str, bool] = {}
        warnings: list[str] = []
        started = time.perf_counter()
        image = _LazyImage(source, self.settings, self.cache)
        digest = image.digest
        timings["load"] = _since(started)

        started = time.perf_counter()
        routing, cached["route"] = self._route(image)
        timings["route"] = _since(started)
        if routing.fallback:
            warnings.append(
                f"the router's answer was unusable; the image is read as a {routing.top.type}"
            )

        started = time.perf_counter()
        typed = self._parse(image, routing, cached, warnings)
        timings["parse"] = _since(started)

        started = time.perf_counter()
        caption = self._caption(image, routing, cached, warnings)
        timings["caption"] = _since(started)
        timings["load"] += image.load_seconds
        if image.loaded and not image.value.ocr:
            warnings.append(
                "no OCR for the query image (install docsight[ocr]); it is read from pixels only"
            )
        return ImageAnalysis(
            source=image.name,
            digest=digest,
            routing=routing,
            typed=tuple(typed),
            caption=caption,
            warnings=tuple(warnings),
            timings=timings,
            cached=cached,
        )

    def _route(self, image: _LazyImage) -> tuple[Routing, bool]:
        router = self.router
        namespace = f"image-router/{router.strategy}"
        s = self.settings
        key = content_key(
            ANALYSIS_VERSION, image.digest, s.max_types, s.min_confidence, s.random_seed
        )
        hit = self.cache.get(namespace, key) if self.cache is not None else None
        if hit is not None:
            return Routing.model_validate(hit), True
        routing = router.route(image.value)
        if self.cache is not None and not routing.fallback:
            # A fallback may come from a passing endpoint fault: ask again next time.
            self.cache.put(namespace, key, routing.model_dump())
        return routing, False

    def _parse(
        self,
        image: _LazyImage,
        routing: Routing,
        cached: dict[str, bool],
        warnings: list[str],
    ) -> list[TypedText]:
        parsers = self.parsers
        wanted: list[str] = [t.type for t in routing.types if t.type in parsers]
        skipped = [t.type for t in routing.types if t.type not in parsers]
        if skipped:
            warnings.append(f"no parser enabled for {', '.join(skipped)}")
        results: dict[str, TypedText | None] = {}
        missing: list[str] = []
        keys = {
            kind: content_key(ANALYSIS_VERSION, image.digest, parsers[kind].version)
            for kind in wanted
        }
        for kind in wanted:
            hit = (
                self.cache.get(f"image-parser/{kind}", keys[kind])
                if self.cache is not None
                else None
            )
            if hit is not None:
                results[kind] = TypedText.model_validate(hit) if hit.get("text") else None
                cached[f"parse:{kind}"] = True
            else:
                missing.append(kind)
                cached[f"parse:{kind}"] = False
        if missing:
            loaded = image.value  # decode and OCR once, before the threads share it
            # One deadline for all parsers; no ``with`` block, whose exit would wait for a
            # parser that overran.
            pool = ThreadPoolExecutor(max_workers=len(missing), thread_name_prefix="typed-parser")
            deadline = time.monotonic() + self.settings.parser_timeout
            try:
                futures = {kind: pool.submit(parsers[kind].parse, loaded) for kind in missing}
                for kind, future in futures.items():
                    try:
                        out = future.result(timeout=max(0.0, deadline - time.monotonic()))
                    except FutureTimeout:
                        warnings.append(
                            f"the {kind} parser took longer than {self.settings.parser_timeout:g} s"
                        )
                        continue
                    except DocsightError as exc:
                        warnings.append(f"the {kind} parser failed: {exc}")
                        continue
                    results[kind] = out
                    if self.cache is not None:
                        # "Nothing of this type here" is an answer worth keeping too.
                        value = out.model_dump() if out is not None else {"text": ""}
                        self.cache.put(f"image-parser/{kind}", keys[kind], value)
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
        return [t for kind in wanted if (t := results.get(kind)) is not None]

    def _caption(
        self,
        image: _LazyImage,
        routing: Routing,
        cached: dict[str, bool],
        warnings: list[str],
    ) -> str | None:
        captioner = self.captioner
        if captioner is None:
            return None
        namespace = f"image-caption/{captioner.version}"
        key = content_key(ANALYSIS_VERSION, image.digest, [t.type for t in routing.types])
        hit = self.cache.get(namespace, key) if self.cache is not None else None
        if hit is not None:
            cached["caption"] = True
            return str(hit["caption"]) or None
        cached["caption"] = False
        try:
            caption = captioner.caption(image.value, routing)
        except DocsightError as exc:
            warnings.append(f"the captioner failed: {exc}")
            return None
        if self.cache is not None and caption is not None:
            self.cache.put(namespace, key, {"caption": caption})
        return caption


class _LazyImage:
    """The query image's bytes and hash at once; pixels and OCR only when a step needs them."""

    def __init__(
        self, source: str | Path | bytes, settings: ImageQuerySettings, cache: JsonCache | None
    ) -> None:
        from docsight.document.ids import bytes_sha256
        from docsight.query.image import read_image_bytes

        self.name, self._data = read_image_bytes(source, settings)
        self.digest = bytes_sha256(self._data)
        self._settings = settings
        self._cache = cache
        self._value: QueryImage | None = None
        self.load_seconds = 0.0

    @property
    def loaded(self) -> bool:
        return self._value is not None

    @property
    def value(self) -> QueryImage:
        if self._value is None:
            started = time.perf_counter()
            self._value = load_query_image(self._data, self._settings, self._cache, name=self.name)
            self.load_seconds = _since(started)
        return self._value


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 4)
