"""How strongly retrieved sources support a question.

Two signals, each in [0, 1]: *coverage*, the IDF-weighted share of the question's content words
(stemmed) that occur in the sources, and *similarity*, the best cosine between the question's and a
source's embedding. Their mean is the evidence score; below ``AnswerSettings.min_evidence`` the
question is answered "not answerable" instead of guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from docsight.document.text import STOPWORDS, content_terms, idf_weights, tokens
from docsight.encoders.base import Encoder

__all__ = [
    "SIMILARITY_WORDS",
    "STOPWORDS",
    "Evidence",
    "assess",
    "clip_words",
    "content_terms",
    "coverage",
    "measure",
    "tokens",
]


def coverage(question: str, texts: Sequence[str]) -> float:
    """Share of the question's content terms present in ``texts``; rare terms weigh more."""
    q_terms = set(content_terms(question))
    if not q_terms:
        return 0.0
    term_sets = [set(content_terms(t)) for t in texts]
    union = set().union(*term_sets) if term_sets else set()
    # Weights come from the sources themselves: a term in every source is less telling.
    weights = idf_weights(term_sets, q_terms)
    total = sum(weights.values())
    found = sum(w for t, w in weights.items() if t in union)
    return found / total if total else 0.0


@dataclass(frozen=True)
class Evidence:
    coverage: float
    similarity: float
    #: The question names pages its documents do not have ("page 120" of a 50-page deck).
    missing_pages: bool = False
    #: How many names and years the question has (``question.named_words``), and those of them
    #: its documents never mention.
    named: int = 0
    absent: tuple[str, ...] = ()
    #: The pages the question names ("on page 14", "the cover"), as (document id, 0-based page):
    #: what is printed there answers it, not a look-alike elsewhere.
    pages: tuple[tuple[str, int], ...] = ()

    @property
    def score(self) -> float:
        return 0.5 * self.coverage + 0.5 * self.similarity


def assess(
    question: str, texts: Sequence[str], similarities: np.ndarray | Sequence[float]
) -> Evidence:
    sims = np.asarray(similarities, dtype=np.float32)
    best = float(sims.max()) if sims.size else 0.0
    return Evidence(coverage=coverage(question, texts), similarity=max(0.0, min(1.0, best)))


#: Words of a source that the similarity reads. Encoding cost grows with length and a retrieved
#: chunk runs to the encoder's 256-token cap; its opening words say what it is about (MiniLM was
#: trained on 128-token inputs), and coverage still reads every word.
SIMILARITY_WORDS = 64


#: Dot leaders ("Net income........ $ 629,551") are one word but dozens of tokens each.
_LEADERS = re.compile(r"(?:\s?[.·…_]){4,}")


def clip_words(text: str, limit: int) -> str:
    """The first ``limit`` words of ``text`` (at most ``8 * limit`` characters: a run of numbers
    costs the encoder more tokens per word), dot leaders and runs of underscores removed."""
    words = _LEADERS.sub(" ", text).split(maxsplit=limit)
    clipped = " ".join(words[:limit])
    if len(clipped) > 8 * limit:
        clipped = clipped[: 8 * limit].rsplit(" ", 1)[0]
    return clipped


def measure(question: str, texts: Sequence[str], encoder: Encoder) -> Evidence:
    """Evidence of ``texts`` for ``question``, embedding both with ``encoder``."""
    if not texts:
        return Evidence(coverage=0.0, similarity=0.0)
    vectors = encoder.encode_documents([clip_words(t, SIMILARITY_WORDS) for t in texts])
    query = encoder.encode_queries([question])[0]
    return assess(question, texts, vectors @ query)
