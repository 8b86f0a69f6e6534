"""Images that are mostly text with a structure: source code, equations, screenshots.

Code keeps its layout: OCR drops leading whitespace, so indentation is rebuilt from each line's
left edge relative to the character width (the median advance of the lines' glyphs). The
language comes from keyword cues scored together with pygments (each candidate lexer's own
``analyse_text`` and the share of tokens it fails to lex). Equations become LaTeX-like text:
symbols mapped to their commands, superscripts and subscripts recovered from small boxes set
high or low beside a line. Screenshots are read for what people search by: error messages and
codes, menu paths, field labels, buttons, and the visible strings in reading order.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from functools import lru_cache
from statistics import median
from typing import Any

import numpy as np

from docsight.query.image import ImageType, QueryImage, TypedText
from docsight.query.typed.common import (
    MAX_TEXT_CHARS,
    clip,
    compact,
    cy,
    height,
    ink_mask,
    reading_order,
    row_bands,
    unique,
)
from docsight.vision.common import OcrLine

# --- code ---------------------------------------------------------------------------------------

#: Keyword cues per language (pygments alias): patterns that rarely appear in other languages.
CODE_CUES: dict[str, tuple[str, ...]] = {
    "python": (
        r"^\s*def \w+\(.*\)\s*(->.*)?:\s*$", r"^\s*(from [\w.]+ )?import \w+", r"\bself\.",
        r"^\s*class \w+(\(.*\))?:\s*$", r"\belif\b", r"\bNone\b", r"^\s*@\w+", r"\bprint\(",
        r"^\s*(if|for|while|with|try|else|except)\b.*:\s*$",
    ),
    "javascript": (
        r"\bfunction\b", r"\b(const|let|var) \w+ =", r"=>", r"console\.log", r"\bdocument\.",
        r"\brequire\(", r"===", r"\bexport default\b",
    ),
    "typescript": (
        r":\s*(string|number|boolean|void)\b", r"\binterface \w+", r"\bimport .* from '",
    ),
    "java": (
        r"\bpublic (static )?(final )?(class|void|int|String)\b", r"System\.out\.print",
        r"\bString\[\]", r"@Override", r"\bnew \w+\(.*\);",
    ),
    "c": (r"#include\s*<\w+\.h>", r"\bprintf\(", r"\bint main\(", r"\bmalloc\(", r"\bsizeof\("),
    "cpp": (
        r"#include\s*<(iostream|vector|string|map|memory)>", r"\bstd::", r"\bcout\s*<<",
        r"\btemplate\s*<", r"\bnullptr\b",
    ),
    "csharp": (r"\busing System", r"\bnamespace \w+", r"Console\.Write", r"\basync Task\b"),
    "go": (r"^\s*package \w+", r"\bfunc \w*\(", r":=", r"\bfmt\.", r"\bgo func\b"),
    "rust": (r"\bfn \w+\(", r"\blet mut\b", r"\w+!\(", r"\bimpl\b", r"&mut\b", r"\buse \w+::"),
    "sql": (
        r"(?i)\bselect\b.+\bfrom\b", r"(?i)^\s*where\b", r"(?i)\b(insert into|create table)\b",
        r"(?i)\b(group by|order by|left join|inner join)\b",
    ),
    "bash": (
        r"^#!/bin/(ba)?sh", r"^\s*\$ \w+", r"^\s*(sudo|apt-get|apt|pip|npm|cd|ls|export) ",
        r"^\s*(fi|done|esac)\s*$", r"\$\{?\w+\}?",
    ),
    "html": (r"<(html|div|span|body|head|p|a|ul|li)\b", r"</\w+>"),
    "css": (r"^\s*[.#]?[\w-]+\s*\{\s*$", r"^\s*[\w-]+\s*:\s*[^;]+;\s*$"),
    "json": (r'^\s*"\w+"\s*:\s*', r"^\s*[{\[]\s*$"),
    "yaml": (r"^\s*[\w-]+:\s*$", r"^\s*- [\w-]+:"),
    "php": (r"<\?php", r"\$\w+\s*=", r"\$this->"),
    "ruby": (r"^\s*end\s*$", r"\bputs\b", r"\bdo \|\w+\|", r"^\s*def \w+[^:]*$"),
    "r": (r"\w+\s*<-\s*", r"\blibrary\(", r"\bdata\.frame\("),
    "kotlin": (r"\bfun \w+\(", r"\bval \w+\s*=", r"\bvar \w+:\s*\w+"),
    "swift": (r"\bfunc \w+\(", r"\bguard\b", r"\blet \w+:\s*\w+"),
}  # fmt: skip
_CUE_RE = {lang: [re.compile(p, re.MULTILINE) for p in pats] for lang, pats in CODE_CUES.items()}


@lru_cache(maxsize=32)
def _lexer(alias: str) -> Any:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(alias)
    except ClassNotFound:
        return None


def _error_share(lexer: Any, source: str) -> float:
    from pygments.token import Error

    tokens = [(t, v) for t, v in lexer.get_tokens(source) if v.strip()]
    if not tokens:
        return 1.0
    return sum(len(v) for t, v in tokens if t in Error) / max(1, sum(len(v) for _, v in tokens))


def detect_language(source: str) -> tuple[str, float]:
    """``(pygments alias, score)`` of the language ``source`` is most likely in, or
    ``("text", 0.0)``. Cues count most; pygments' own analysis and lexing errors refine them."""
    cues = {lang: sum(1 for p in pats if p.search(source)) for lang, pats in _CUE_RE.items()}
    scored: dict[str, float] = {}
    for lang, hits in cues.items():
        if hits == 0:
            continue
        lexer = _lexer(lang)
        score = float(hits)
        if lexer is not None:
            score += 2.0 * float(lexer.analyse_text(source) or 0.0)
            score -= 3.0 * _error_share(lexer, source)
        scored[lang] = score
    if not scored:
        from pygments.lexers import guess_lexer
        from pygments.util import ClassNotFound

        # Without a cue, pygments' guess only counts when a lexer claims the text outright
        # (a shebang, an XML declaration); its weaker guesses are mostly noise.
        try:
            lexer = guess_lexer(source)
        except ClassNotFound:
            return "text", 0.0
        confident = float(type(lexer).analyse_text(source) or 0.0) >= 0.9
        alias = lexer.aliases[0] if lexer.aliases else "text"
        return (alias, 1.0) if confident else ("text", 0.0)
    best = max(scored, key=lambda k: scored[k])
    return best, round(scored[best], 2)


def char_width(lines: Sequence[OcrLine]) -> float:
    """The advance of one character: the median over lines of width per character."""
    widths = [(ln.x1 - ln.x0) / len(ln.text) for ln in lines if len(ln.text.strip()) >= 4]
    if not widths:
        widths = [(ln.x1 - ln.x0) / max(1, len(ln.text)) for ln in lines]
    return float(median(widths)) if widths else 8.0


def _indent_unit(columns: Sequence[int]) -> int:
    """The indentation step the columns suggest: the smallest step that most indents are
    multiples of (2, 4 or 8; 4 when unclear)."""
    positive = [c for c in columns if c > 0]
    if not positive:
        return 4
    for unit in (4, 2, 8, 3):
        if sum(1 for c in positive if c % unit == 0) >= 0.8 * len(positive) and min(
            positive
        ) >= min(unit, 2):
            return unit
    return 4


def rebuild_source(lines: Sequence[OcrLine]) -> str:
    """Source text with indentation rebuilt from the lines' left edges."""
    rows = row_bands([ln for ln in lines if ln.text.strip()])
    if not rows:
        return ""
    cw = char_width([ln for row in rows for ln in row])
    left = min(row[0].x0 for row in rows)
    texts: list[str] = []
    raw_cols: list[int] = []
    for row in rows:
        parts = [row[0].text]
        for a, b in itertools.pairwise(row):
            parts.append(" " * max(1, round((b.x0 - a.x1) / cw)) + b.text)
        texts.append("".join(parts))
        raw_cols.append(max(0, round((row[0].x0 - left) / cw)))
    # Indents snap to levels: distinct columns within one character are one level.
    levels: list[int] = []
    for col in sorted(set(raw_cols)):
        if not levels or col - levels[-1] > 1:
            levels.append(col)
    snapped = [max(lv for lv in levels if lv <= col + 1) for col in raw_cols]
    unit = _indent_unit(snapped)
    out = []
    for text, col in zip(texts, snapped, strict=True):
        depth = round(col / unit) if unit else 0
        out.append(" " * (unit * depth) + text)
    return "\n".join(out)


class OfflineCodeParser:
    """Source code: its language and the verbatim source with indentation rebuilt."""

    type: ImageType = "code"
    version = "offline-code/1"

    def parse(self, image: QueryImage) -> TypedText | None:
        source = rebuild_source(image.lines)
        if not source.strip():
            return None
        language, score = detect_language(source)
        kept = source if len(source) <= MAX_TEXT_CHARS - 40 else source[: MAX_TEXT_CHARS - 41]
        head = f"Language: {language}" if language != "text" else "Language: unknown"
        return TypedText(
            type="code",
            text=f"{head}\n{kept}",
            fields={"language": language, "source": source, "language_score": score},
            parser=self.version,
        )


# --- equations ----------------------------------------------------------------------------------

_GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ϵ": "epsilon",
    "ζ": "zeta", "η": "eta", "θ": "theta", "ϑ": "vartheta", "ι": "iota", "κ": "kappa",
    "λ": "lambda", "μ": "mu", "µ": "mu", "ν": "nu", "ξ": "xi", "π": "pi", "ρ": "rho",
    "σ": "sigma", "ς": "varsigma", "τ": "tau", "υ": "upsilon", "φ": "phi", "ϕ": "phi",
    "χ": "chi", "ψ": "psi", "ω": "omega", "Γ": "Gamma", "Δ": "Delta", "Θ": "Theta",
    "Λ": "Lambda", "Ξ": "Xi", "Π": "Pi", "Σ": "Sigma", "Φ": "Phi", "Ψ": "Psi", "Ω": "Omega",
}  # fmt: skip
_SYMBOLS = {
    "×": "times", "·": "cdot", "⋅": "cdot", "÷": "div", "±": "pm", "∓": "mp", "≤": "leq",
    "⩽": "leq", "≥": "geq", "⩾": "geq", "≠": "neq", "≈": "approx", "≃": "simeq", "≅": "cong",
    "≡": "equiv", "∝": "propto", "∼": "sim", "∞": "infty", "∑": "sum", "∏": "prod",
    "∫": "int", "∮": "oint", "√": "sqrt", "∂": "partial", "∇": "nabla", "∈": "in",
    "∉": "notin", "⊂": "subset", "⊆": "subseteq", "⊃": "supset", "∪": "cup", "∩": "cap",
    "∅": "emptyset", "∀": "forall", "∃": "exists", "¬": "neg", "∧": "wedge", "∨": "vee",
    "→": "rightarrow", "←": "leftarrow", "↔": "leftrightarrow", "⇒": "Rightarrow",
    "⇐": "Leftarrow", "⇔": "Leftrightarrow", "↦": "mapsto", "∘": "circ", "⊗": "otimes",
    "⊕": "oplus", "⟨": "langle", "⟩": "rangle", "‖": "|", "…": "ldots", "⋯": "cdots",
    "ℝ": "mathbb{R}", "ℕ": "mathbb{N}", "ℤ": "mathbb{Z}", "ℂ": "mathbb{C}", "ℓ": "ell",
}  # fmt: skip
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ", "0123456789+-=()ni")
_SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₓᵢⱼₖₙₜ", "0123456789+-=()aeoxijknt")
_SUP_CHARS = "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ"
_SUB_CHARS = "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₓᵢⱼₖₙₜ"
#: Words that are functions or operators in formulas, not variables.
_FUNCTIONS = frozenset(
    "sin cos tan cot sec csc arcsin arccos arctan sinh cosh tanh log ln exp lim max min sup "
    "inf arg argmax argmin det dim mod gcd Pr var cov softmax sigmoid relu".split()
)
_STOPWORDS = frozenset(
    "the and for with where from that this are was were its into over under then than if "
    "let be is of to in on at by as or an a we it such all any each".split()
)
_EQ_NUMBER = re.compile(r"^\(?\s*(\d+(\.\d+)?[a-z]?)\s*\)$")


def latexify(text: str) -> str:
    """Unicode math as LaTeX-like text: Greek letters and symbols as commands, Unicode
    superscripts and subscripts as ``^{}`` and ``_{}``, spacing normalised."""
    text = text.replace("−", "-").replace("–", "-").replace("∗", "*")
    text = re.sub(f"[{_SUP_CHARS}]+", lambda m: "^{" + m[0].translate(_SUPERSCRIPTS) + "}", text)
    text = re.sub(f"[{_SUB_CHARS}]+", lambda m: "_{" + m[0].translate(_SUBSCRIPTS) + "}", text)
    out = []
    for ch in text:
        name = _GREEK.get(ch) or _SYMBOLS.get(ch)
        out.append(f" \\{name} " if name and name != "|" else ("\\|" if name == "|" else ch))
    latex = "".join(out)
    latex = re.sub(r"\s+", " ", latex)
    # Commands before an argument or a script keep no space ("\sqrt {x}" reads as "\sqrt{x}").
    latex = re.sub(r"(\\[A-Za-z]+(?:\{[A-Z]\})?) (?=[\^_{(])", r"\1", latex)
    latex = re.sub(r"\( ", "(", latex)
    latex = re.sub(r" \)", ")", latex)
    return latex.strip()


def variables(latex: str) -> list[str]:
    """Variables of a formula: single letters (with their subscript) and Greek commands, not
    function names or words of running text."""
    found: list[str] = []
    for match in re.finditer(r"\\([A-Za-z]+)|([A-Za-z]+)(_\{?\w+\}?)?", latex):
        command, word, sub = match[1], match[2], match[3] or ""
        if command:
            if command in _GREEK.values() and command not in ("sum", "prod"):
                found.append(f"\\{command}")
        elif len(word) == 1:
            found.append(word + sub)
        elif word in _FUNCTIONS or word.lower() in _STOPWORDS:
            continue
        elif len(word) == 2 and word.islower():
            # Juxtaposed letters are a product in a formula ("mc", "dx").
            found.extend(word)
        else:
            found.append(word + sub)  # a named quantity ("Revenue", "Price")
    return unique(found, limit=20)


def _scripts(lines: Sequence[OcrLine]) -> list[tuple[OcrLine, str]]:
    """Lines with small boxes set high or low just right of them attached as scripts;
    returns ``(line, text)`` for the main lines."""
    if not lines:
        return []
    big = max(height(ln) for ln in lines)
    mains = [ln for ln in lines if height(ln) >= 0.7 * big]
    smalls = [ln for ln in lines if ln not in mains]
    texts = {id(m): m.text for m in mains}
    for s in sorted(smalls, key=lambda ln: ln.x0):
        h = height(s)
        host = None
        for m in mains:
            beside = m.x1 - 0.5 * h <= s.x0 <= m.x1 + 1.5 * h
            if beside and m.top - h <= cy(s) <= m.bottom + h:
                host = m
                break
        if host is None:
            mains.append(s)
            texts[id(s)] = s.text
            continue
        mark = "^" if cy(s) < host.top + 0.45 * height(host) else "_"
        if host.top + 0.45 * height(host) <= cy(s) <= host.bottom - 0.45 * height(host):
            mark = ""  # level with the line: just the next piece of it
        texts[id(host)] += f"{mark}{{{s.text}}}" if mark else f" {s.text}"
    return [(m, texts[id(m)]) for m in mains]


class OfflineEquationParser:
    """An equation as LaTeX-like text, with its variables (and its number, if printed)."""

    type: ImageType = "equation"
    version = "offline-equation/1"

    def parse(self, image: QueryImage) -> TypedText | None:
        lines = [ln for ln in image.lines if ln.text.strip()]
        if not lines:
            return None
        number = ""
        rows: list[str] = []
        for row in row_bands(lines, share=0.3):
            parts = []
            for ln, text in _scripts(row):
                tag = _EQ_NUMBER.match(text.strip())
                if tag and ln.x0 > 0.7 * image.width and not number:
                    number = tag[1]
                    continue
                parts.append(text)
            if parts:
                rows.append(latexify(" ".join(parts)))
        latex = " \\\\ ".join(r for r in rows if r)
        if not latex:
            return None
        names = variables(latex)
        text = compact(
            [
                clip(latex, MAX_TEXT_CHARS - 200),
                "Variables: " + ", ".join(names) if names else "",
                f"Equation ({number})" if number else "",
            ]
        )
        return TypedText(
            type="equation",
            text=text,
            fields={"latex": latex, "variables": names, "number": number},
            parser=self.version,
        )


# --- screenshots --------------------------------------------------------------------------------

_ERROR_WORDS = re.compile(
    r"\b(error|errors|exception|failed|failure|fatal|warning|denied|not found|invalid|cannot|"
    r"can't|couldn't|could not|unable|refused|timed out|timeout|traceback|crash(ed)?|"
    r"unauthori[sz]ed|forbidden|unavailable|not responding|aborted|problem)\b",
    re.IGNORECASE,
)
_ERROR_CODES = re.compile(
    r"(\b0x[0-9A-Fa-f]{4,8}\b|\bHTTP(?:/\d(?:\.\d)?)?\s*[1-5]\d{2}\b|\b[EW]\d{2,5}\b|"
    r"\bERR_[A-Z_]+\b|\b[A-Z]{2,}-\d{2,}\b|\b(?:error|code)\s*:?\s*#?-?\d{2,}\b|"
    r"\b[45]\d{2}\b(?=\s*(?:error|not found|forbidden|unauthori[sz]ed|bad request|"
    r"internal server|service unavailable|bad gateway)))",
    re.IGNORECASE,
)
_MENU_SEP = re.compile(r"\s*(?:>|›|»|→|->|⇒|▸|▶)\s*")
_MENU_WORDS = frozenset(
    "file edit view insert format tools help window options settings run debug select go "
    "terminal image layer table data review home design layout project build navigate code "
    "refactor history bookmarks profiles tab share arrange preferences".split()
)
_BUTTONS = frozenset(
    "ok cancel apply save close yes no retry ignore abort continue next back finish submit "
    "send delete remove add open browse install update sign in log in login sign up done "
    "allow deny accept decline confirm reset search upload download skip".split()
)


def _capitalised(words: list[str], limit: int = 3) -> list[str]:
    """The leading run of capitalised words (menu item names), at most ``limit``."""
    run: list[str] = []
    for word in words[:limit]:
        if not (word[:1].isupper() or word[:1].isdigit() or word in ("...", "…")):
            break
        run.append(word)
    return run


def menu_paths(lines: Sequence[OcrLine]) -> list[str]:
    """Menu paths written with separators ("File > Save As") and menu bars ("File Edit View
    Help": a row of menu words)."""
    paths: list[str] = []
    for ln in lines:
        parts = [p.split() for p in _MENU_SEP.split(ln.text)]
        if len(parts) < 2:
            continue
        # Menu items are capitalised words: the run before the first separator and after each
        # ("Choose File > Save As to keep a copy" names "Choose File > Save As").
        items = [_capitalised(parts[0][::-1])[::-1]] + [_capitalised(p) for p in parts[1:]]
        if all(items):
            paths.append(" > ".join(" ".join(item) for item in items))
    for row in row_bands(lines):
        words = [w for ln in row for w in ln.text.split()]
        menu = [w for w in words if w.strip(".:").lower() in _MENU_WORDS]
        if len(menu) >= 3 and len(menu) >= 0.6 * len(words):
            paths.append("Menu bar: " + " | ".join(words))
    return unique(paths, limit=10)


def _input_box_right(mask: np.ndarray, line: OcrLine) -> bool:
    """Whether an input box (a rectangle with long top and bottom edges) starts just right of
    a label: text fields are drawn as outlined or shaded boxes."""
    h = height(line)
    x0, x1 = int(line.x1 + 0.2 * h), int(min(mask.shape[1], line.x1 + 14 * h))
    y0, y1 = int(max(0, line.top - 0.6 * h)), int(min(mask.shape[0], line.bottom + 0.6 * h))
    if x1 - x0 < 3 * h or y1 <= y0:
        return False
    inked = np.flatnonzero(mask[y0:y1, x0:x1].any(axis=0))
    if inked.size == 0 or inked[0] > 6 * h:
        return False
    # The box starts at the first ink right of the label; its edges span the next stretch.
    x0 += int(inked[0])
    x1 = min(x1, x0 + int(6 * h))
    if x1 - x0 < 3 * h:
        return False
    strip = mask[y0:y1, x0:x1]
    full = (strip.mean(axis=1) >= 0.85).nonzero()[0]
    return full.size >= 2 and int(full[-1]) - int(full[0]) >= 0.8 * h


def field_labels(image: QueryImage, lines: Sequence[OcrLine]) -> list[str]:
    """Form labels: short lines ending in a colon ("Name:"), the label of "Label: value"
    lines, and short lines with an input box right of them."""
    mask = ink_mask(image.rgb) if image.rgb.size else None
    labels: list[str] = []
    for ln in lines:
        text = ln.text.strip()
        head, colon, _ = text.partition(":")
        if (
            colon
            and 1 <= len(head.split()) <= 4
            and not head.strip().isdigit()
            and not _ERROR_WORDS.search(head)
            and not _ERROR_CODES.search(head)
        ):
            labels.append(head.strip())
        elif (
            mask is not None
            and 1 <= len(text.split()) <= 3
            and text.lower() not in _BUTTONS
            and _input_box_right(mask, ln)
        ):
            labels.append(text)
    return unique(labels, limit=20)


class OfflineScreenshotParser:
    """A screenshot: error messages and codes, menu paths, field labels, buttons and the
    visible strings in reading order."""

    type: ImageType = "screenshot"
    version = "offline-screenshot/1"

    def parse(self, image: QueryImage) -> TypedText | None:
        lines = reading_order(ln for ln in image.lines if ln.text.strip())
        if not lines:
            return None
        strings = unique((ln.text for ln in lines), limit=60)
        errors = unique((ln.text for ln in lines if _ERROR_WORDS.search(ln.text)), limit=10)
        codes = unique((m[0] for ln in lines for m in _ERROR_CODES.finditer(ln.text)), limit=10)
        menus = menu_paths(lines)
        fields = field_labels(image, lines)
        buttons = unique((ln.text for ln in lines if ln.text.strip().lower() in _BUTTONS), 10)
        title = lines[0].text
        parts = [
            "Errors: " + " | ".join(errors) if errors else "",
            "Codes: " + ", ".join(codes) if codes else "",
            f"Window: {title}",
            "Menus: " + "; ".join(menus) if menus else "",
            "Fields: " + ", ".join(fields) if fields else "",
            "Buttons: " + ", ".join(buttons) if buttons else "",
            "Text: " + " | ".join(s for s in strings if s not in errors),
        ]
        return TypedText(
            type="screenshot",
            text=compact(parts),
            fields={
                "strings": strings,
                "menus": menus,
                "fields": fields,
                "errors": errors,
                "codes": codes,
                "buttons": buttons,
                "title": title,
            },
            parser=self.version,
        )
