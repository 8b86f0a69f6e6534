"""Per-question scores: page ranking, evidence regions, and answers.

Every function returns ``{metric name: value}`` for one question; the runner averages them. A
metric is left out (not scored as zero) when the question cannot be scored on it: no evidence
pages for ranking metrics, no regions for region recall, an unanswerable question for answer
accuracy against a gold answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from docsight.document.model import BBox
from docsight.evaluation.metrics import (
    answer_in_context,
    hit_at_k,
    mrr,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
)
from docsight.evaluation.types import EvalQuestion

#: A region counts as retrieved when this share of it lies inside a retrieved chunk's box.
REGION_COVERAGE = 0.5


def score_pages(retrieved: Sequence[str], q: EvalQuestion, k: int) -> dict[str, float]:
    """Ranking metrics over "doc#page" items against the question's evidence pages."""
    if not q.answerable or not q.evidence_pages or q.doc is None:
        return {}
    gold = {f"{q.doc}#{p}" for p in q.evidence_pages}
    metrics = {
        "recall@1": recall_at_k(retrieved, gold, 1),
        "recall@5": recall_at_k(retrieved, gold, 5),
        f"recall@{k}": recall_at_k(retrieved, gold, k),
        "precision@5": precision_at_k(retrieved, gold, 5),
        "ndcg@10": ndcg_at_k(retrieved, gold, 10),
        "mrr": mrr(retrieved, gold),
        "hit@5": hit_at_k(retrieved, gold, 5),
    }
    return {name: round(value, 4) for name, value in metrics.items()}


def _covered(region: BBox, box: BBox | None) -> bool:
    if box is None or region.area <= 0:
        return False
    x0, y0 = max(region.x0, box.x0), max(region.y0, box.y0)
    x1, y1 = min(region.x1, box.x1), min(region.y1, box.y1)
    inter = max(0.0, x1 - x0) * max(0.0, y1 - y0)
    return inter / region.area >= REGION_COVERAGE


def score_chunks(hits: Sequence[Any], q: EvalQuestion) -> dict[str, float]:
    """Element-level recall: the share of labelled evidence regions that the top-5 chunks cover."""
    if not q.regions or q.doc is None:
        return {}
    top = [h for h in hits[:5] if h.doc_name == q.doc]
    found = sum(
        1 for r in q.regions if any(h.page == r.page and _covered(r.bbox, h.bbox) for h in top)
    )
    return {"region_recall@5": round(found / len(q.regions), 4)}


def score_answer(
    answer: Any, q: EvalQuestion, judge: Any = None
) -> tuple[dict[str, float], list[str]]:
    """Answer metrics, answer-in-context@5, abstention flags and, with a judge, judged scores."""
    from docsight.evaluation.answers import (
        exact_match,
        is_abstention,
        mmlongbench_score,
        token_f1,
        token_recall,
    )
    from docsight.evaluation.strict import strict_score

    notes: list[str] = []
    text = answer.answer or ""
    abstained = (not answer.answerable) or is_abstention(text)
    metrics: dict[str, float] = {
        "abstained": float(abstained),
        "unanswerable": float(not q.answerable),
        "mmlongbench_acc": float(
            mmlongbench_score(text, q.answer, q.answer_format, question=q.question)
        ),
        "mmlongbench_strict": round(float(strict_score(text, q.answer, q.answer_format)), 4),
    }
    if q.answerable:
        metrics["exact_match"] = float(exact_match(text, q.answer))
        metrics["token_f1"] = round(float(token_f1(text, q.answer)), 4)
        metrics["token_recall"] = round(float(token_recall(text, q.answer)), 4)
        top5 = "\n".join(s.text for s in answer.sources if s.rank <= 5)
        metrics["answer_in_context@5"] = float(answer_in_context(q.answer, top5))
        every = "\n".join(s.text for s in answer.sources)
        metrics["answer_in_sources"] = float(answer_in_context(q.answer, every))
        metrics["source_chars"] = float(len(every))
    if judge is not None and q.answerable and not abstained:
        judged = judge.score(q.question, q.answer, text)
        if judged is None:
            notes.append("judge: no usable score")
        else:
            metrics["judge_score"] = float(judged.score)
            metrics["judge_correct"] = float(judged.correct)
        facts = judge.atomic_facts(q.question, q.answer, text)
        if facts is None:
            notes.append("judge: no usable atomic facts")
        else:
            metrics["fact_precision"] = round(facts.precision, 4)
            metrics["fact_recall"] = round(facts.recall, 4)
            metrics["fact_f1"] = round(facts.f1, 4)
        cited = {c.n for c in answer.citations}
        sources = [s.text for s in answer.sources if s.n in cited]
        if sources:
            faithful = judge.faithfulness(text, sources)
            if faithful is None:
                notes.append("judge: no usable faithfulness")
            else:
                metrics["faithfulness"] = round(faithful, 4)
    return metrics, notes


def abstention_summary(flags: Sequence[tuple[float, float]]) -> dict[str, float]:
    """Precision, recall and F1 of abstaining on unanswerable questions, from (abstained,
    unanswerable) pairs."""
    from docsight.evaluation.answers import abstention_metrics

    pairs = [(bool(a), bool(u)) for a, u in flags]
    return {f"abstention_{k}": round(float(v), 4) for k, v in abstention_metrics(pairs).items()}
