"""Printed page labels ("17", "6985") inferred from page-number furniture.

Documents often number pages differently from their position in the file: a report whose page "1"
follows a cover and a contents page, proceedings that continue a volume's numbering. When most
numbered pages agree on one offset, every page gets a label from it; pages whose furniture shows
another number (spreads with two printed pages) keep what they show too.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping

from docsight.document.model import Element

_PAGE_NUMBER = re.compile(
    r"^(?:page\s*)?[-–—(]?\s*(\d{1,5})\s*[-–—)]?(?:\s*(?:of|/)\s*\d{1,5})?$", re.IGNORECASE
)
_MIN_SUPPORT = 3


def printed_numbers(furniture: Iterable[Element]) -> dict[int, set[int]]:
    """Page numbers printed in headers and footers, by 0-based page."""
    found: dict[int, set[int]] = defaultdict(set)
    for element in furniture:
        match = _PAGE_NUMBER.match(element.text.strip())
        if match:
            found[element.page].add(int(match.group(1)))
    return dict(found)


def labels_from_numbers(shown: Mapping[int, set[int]], page_count: int) -> list[list[str]]:
    """Labels for each page (possibly empty lists) from the numbers its furniture prints
    (:func:`printed_numbers`)."""
    labels: list[list[str]] = [[] for _ in range(page_count)]
    offsets = Counter(n - (page + 1) for page, numbers in shown.items() for n in numbers)
    if offsets:
        offset, support = offsets.most_common(1)[0]
        if support >= _MIN_SUPPORT and support * 2 >= sum(offsets.values()):
            for page in range(page_count):
                if page + 1 + offset >= 1:
                    labels[page].append(str(page + 1 + offset))
    for page, numbers in shown.items():
        if 0 <= page < page_count:
            for n in sorted(numbers):
                if str(n) not in labels[page]:
                    labels[page].append(str(n))
    return labels
