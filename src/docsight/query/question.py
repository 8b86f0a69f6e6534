"""Questions as they arrive: from a terminal, a file or a caller, not always valid text.

On Linux a command-line argument is bytes; Python hands bytes that are not UTF-8 over as lone
surrogates, which no tokenizer or index accepts. They are replaced (U+FFFD) with a warning rather
than refused, so a question pasted from a mis-encoded file still gets an answer.
"""

from __future__ import annotations

from docsight.errors import UsageError

REPLACEMENT = "\ufffd"


def clean_question(text: object) -> tuple[str, str | None]:
    """The question as valid Unicode, and a warning when something had to be replaced."""
    if not isinstance(text, str):
        raise UsageError(f"a question must be text, not {type(text).__name__}")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return text, None
    # surrogateescape turns the argv escapes back into their bytes, surrogatepass keeps any other
    # lone surrogate as its (invalid) encoding; decoding with "replace" then marks each one.
    raw = b"".join(
        ch.encode("utf-8", "surrogateescape" if "\udc80" <= ch <= "\udcff" else "surrogatepass")
        for ch in text
    )
    cleaned = raw.decode("utf-8", "replace")
    replaced = cleaned.count(REPLACEMENT) - text.count(REPLACEMENT)
    if replaced <= 0:  # the escaped bytes were valid UTF-8 after all
        return cleaned, None
    return cleaned, (
        f"the question held {replaced} byte(s) that are not valid UTF-8; "
        f"they were replaced with {REPLACEMENT!r}"
    )
