#!/usr/bin/env python3
"""Write a long born-digital report PDF, for measuring ingestion of one large file (issue 17).

    python scripts/make_large_pdf.py OUT.pdf [--pages 1000] [--seed 17] [--photos]

The report looks like an annual filing set: a title page, chapters ("3 Operations in the
North region") with numbered subsections ("3.2 Costs"), justified-width paragraphs of varied
business prose, a ruled table with a caption every few pages, a running header and "Page N of M"
at the foot of every page, and an outline (bookmarks) mirroring the headings. Text is drawn with
reportlab's canvas, so the text layer is clean and no page needs OCR: the file measures the
text-layer path, the one whose cost should be linear in pages. With ``--photos`` every body page
also opens with a photograph-like raster picture (smooth light with grain, 240 × 150 pixels
drawn 260 to 300 points wide, at one of six places): each becomes a figure whose crop the parse
renders and describes, as in a brochure or an annual report's glossy pages.

The output is a function of ``--pages``, ``--seed`` and ``--photos`` only (reportlab's
invariant mode fixes its timestamps and document id), so two runs give the same bytes and the
same document id.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

from PIL import Image
from reportlab.lib.pagesizes import letter
from reportlab.lib.utils import ImageReader, simpleSplit
from reportlab.pdfgen.canvas import Canvas

WIDTH, HEIGHT = letter  # 612 × 792 points
MARGIN = 72.0
TEXT_WIDTH = WIDTH - 2 * MARGIN
BOTTOM = HEIGHT - 60.0  # where body text stops, above the page number
TITLE = "Northwind Holdings Annual Report"
#: A table every this many pages (on the page where the count comes round).
TABLE_EVERY = 4
#: Pages per chapter, so a 1,000-page report has about 40 chapters and sections span pages.
CHAPTER_PAGES = 25

REGIONS = ["North", "South", "East", "West", "Central", "Coastal", "Highland", "Metro"]
TOPICS = [
    "Revenue",
    "Costs",
    "Staffing",
    "Capital spending",
    "Risks",
    "Outlook",
    "Customers",
    "Suppliers",
]
SUBJECTS = [
    "net revenue",
    "the operating margin",
    "freight cost",
    "headcount",
    "the order backlog",
    "warehouse utilisation",
    "customer churn",
    "energy spending",
    "the capital budget",
    "supplier lead time",
]
VERBS = ["rose", "fell", "held steady", "recovered", "improved", "weakened", "doubled"]
CAUSES = [
    "as new contracts started in the second quarter",
    "because two depots were merged into one site",
    "after the price review agreed with the largest customers",
    "while the fleet was replaced with electric vans",
    "despite higher wages negotiated in the spring",
    "once the new planning system went live",
    "as demand moved from retail to online channels",
    "after a cold winter raised heating bills",
]
REMARKS = [
    "Management expects the trend to continue into the next year.",
    "The board reviewed the figures at its September meeting.",
    "No single customer accounted for more than a tenth of sales.",
    "The auditors raised no matter of concern on this item.",
    "Comparable figures for the previous year are restated below.",
    "Further detail is given in the notes to the accounts.",
]


def sentence(rng: random.Random) -> str:
    subject = rng.choice(SUBJECTS)
    pct = rng.randint(1, 40)
    sentence = f"In the {rng.choice(REGIONS)} region {subject} {rng.choice(VERBS)} by {pct}%"
    if rng.random() < 0.7:
        sentence += f" {rng.choice(CAUSES)}"
    sentence = sentence[0].upper() + sentence[1:] + "."
    if rng.random() < 0.3:
        sentence += " " + rng.choice(REMARKS)
    return sentence


def paragraph(rng: random.Random) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(3, 7)))


def table_rows(rng: random.Random, topic: str) -> list[list[str]]:
    header = ["Region", f"{topic} FY1", f"{topic} FY2", "Change"]
    rows = [header]
    for region in rng.sample(REGIONS, rng.randint(4, 7)):
        a, b = rng.randint(50, 990), rng.randint(50, 990)
        rows.append([region, f"{a:,}", f"{b:,}", f"{100 * (b - a) / a:+.1f}%"])
    return rows


class Report:
    """A cursor over the canvas that starts new pages (with their furniture) as text fills them."""

    ROW_H = 18.0

    def __init__(self, path: Path, pages: int, rng: random.Random) -> None:
        self.c = Canvas(str(path), pagesize=letter, invariant=1)
        self.c.setTitle(TITLE)
        self.c.setAuthor("docsight benchmarks")
        self.pages = pages
        self.rng = rng
        self.page = 0
        self.y = 0.0
        self.tables = 0
        self.bookmarks = 0

    def new_page(self) -> None:
        if self.page:
            self.c.showPage()
        self.page += 1
        self.c.setFont("Helvetica", 9)
        self.c.drawString(MARGIN, HEIGHT - 40, f"{TITLE} - Northwind Holdings plc")
        self.c.drawCentredString(WIDTH / 2, 32, f"Page {self.page} of {self.pages}")
        self.y = MARGIN + 8

    def room(self, points: float) -> bool:
        return self.y + points <= BOTTOM

    def line(self, text: str, font: str = "Helvetica", size: float = 10.5) -> None:
        self.c.setFont(font, size)
        self.c.drawString(MARGIN, HEIGHT - self.y - size, text)
        self.y += size * 1.35

    def heading(self, text: str, level: int) -> None:
        size = {0: 16.0, 1: 13.0}[level]
        # A heading never sits alone at the foot of a page.
        if not self.room(size * 1.4 + 40):
            return
        self.y += 8
        key = f"h{self.bookmarks}"
        self.bookmarks += 1
        self.c.bookmarkPage(key, fit="XYZ", top=HEIGHT - self.y + 4)
        self.c.addOutlineEntry(text, key, level=level)
        self.line(text, "Helvetica-Bold", size)
        self.y += 4

    def paragraph(self, text: str) -> None:
        """As many lines of ``text`` as fit; the rest is dropped (pages end on a full line)."""
        for row in simpleSplit(text, "Helvetica", 10.5, TEXT_WIDTH):
            if not self.room(14.2):
                return
            self.line(row)
        self.y += 6

    def photo(self, seed: int) -> None:
        """A picture a reader would call a photograph: a gradient of light under grain, made
        from ``seed`` alone, so that the file stays a function of its arguments."""
        width, height = 240, 150
        rng = random.Random(seed)
        grain = Image.frombytes("RGB", (width, height), rng.randbytes(width * height * 3))
        tint = (rng.randrange(60, 200), rng.randrange(60, 200), rng.randrange(60, 200))
        light = Image.linear_gradient("L").resize((width, height)).convert("RGB")
        light = Image.blend(light, Image.new("RGB", (width, height), tint), 0.5)
        picture = Image.blend(light, grain, 0.18)
        # Placed and sized from the seed too: a picture at the same place on many pages is
        # page decoration (a logo, a band), which the parser drops.
        x = MARGIN + 24.0 * rng.randrange(6)
        w = 260.0 + 20.0 * rng.randrange(3)
        h = w * 0.625
        self.c.drawImage(ImageReader(picture), x, HEIGHT - self.y - h, w, h)
        self.y += h + 12

    def table(self, topic: str) -> None:
        rows = table_rows(self.rng, topic)
        height = 16 + len(rows) * self.ROW_H + 14
        if not self.room(height):
            return
        self.tables += 1
        self.line(f"Table {self.tables}: {topic} by region, in thousands", size=9.5)
        top = self.y + 2
        cols = [MARGIN, MARGIN + 130, MARGIN + 250, MARGIN + 370, MARGIN + 460]
        c = self.c
        c.setLineWidth(0.7)
        for r in range(len(rows) + 1):
            y = HEIGHT - (top + r * self.ROW_H)
            c.line(cols[0], y, cols[-1], y)
        for x in cols:
            c.line(x, HEIGHT - top, x, HEIGHT - (top + len(rows) * self.ROW_H))
        for r, row in enumerate(rows):
            c.setFont("Helvetica-Bold" if r == 0 else "Helvetica", 9.5)
            for k, cell in enumerate(row):
                c.drawString(cols[k] + 5, HEIGHT - (top + r * self.ROW_H) - 13, cell)
        self.y = top + len(rows) * self.ROW_H + 14

    def save(self) -> None:
        # save() ends the last page itself; a showPage() here would add a blank one.
        self.c.save()


def make_large_pdf(path: Path, pages: int = 1000, seed: int = 17, photos: bool = False) -> Path:
    """Write a ``pages``-page report to ``path`` (see the module docstring) and return ``path``;
    with ``photos``, a photograph opens every body page."""
    if pages < 2:
        raise ValueError("the report needs at least two pages (title page and one of body)")
    rng = random.Random(seed)
    doc = Report(path, pages, rng)
    doc.new_page()
    doc.y = 260
    doc.line(TITLE, "Helvetica-Bold", 26)
    doc.y += 10
    doc.paragraph(
        "This report is generated for docsight's benchmarks. Its figures are invented; its "
        "shape, chapters of prose with tables and running page furniture, is that of a filing."
    )
    chapter = 0
    for page in range(2, pages + 1):
        doc.new_page()
        if photos:
            # First on the page, clear of the headings (a short line just above a picture would
            # be read as its label), and from a seed of its own: the text's generator does not
            # serve it, so a report without photographs is the same file as before.
            doc.photo(seed * 100_003 + page)
        if (page - 2) % CHAPTER_PAGES == 0:
            chapter += 1
            section = 0
            region = REGIONS[(chapter - 1) % len(REGIONS)]
            doc.heading(f"{chapter} Operations in the {region} region", 0)
        # A subsection starts on most pages, so sections both end on and span page breaks.
        if rng.random() < 0.6:
            section += 1
            topic = TOPICS[(section - 1) % len(TOPICS)]
            doc.heading(f"{chapter}.{section} {topic}", 1)
        else:
            topic = TOPICS[max(section - 1, 0) % len(TOPICS)]
        wants_table = page % TABLE_EVERY == 0
        while doc.room(40):
            doc.paragraph(paragraph(rng))
            if wants_table and doc.y > 300:
                doc.table(topic)
                wants_table = False
    doc.save()
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--photos", action="store_true", help="a photograph on every body page")
    args = parser.parse_args(argv)
    make_large_pdf(args.out, args.pages, args.seed, args.photos)
    size = args.out.stat().st_size / 2**20
    sys.stdout.write(f"{args.out}: {args.pages} pages, {size:.1f} MiB\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
