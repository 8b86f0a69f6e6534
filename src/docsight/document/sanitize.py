"""Make document- and model-derived text safe to show, in a terminal and as Markdown.

Documents are untrusted, and so is whatever a language model writes after reading them. Two pure
functions, each linear in the length of its input, make such text inert where it is shown:

* :func:`terminal_text` for text printed to a terminal (no escape sequences, no bidi tricks);
* :func:`inert_markdown` for text that a Markdown viewer may render (a chat UI, a web page, a
  report on a code host): it fetches nothing and runs nothing there.
"""

from __future__ import annotations

import html
import re
import string

__all__ = ["inert_markdown", "terminal_text"]

# --- terminals -----------------------------------------------------------------------------------

_BIDI_CONTROLS = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_TERMINAL_DROP: dict[int, None] = dict.fromkeys(
    [
        *(c for c in range(0x20) if c not in (0x09, 0x0A)),
        0x7F,
        *range(0x80, 0xA0),
        *_BIDI_CONTROLS,
    ]
)


def terminal_text(text: str) -> str:
    """``text`` without the characters a terminal would obey instead of showing.

    Removed: C0 controls except newline and tab (ESC starts ANSI and OSC sequences, such as
    colours, title changes and OSC 8 hyperlinks; CR and backspace overwrite what was shown), DEL,
    the C1 controls U+0080-U+009F (U+009B is a one-byte CSI, U+009D a one-byte OSC), and the bidi
    embeddings, overrides and isolates U+202A-U+202E and U+2066-U+2069, which make the text shown
    differ from the text read. Every other character, printable Unicode included, is kept as is.
    """
    return text.translate(_TERMINAL_DROP)


# --- Markdown ------------------------------------------------------------------------------------

#: Link schemes that stay clickable. A URL without a scheme (relative, fragment) is kept too: it
#: can neither run script nor name a local file.
SAFE_SCHEMES = frozenset({"http", "https", "mailto"})

_ASCII_PUNCT = frozenset(string.punctuation)
_ASCII_LETTERS = frozenset(string.ascii_letters)
_SCHEME_CHARS = frozenset(string.ascii_letters + string.digits + "+.-")
# After "<" these start an HTML tag, comment, declaration or processing instruction in CommonMark
# (inline and block) as in browsers; "<" before anything else is plain text (a < b, x <= 3).
_TAG_START = frozenset(string.ascii_letters + "/!?")
_SPECIAL = re.compile(r"[\\<!\]]")
# A CommonMark URI autolink (kept only for SAFE_SCHEMES), minus those holding a backslash, "!"
# or "]": a kept autolink then holds nothing this pass would rewrite, so it is copied whole and
# stays inert even where a renderer does not read it as an autolink (inside a code span, say).
_AUTOLINK = re.compile(r"<([A-Za-z][A-Za-z0-9+.\-]{1,31}):[^\x00-\x20<>\\!\]]*+>")
# Entity references as lenient as browsers (the semicolon optional), so no spelling hides a scheme.
_ENTITY = re.compile(r"&(?:#[0-9]{1,8}|#[xX][0-9a-fA-F]{1,7}|[A-Za-z][A-Za-z0-9]{0,31});?")
# Escape pairs and brackets, for pairing "[" with "]".
_BRACKET = re.compile(r"\\[\s\S]|[\[\]]")
# "(destination 'title')" after "]": the inline link tail, one level of parentheses inside the
# destination. Possessive quantifiers never backtrack, and every match runs on a bounded window.
_WS = r"[ \t]*+(?:\r\n?|\n)?[ \t]*+"
_WS1 = r"(?:[ \t]++(?:\r\n?|\n)?[ \t]*+|(?:\r\n?|\n)[ \t]*+)"
_DEST = (
    r"(?:<(?:[^<>\r\n\\]|\\.)*+>"
    r"|(?:[^\x00-\x20()\\]|\\.|\((?:[^\x00-\x20()\\]|\\.)*+\))*+)"
)
_TITLE = r"""(?:"(?:[^"\\]|\\.)*+"|'(?:[^'\\]|\\.)*+'|\((?:[^()\\]|\\.)*+\))"""
_TAIL = re.compile(rf"\({_WS}{_DEST}(?:{_WS1}{_TITLE})?{_WS}\)", re.S)
_LABEL = re.compile(r"\[((?:[^\[\]\\]|\\.){0,999}+)\]", re.S)
# A link reference definition's label, after optional blockquote and list markers.
_DEFINITION = re.compile(
    r"^(?:[ \t>]|[-+*][ \t]|[0-9]{1,9}[.)][ \t])*+\[((?:[^\[\]\\]|\\.){1,999}+)\]:", re.M
)
# Characters dropped from an image's alt text so that the "[image: ...]" left in its place is
# plain words, whatever the alt text held.
_ALT_MARKUP = re.compile(r"[\\`*_~<>!\[\]()&|]")
#: Raw characters examined for a link's scheme; past that, a link counts as unsafe.
_SCHEME_WINDOW = 256
#: Characters an inline link tail may span to be removed whole (longer ones are only disarmed).
_TAIL_WINDOW = 8192


def inert_markdown(text: str) -> str:
    """``text`` rewritten so that no Markdown renderer fetches or runs anything from it.

    Rendered by any CommonMark or GFM renderer, even one that passes raw HTML through, the
    result shows the same words, contains no raw HTML, no images, and links only to http(s),
    mailto or scheme-less (relative) URLs:

    * ``<`` that would start an HTML tag, comment or declaration is backslash-escaped (``\\<``);
      autolinks ``<https://...>`` stay when their scheme is http, https or mailto;
    * inline images ``![alt](url)`` and reference images ``![alt][ref]`` (``ref`` defined)
      become the text ``[image: alt]``; any other ``![`` gets its ``!`` escaped, which leaves at
      most a link (so ``Wow![1]`` keeps its ``[1]``);
    * inline links whose URL has another scheme (``javascript:``, ``data:``, ``file:``, also when
      spelled with entities, escapes, controls or in upper case) lose the ``(url)`` and keep
      their text; link reference definitions with such a URL are escaped into plain text.

    Everything else is left alone: prose, ``[n]`` citation markers, ``a < b``, tables, emphasis.
    Backslash escapes are invisible when rendered but do show inside code spans and code blocks,
    where the text is escaped like anywhere else (it is never parsed as HTML there either, so
    this costs looks, not safety). Applying the function twice changes nothing more.
    """
    if not any(c in text for c in "<!]"):
        return text
    return _Rewriter(text).run()


def _plain_alt(alt: str) -> str:
    return " ".join(_ALT_MARKUP.sub(" ", alt).split())


def _label_key(label: str) -> str:
    """A link label as CommonMark matches it: case-folded, inner whitespace collapsed."""
    return " ".join(label.split()).casefold()


def _link_scheme(s: str, i: int) -> str | None:
    """The scheme of the link destination that starts at ``s[i]`` ("" for none), lower-cased.

    Decodes what a renderer decodes (backslash escapes, entity references) and ignores what a
    browser ignores (ASCII tabs, newlines and other controls; leading spaces), so that
    ``java&#x73;cript:``, ``JAVASCRIPT:`` and ``  java\\tscript:`` all read as ``javascript``.
    None when the window ends before the scheme does: the caller must then assume the worst.
    """
    n = len(s)
    end = min(n, i + _SCHEME_WINDOW)
    name: list[str] = []
    while i < end:
        c = s[i]
        if c == "\\" and i + 1 < n and s[i + 1] in _ASCII_PUNCT:
            decoded, i = s[i + 1], i + 2
        elif c == "&" and (entity := _ENTITY.match(s, i)):
            decoded, i = html.unescape(entity.group()), entity.end()
        else:
            decoded, i = c, i + 1
        for ch in decoded:
            if ch == " " and name:
                return ""  # a space ends a destination and is never part of a scheme
            if ch <= " " or ch == "\x7f" or (ch == "<" and not name):
                continue
            if ch == ":":
                return "".join(name).lower()
            if ch in _SCHEME_CHARS and (name or ch in _ASCII_LETTERS):
                name.append(ch)
                continue
            return ""
    return "" if i >= n else None


def _is_safe_destination(s: str, i: int) -> bool:
    scheme = _link_scheme(s, i)
    return scheme is not None and (scheme == "" or scheme in SAFE_SCHEMES)


class _Rewriter:
    """One left-to-right pass over the text; every character that reaches the output is examined.

    The pass keeps no model of block structure or code spans: it escapes wherever a construct
    *could* start, so a renderer that parses the result differently still finds nothing live.
    Backslash escape pairs are copied as they are (``\\<`` is already text).
    """

    def __init__(self, text: str) -> None:
        self.s = text
        self.out: list[str] = []
        self._pairs: dict[int, int] | None = None
        self._definitions: set[str] | None = None

    def run(self) -> str:
        s, out = self.s, self.out
        n = len(s)
        i = 0
        while i < n:
            found = _SPECIAL.search(s, i)
            if found is None:
                out.append(s[i:])
                break
            j = found.start()
            if j > i:
                out.append(s[i:j])
            c = s[j]
            if c == "\\":
                step = 2 if j + 1 < n and s[j + 1] in _ASCII_PUNCT else 1
                out.append(s[j : j + step])
                i = j + step
            elif c == "<":
                i = self._angle(j)
            elif c == "!":
                i = self._bang(j)
            else:
                out.append("]")
                i = self._after_bracket(j + 1)
        return "".join(out)

    def _angle(self, j: int) -> int:
        s = self.s
        autolink = _AUTOLINK.match(s, j)
        if autolink is not None and autolink.group(1).lower() in SAFE_SCHEMES:
            self.out.append(autolink.group())
            return autolink.end()
        if j + 1 < len(s) and s[j + 1] in _TAG_START:
            # A backslash escape rather than "&lt;": both work in every CommonMark renderer, but
            # the escape adds one character and still reads as the original where the text is
            # shown unrendered (the CLI prints answers as they are: "\<b>", not "&lt;b>").
            self.out.append("\\<")
        else:
            self.out.append("<")
        return j + 1

    def _bang(self, j: int) -> int:
        s, n = self.s, len(self.s)
        if j + 1 >= n or s[j + 1] != "[":
            self.out.append("!")
            return j + 1
        close = self._bracket_pairs().get(j + 1)
        end = None
        if close is not None and close + 1 < n:
            after = close + 1
            if s[after] == "(":
                tail = _TAIL.match(s, after, min(n, after + _TAIL_WINDOW))
                end = tail.end() if tail else None
            elif s[after] == "[":
                label = _LABEL.match(s, after)
                if (
                    label
                    and label.group(1).strip()
                    and _label_key(label.group(1)) in (self._definition_labels())
                ):
                    end = label.end()
        if end is None:
            # A shortcut or collapsed reference, or no image at all: without its "!" it is at
            # most a link, whose URL the definition check has vetted.
            self.out.append("\\!")
            return j + 1
        alt = _plain_alt(s[j + 2 : close])
        # "!" + "[image: ...]" would be an image again.
        opener = "\\[" if self.out and self.out[-1] == "!" else "["
        self.out.append(f"{opener}image: {alt}]" if alt else f"{opener}image]")
        return self._after_bracket(end)

    def _after_bracket(self, k: int) -> int:
        """Vet what follows an unescaped "]" just written: an inline link tail or a definition."""
        s, n = self.s, len(self.s)
        while k < n:
            if s[k] == ":":
                if not _is_safe_destination(s, k + 1):
                    self.out.append("\\:")  # "[x]\:" defines nothing
                    return k + 1
                return k
            p = k
            # Some renderers accept "[text] (url)"; a few spaces are vetted too.
            while p < n and p - k < 3 and s[p] in " \t":
                p += 1
            if p >= n or s[p] != "(" or _is_safe_destination(s, p + 1):
                return k
            if p == k:
                tail = _TAIL.match(s, p, min(n, p + _TAIL_WINDOW))
                if tail is not None:
                    k = tail.end()  # drop "(url 'title')"; what follows gets the same checks
                    continue
            self.out.append(s[k:p] + "\\(")
            return p + 1
        return k

    def _bracket_pairs(self) -> dict[int, int]:
        """Each "[" mapped to the "]" that closes it, nesting respected, escapes skipped."""
        if self._pairs is None:
            pairs: dict[int, int] = {}
            stack: list[int] = []
            for m in _BRACKET.finditer(self.s):
                token = m.group()
                if token == "[":
                    stack.append(m.start())
                elif token == "]" and stack:
                    pairs[stack.pop()] = m.start()
            self._pairs = pairs
        return self._pairs

    def _definition_labels(self) -> set[str]:
        if self._definitions is None:
            self._definitions = {_label_key(m.group(1)) for m in _DEFINITION.finditer(self.s)}
        return self._definitions
