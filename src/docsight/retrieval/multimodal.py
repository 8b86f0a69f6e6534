"""Image + text questions searched as three text streams fused at the score level (VISA).

Stream A is the question alone, B the question plus the image's typed text (the symbolic block),
C the question plus the image's caption. Each stream is an ordinary hybrid search against the same
index, so documents are never re-encoded for images; the streams are then fused either by
reciprocal rank (``rrf``) or by a weighted sum of min-max normalised scores (``weighted``).

The weights follow the router: the more confident it is of a structure-friendly type (chart,
table, code, ...), the more B counts; the more it believes in a photograph, the more C counts.
A keeps at least ``min_weight_a``, so a misleading image can pull results only so far from what
the question alone finds. A stream that adds nothing to the question (no typed text, no caption)
is not searched, and its weight goes to the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from docsight.query.analyze import ImageAnalysis
from docsight.query.image import STRUCTURED_TYPES, Routing
from docsight.retrieval.fusion import reciprocal_rank_fusion
from docsight.retrieval.hit import Hit
from docsight.settings import ImageQuerySettings

STREAMS = ("A", "B", "C")
Key = tuple[str, ...]


@dataclass(frozen=True)
class StreamPlan:
    """The text each stream searches and its fusion weight."""

    queries: dict[str, str]
    weights: dict[str, float]


def _clip_words(text: str, limit: int) -> str:
    words = text.split()
    return " ".join(words[:limit])


def stream_texts(
    question: str, analysis: ImageAnalysis, settings: ImageQuerySettings
) -> dict[str, str]:
    """The query of every enabled stream that differs from the question alone."""
    question = question.strip()
    extra = {
        "B": _clip_words(analysis.symbolic, settings.max_stream_words),
        "C": _clip_words(analysis.caption or "", settings.max_stream_words),
    }
    queries: dict[str, str] = {}
    for name in settings.streams:
        if name == "A":
            if question:
                queries["A"] = question
        elif extra[name]:
            queries[name] = f"{question}\n{extra[name]}".strip()
    if not queries and question:
        queries["A"] = question  # nothing else to search with
    return queries


def stream_weights(
    routing: Routing, present: Sequence[str], settings: ImageQuerySettings
) -> dict[str, float]:
    """Weights of the present streams, summing to 1, with A at least ``min_weight_a``."""
    structured = min(1.0, sum(t.confidence for t in routing.types if t.type in STRUCTURED_TYPES))
    photo = min(1.0, sum(t.confidence for t in routing.types if t.type == "photograph"))
    # B and C split what A leaves: B in proportion to structure, C to photographs; an even split
    # when the router is sure of neither.
    raw = {"B": 0.5 + 0.5 * structured - 0.5 * photo, "C": 0.5 - 0.5 * structured + 0.5 * photo}
    raw = {name: max(0.05, value) for name, value in raw.items()}
    others = {name: raw[name] for name in present if name != "A"}
    if "A" not in present:
        total = sum(others.values())
        return {name: value / total for name, value in others.items()} if total else {}
    if not others:
        return {"A": 1.0}
    share_a = settings.min_weight_a
    total = sum(others.values())
    weights = {"A": share_a}
    weights.update({name: (1.0 - share_a) * value / total for name, value in others.items()})
    return weights


def plan_streams(
    question: str, analysis: ImageAnalysis, settings: ImageQuerySettings
) -> StreamPlan:
    queries = stream_texts(question, analysis, settings)
    return StreamPlan(queries, stream_weights(analysis.routing, list(queries), settings))


def hit_key(hit: Hit) -> Key:
    """What identifies a result across streams: the chunk, or the page for page results."""
    if hit.unit == "page" or hit.chunk_id is None:
        return ("page", hit.doc_id, str(hit.page))
    return ("chunk", hit.chunk_id)


def _minmax(hits: Sequence[Hit]) -> dict[Key, float]:
    if not hits:
        return {}
    scores = [h.score for h in hits]
    lo, hi = min(scores), max(scores)
    if hi <= lo:
        return {hit_key(h): 1.0 for h in hits}
    return {hit_key(h): (h.score - lo) / (hi - lo) for h in hits}


def fuse(
    results: Mapping[str, Sequence[Hit]],
    weights: Mapping[str, float],
    mode: str,
    rrf_k: int = 60,
) -> list[tuple[Key, float]]:
    """Fused (key, score) pairs, best first. Ties keep stream A's order, then B's, then C's."""
    if mode == "rrf":
        rankings = {name: [hit_key(h) for h in hits] for name, hits in results.items()}
        return reciprocal_rank_fusion(rankings, k=rrf_k)
    if mode != "weighted":
        raise ValueError(f"unknown fusion mode {mode!r}")
    fused: dict[Key, float] = {}
    first: dict[Key, int] = {}
    for name in STREAMS:
        if name not in results:
            continue
        for key, value in _minmax(results[name]).items():
            fused[key] = fused.get(key, 0.0) + weights.get(name, 0.0) * value
            first.setdefault(key, len(first))
    return sorted(fused.items(), key=lambda kv: (-kv[1], first[kv[0]]))


def search_streams(
    plan: StreamPlan,
    search: Callable[[str, int], list[Hit]],
    k: int,
    settings: ImageQuerySettings,
    candidates: int,
) -> list[Hit]:
    """Search each stream with ``search(text, n)``, fuse, and return the top ``k`` hits."""
    results = {name: search(text, max(k, candidates)) for name, text in plan.queries.items()}
    if list(results) == ["A"]:
        return results["A"][:k]
    fused = fuse(results, plan.weights, settings.fusion, settings.rrf_k)[:k]
    by_key: dict[Key, Hit] = {}
    per_stream: dict[Key, dict[str, float]] = {}
    per_rank: dict[Key, dict[str, int]] = {}
    for name in STREAMS:
        for hit in results.get(name, []):
            key = hit_key(hit)
            by_key.setdefault(key, hit)
            per_stream.setdefault(key, {})[f"stream_{name}"] = hit.score
            per_rank.setdefault(key, {})[f"stream_{name}"] = hit.rank
    out: list[Hit] = []
    for rank, (key, score) in enumerate(fused, start=1):
        hit = by_key[key]
        out.append(
            hit.model_copy(
                update={
                    "rank": rank,
                    "score": score,
                    "scores": {**hit.scores, **per_stream[key]},
                    "ranks": {**hit.ranks, **per_rank[key]},
                }
            )
        )
    return out


def question_with_image(
    question: str, analysis: ImageAnalysis, settings: ImageQuerySettings
) -> str:
    """The question as an answerer sees it: followed by what the image shows, marked as such."""
    parts = [question.strip(), "", "(The question comes with an image. What it shows:"]
    if analysis.caption:
        parts.append(_clip_words(analysis.caption, settings.max_stream_words))
    if analysis.symbolic:
        parts.append(_clip_words(analysis.symbolic, settings.max_stream_words))
    if len(parts) == 3:
        return question
    parts[-1] += ")"
    return "\n".join(parts)
