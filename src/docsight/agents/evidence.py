"""How strongly retrieved sources support a question.

Two signals, each in [0, 1]: *coverage*, the IDF-weighted share of the question's content words
(stemmed) that occur in the sources, and *similarity*, the best cosine between the question's and a
source's embedding. Their mean is the evidence score; below ``AnswerSettings.min_evidence`` the
question is answered "not answerable" instead of guessed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from docsight.encoders.base import Encoder

_TOKEN = re.compile(r"[^\W_]+(?:[.,'’][^\W_]+)*", re.UNICODE)

# Function words and question scaffolding that say nothing about the topic.
_STOPWORD_TEXT = """
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how i if in into is it its itself just
me more most my myself no nor not now of off on once only or other our ours ourselves out over
own same she should so some such than that the their theirs them themselves then there these
they this those through to too under until up very was we were what when where which while who
whom why will with would you your yours yourself yourselves according among also amongst per via
many much tell list give show find name describe explain mention mentioned provide provided
answer question document documents report paper page pages section shown shows
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    import snowballstemmer

    return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens; numbers keep inner separators ("3.5", "1,200")."""
    return [t.lower().replace("’", "'") for t in _TOKEN.findall(text)]


def content_terms(text: str) -> list[str]:
    """Stemmed tokens without stopwords, in order, duplicates kept."""
    out = []
    for token in tokens(text):
        token = token.removesuffix("'s")
        if token in STOPWORDS or (len(token) < 2 and not token.isdigit()):
            continue
        out.append(_stem(token))
    return out


def idf_weights(term_sets: Sequence[set[str]], terms: Iterable[str]) -> dict[str, float]:
    """Smoothed IDF of ``terms`` over a small collection of term sets."""
    n = len(term_sets)
    weights = {}
    for term in set(terms):
        df = sum(1 for s in term_sets if term in s)
        weights[term] = math.log(1.0 + (n + 1) / (df + 0.5))
    return weights


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

    @property
    def score(self) -> float:
        return 0.5 * self.coverage + 0.5 * self.similarity


def assess(
    question: str, texts: Sequence[str], similarities: np.ndarray | Sequence[float]
) -> Evidence:
    sims = np.asarray(similarities, dtype=np.float32)
    best = float(sims.max()) if sims.size else 0.0
    return Evidence(coverage=coverage(question, texts), similarity=max(0.0, min(1.0, best)))


def measure(question: str, texts: Sequence[str], encoder: Encoder) -> Evidence:
    """Evidence of ``texts`` for ``question``, embedding both with ``encoder``."""
    if not texts:
        return Evidence(coverage=0.0, similarity=0.0)
    vectors = encoder.encode_documents(list(texts))
    query = encoder.encode_queries([question])[0]
    return assess(question, texts, vectors @ query)
