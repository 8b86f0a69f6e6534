"""Words and sentences: the text vocabulary shared by chunking, answering and evaluation."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any


def word_count(text: str) -> int:
    return len(text.split())


@lru_cache(maxsize=1)
def _segmenter() -> Any:
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


#: pysbd's rules take time that grows faster than the text (minutes on a megabyte of "a. a. "),
#: so long text is segmented in windows of about this many characters, cut between sentences.
_SEGMENT_CHARS = 20_000
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s")


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (pysbd's rules handle abbreviations, decimals and initials)."""
    text = text.strip()
    if not text:
        return []
    segmenter = _segmenter()
    out: list[str] = []
    for window in _windows(text, _SEGMENT_CHARS):
        try:
            # The processed sentences, not ``segment()``: its character-span pass searches the
            # whole text once per sentence, quadratic on repetitive input. Stripped, the two agree.
            sentences = segmenter.processor(window).process()
        except Exception:  # pysbd fails on rare inputs; a chunker must not
            sentences = [window]
        out.extend(s.strip() for s in sentences if s.strip())
    return out


#: pysbd reads these as list items ("1.", "b)", "(iii)") and may split before them depending on
#: the items further on: a line that has any is split whole (:func:`leading_sentence`).
_LIST_ITEM = re.compile(
    r"(?:^|[\s(\-⁃])(?:\d{1,2}|[a-z]|[ivxlcdm]{1,6})(?:\.\s|\.\)|\)\s|\.$|\)$)", re.IGNORECASE
)
#: What pysbd ends a sentence at (full-width stops too), and the placeholders it swaps in and
#: back while it works (a line holding one of those comes back changed): a line with none of
#: these is one sentence as it is.
_TERMINATOR = re.compile(r"[.!?…。．！？∯∮♨☏☝♝♟♬♭✂⎋⌬☄☇☈☉ȸȹᓰᓱᓳᓴᓷᓸƪǃ]")
#: Quotes and brackets pysbd keeps a sentence together across: a shortened line must close all
#: it opens, or its sentences could end where the whole line's do not.
_PAIRED = (("(", ")"), ("[", "]"), ("“", "”"), ("‘", "’"), ("«", "»"))
#: How far past the candidate sentence a shortened line goes, so that pysbd sees its end as it
#: would in the whole line (its rules look a few characters ahead).
_LOOK_PAST = 40


def leading_sentence(line: str, min_words: int = 4) -> str | None:
    """The first of ``split_sentences(line)`` with at least ``min_words`` words, or ``None``.

    pysbd's cost grows with the text and a summary wants one sentence, so when the line has no
    list items, the candidate sentence ends well before the line does and the part up to there
    closes every quote and bracket it opens, only that part is split. On the 21,708 distinct
    lines of the dev reports and a generated 1,000-page report this gave the whole line's
    answer every time, in half the time (``benchmarks/results/large_pdf.md``)."""
    line = line.strip()
    if not line:
        return None
    # pysbd also ends a sentence at a line break: text of several lines is split whole.
    if "\n" not in line and "\r" not in line and not _LIST_ITEM.search(line):
        if not _TERMINATOR.search(line):
            return line if len(line.split()) >= min_words else None  # one sentence
        prefix = _leading_part(line, min_words)
        if prefix is not None:
            pieces = split_sentences(prefix)
            for i, sentence in enumerate(pieces[:-1]):  # the last may be cut short
                if len(sentence.split()) >= min_words:
                    # Taken only with some text after it in the part, as pysbd's look-ahead
                    # saw in the whole line; else the whole line decides.
                    if sum(len(p) for p in pieces[i + 1 :]) >= _LOOK_PAST // 2:
                        return sentence
                    break
    for sentence in split_sentences(line):
        if len(sentence.split()) >= min_words:
            return sentence
    return None


def _leading_part(line: str, min_words: int) -> str | None:
    """``line`` up to a little past its first possible sentence end with ``min_words`` words
    before it, cut at a space; ``None`` when that is most of the line or leaves a quote or
    bracket open."""
    for match in _SENTENCE_END.finditer(line):
        if len(line[: match.start()].split()) >= min_words:
            break
    else:
        return None
    stop = match.end() + _LOOK_PAST
    if stop >= len(line):
        return None
    cut = line.rfind(" ", match.end(), stop)
    prefix = line[:cut] if cut > match.end() else line[:stop]
    if prefix.count('"') % 2 or re.search(r"\s'", prefix):
        return None
    if any(prefix.count(a) != prefix.count(b) for a, b in _PAIRED):
        return None
    return prefix


def _windows(text: str, size: int) -> list[str]:
    """``text`` in pieces of at most about ``size`` characters, cut after a sentence end when
    there is one, else at a space."""
    pieces: list[str] = []
    start = 0
    while len(text) - start > size:
        end = start + size
        cut = -1
        for m in _SENTENCE_END.finditer(text, start + size // 2, end):
            cut = m.end()
        if cut < 0:
            cut = text.rfind(" ", start + size // 2, end) + 1 or end
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


def split_long_text(text: str, max_words: int) -> list[str]:
    """Pack sentences into pieces of at most ``max_words`` words (a longer sentence is cut)."""
    pieces: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in split_sentences(text):
        words = sentence.split()
        if len(words) > max_words:  # a run-on "sentence" (lists, tables flattened to text)
            if current:
                pieces.append(" ".join(current))
                current, count = [], 0
            # Cut by index: slicing off the head each time is quadratic in a megabyte line.
            cut = len(words) - len(words) % max_words
            pieces.extend(" ".join(words[k : k + max_words]) for k in range(0, cut, max_words))
            words = words[cut:]
        if count + len(words) > max_words and current:
            pieces.append(" ".join(current))
            current, count = [], 0
        if words:
            current.append(" ".join(words))
            count += len(words)
    if current:
        pieces.append(" ".join(current))
    return pieces


# --- terms: what lexical matching compares ----------------------------------------------------

#: An example of the answer's form, quoted in a question: ', e.g., ["9%","8%"]', 'for example,
#: "Page 17"', 'like [1, 2, 5]': a bracketed list, or quoted strings. Its words and numbers are
#: not what the question is about (its pages were not asked for, its numbers not stated).
FORM_EXAMPLE = re.compile(
    r",?\s*\(?\b(?:(?:e\.\s?g\.|for example|for instance)\s*,?:?\s*"
    r"(?:\[[^\]\n]*\]|[\"“'][^\"”'\n]*[\"”'](?:\s*,\s*[\"“'][^\"”'\n]*[\"”'])*)"
    r"|like\s*\[[^\]\n]*\])\)?",
    re.I,
)


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


#: Numbers as words, as counts are often written in prose ("six subskills", "three courses").
NUMBER_WORDS: dict[str, int] = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
}


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
