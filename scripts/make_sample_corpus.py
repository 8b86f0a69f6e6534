#!/usr/bin/env python3
"""Write a small sample corpus for the demo: a PDF annual report, a two-column PDF research note,
a Markdown field guide, a plain-text FAQ, a Word maintenance procedure and a PowerPoint launch
deck. All content is fictional and written for docsight.

    python scripts/make_sample_corpus.py samples/corpus

Needs reportlab and Pillow (installed by `make install`) and python-docx/python-pptx (docsight).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from PIL import Image, ImageDraw
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import cm
from reportlab.platypus import (
    BaseDocTemplate,
    Frame,
    ListFlowable,
    ListItem,
    PageBreak,
    PageTemplate,
    Paragraph,
    SimpleDocTemplate,
    Spacer,
    Table,
    TableStyle,
)
from reportlab.platypus import (
    Image as RLImage,
)

STYLES = getSampleStyleSheet()
BODY = ParagraphStyle("body", parent=STYLES["BodyText"], fontSize=10.5, leading=14)
CAPTION = ParagraphStyle("caption", parent=BODY, fontSize=9, leading=11, textColor=colors.grey)


class _OutlineDoc(SimpleDocTemplate):
    """Adds a PDF outline entry for every H1/H2, like real report generators do."""

    def afterFlowable(self, flowable: object) -> None:
        if isinstance(flowable, Paragraph) and flowable.style.name in ("Heading1", "Heading2"):
            text = flowable.getPlainText()
            level = 0 if flowable.style.name == "Heading1" else 1
            key = f"h{id(flowable)}"
            self.canv.bookmarkPage(key)
            self.canv.addOutlineEntry(text, key, level=level)


def _furniture(title: str):  # type: ignore[no-untyped-def]
    def draw(canvas, doc) -> None:  # type: ignore[no-untyped-def]
        canvas.saveState()
        canvas.setFont("Helvetica", 8)
        canvas.drawString(2 * cm, A4[1] - 1.2 * cm, title)
        canvas.drawRightString(A4[0] - 2 * cm, 1.2 * cm, f"Page {doc.page}")
        canvas.restoreState()

    return draw


def _bar_chart(values: dict[str, float], title: str) -> bytes:
    width, height = 900, 520
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    draw.text((30, 15), title, fill="black")
    top = max(values.values())
    bar_w = 180
    for i, (label, value) in enumerate(values.items()):
        x0 = 90 + i * (bar_w + 80)
        bar_h = int(380 * value / top)
        draw.rectangle([x0, 460 - bar_h, x0 + bar_w, 460], fill=(40 + 70 * i, 90, 160))
        draw.text((x0 + 10, 470), label, fill="black")
        draw.text((x0 + 10, 440 - bar_h), f"{value:.1f}", fill="black")
    draw.line([70, 460, width - 30, 460], fill="black", width=2)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def annual_report(path: Path) -> None:
    title = "Northwind Instruments - Annual Report 2024"
    doc = _OutlineDoc(str(path), pagesize=A4, title=title, author="Northwind Instruments")
    h1, h2 = STYLES["Heading1"], STYLES["Heading2"]
    story: list[object] = [
        Paragraph("Northwind Instruments Annual Report 2024", STYLES["Title"]),
        Spacer(1, 12),
        Paragraph("1 Letter to Shareholders", h1),
        Paragraph(
            "2024 was the year our sensor business came of age. Demand from water utilities and "
            "food processors lifted orders in every quarter, and we shipped our one-millionth "
            "T-series logger in October. We kept investing through the cycle: research and "
            "development spending rose by almost a fifth, and we opened a second calibration "
            "laboratory in Gdansk to shorten delivery times for European customers.",
            BODY,
        ),
        Paragraph(
            "Our priorities for the coming year are unchanged: accurate instruments, honest "
            "service and disciplined growth. We thank our 2,015 colleagues for their work.",
            BODY,
        ),
        Paragraph("2 Financial Highlights", h1),
        Paragraph(
            "Revenue grew faster than our markets while gross margin improved thanks to a richer "
            "mix of services. The table below summarises the year.",
            BODY,
        ),
        Paragraph("Table 1: Financial highlights, fiscal years 2023 and 2024.", CAPTION),
    ]
    table = Table(
        [
            ["Metric", "2023", "2024"],
            ["Revenue ($ million)", "412.0", "468.5"],
            ["Gross margin", "41.2%", "43.8%"],
            ["R&D spending ($ million)", "51.3", "60.9"],
            ["Operating income ($ million)", "58.7", "71.4"],
            ["Employees at year end", "1,840", "2,015"],
        ],
        colWidths=[7 * cm, 3 * cm, 3 * cm],
    )
    table.setStyle(
        TableStyle(
            [
                ("GRID", (0, 0), (-1, -1), 0.6, colors.black),
                ("BACKGROUND", (0, 0), (-1, 0), colors.lightgrey),
                ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
                ("ALIGN", (1, 0), (-1, -1), "RIGHT"),
            ]
        )
    )
    chart = _bar_chart(
        {"Sensors": 212.4, "Controllers": 156.1, "Services": 100.0}, "Revenue by segment 2024"
    )
    story += [
        table,
        Spacer(1, 10),
        Paragraph("2.1 Segments", h2),
        Paragraph(
            "Sensors remained our largest segment with revenue of 212.4 million dollars. "
            "Controllers contributed 156.1 million and Services reached 100.0 million for the "
            "first time, growing 31 percent as more customers chose multi-year calibration plans.",
            BODY,
        ),
        RLImage(io.BytesIO(chart), width=14 * cm, height=8 * cm),
        Paragraph("Figure 1: Revenue by segment in 2024, in millions of dollars.", CAPTION),
        PageBreak(),
        Paragraph("3 Outlook for 2025", h1),
        Paragraph(
            "For fiscal 2025 we expect revenue between 505 and 520 million dollars and a gross "
            "margin of about 44 percent. We plan to hire 150 engineers, mostly in firmware and "
            "data services, and to launch the T-300 logger with cellular connectivity in the "
            "second half of the year.",
            BODY,
        ),
        Paragraph("4 Principal Risks", h1),
        ListFlowable(
            [
                ListItem(Paragraph(t, BODY))
                for t in (
                    "Supply of temperature-compensated crystal oscillators from a single vendor.",
                    "Currency movements between the US dollar, the euro and the Polish zloty.",
                    "Longer approval cycles at public water utilities.",
                )
            ],
            bulletType="bullet",
        ),
    ]
    doc.build(story, onFirstPage=_furniture(title), onLaterPages=_furniture(title))


def research_note(path: Path) -> None:
    doc = BaseDocTemplate(str(path), pagesize=A4, title="Drift of thermal loggers in cold storage")
    gap = 0.8 * cm
    width = (A4[0] - 4 * cm - gap) / 2
    frames = [
        Frame(2 * cm, 2 * cm, width, A4[1] - 6 * cm, id="left"),
        Frame(2 * cm + width + gap, 2 * cm, width, A4[1] - 6 * cm, id="right"),
    ]

    def header(canvas, doc) -> None:  # type: ignore[no-untyped-def]
        canvas.saveState()
        canvas.setFont("Helvetica-Bold", 16)
        canvas.drawString(2 * cm, A4[1] - 2.5 * cm, "Drift of Thermal Loggers in Cold Storage")
        canvas.setFont("Helvetica", 9)
        canvas.drawString(2 * cm, A4[1] - 3.1 * cm, "Northwind Instruments Research Note RN-17")
        canvas.restoreState()

    doc.addPageTemplates([PageTemplate(id="two", frames=frames, onPage=header)])
    sections = [
        (
            "Abstract",
            [
                "We measured the calibration drift of 240 T-200 loggers kept at minus 25 degrees "
                "Celsius for eighteen months. Median drift was 0.04 degrees, well inside the 0.1 "
                "degree accuracy specification.",
                "The study was requested by three frozen-food distributors who wanted to know "
                "whether yearly recalibration is frequent enough for their cold rooms.",
            ],
        ),
        (
            "Method",
            [
                "Loggers were split into four batches, A to D, by production week. Every three "
                "months each logger was compared against a reference thermometer traceable to "
                "national standards, at set points of minus 30, minus 20 and 0 degrees.",
                "Readings were taken after a two-hour soak in a stirred ethanol bath. The "
                "uncertainty of the comparison was 0.012 degrees at the 95 percent level.",
            ],
        ),
        (
            "Results",
            [
                "Drift grew roughly linearly with time in all batches. Batches A, B and D drifted "
                "between 0.03 and 0.05 degrees over the full eighteen months.",
                "Batch C, built with a new solder paste, drifted twice as fast as the others and "
                "reached 0.09 degrees after eighteen months. No logger in any batch exceeded the "
                "specification, and none failed during the study.",
                "Battery consumption at minus 25 degrees was 22 percent higher than at room "
                "temperature, which shortens the rated battery life to about fourteen months.",
            ],
        ),
        (
            "Conclusion",
            [
                "Annual recalibration remains sufficient for cold-storage customers. We recommend "
                "a six-month check only for loggers from batch C, serial numbers C-10400 to "
                "C-11250.",
                "Customers who log at intervals shorter than one minute in freezers should plan "
                "battery replacement after one year.",
            ],
        ),
    ]
    story: list[object] = []
    for heading, texts in sections:
        story.append(Paragraph(heading, STYLES["Heading2"]))
        story.extend(Paragraph(text, BODY) for text in texts)
    doc.build(story)


FIELD_GUIDE = """# T-200 Thermal Logger Field Guide

The T-200 records temperatures from -40 to 125 °C and stores up to two million readings.

## Setup

1. Charge the logger for two hours with the USB-C cable.
2. Install the Northwind Studio app and pair the logger over Bluetooth.
3. Choose a logging interval between 1 second and 24 hours.

## Specifications

| Property | Value |
| --- | --- |
| Operating range | -40 to 125 °C |
| Accuracy | ±0.1 °C |
| Battery life | 18 months at a 5-minute interval |
| Storage | 2,000,000 readings |
| Ingress protection | IP68 |

Table 1: T-200 specifications.

## Error codes

| Code | Meaning | What to do |
| --- | --- | --- |
| E12 | Sensor disconnected | Reseat the probe connector |
| E31 | Battery low | Charge the logger |
| E47 | Memory full | Download the readings, then clear the memory |

## Calibration

Send the logger to a Northwind laboratory once a year. Calibration takes five working days and
includes a certificate traceable to national standards.
"""

FAQ = """NORTHWIND SUPPORT FAQ

Warranty
--------

Every Northwind instrument comes with a three-year warranty covering defects in materials and
workmanship. Batteries are covered for one year.

Returns
-------

You can return an unused instrument within 45 days of delivery for a full refund. Contact
support first to receive a return authorisation number.

Firmware
--------

Firmware updates are free for the life of the product. The Northwind Studio app installs them
automatically when the logger is connected.
"""


def maintenance_docx(path: Path) -> None:
    import docx

    document = docx.Document()
    document.core_properties.title = "T-200 Maintenance Procedure"
    document.add_heading("T-200 Maintenance Procedure", level=0)
    document.add_heading("1 Monthly checks", level=1)
    document.add_paragraph(
        "Inspect the probe cable for cuts and the housing seal for cracks. Replace the desiccant "
        "pack when its indicator has turned pink."
    )
    for step in ("Wipe the sensor window", "Check the seal", "Replace the desiccant pack"):
        document.add_paragraph(step, style="List Number")
    document.add_heading("2 Spare parts", level=1)
    document.add_paragraph("Table 1: Spare parts and their order numbers.", style="Caption")
    rows = [
        ("Part", "Order number", "Replace every"),
        ("Housing seal", "NW-S-204", "24 months"),
        ("Desiccant pack", "NW-D-017", "6 months"),
        ("Probe cable", "NW-C-350", "when damaged"),
    ]
    table = document.add_table(rows=len(rows), cols=3)
    table.style = "Table Grid"
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    document.save(str(path))


def launch_pptx(path: Path) -> None:
    from pptx import Presentation

    deck = Presentation()
    slides = [
        ("T-300 Launch Plan", ["Cellular connectivity for cold chains", "Ships in Q3 2025"]),
        ("Why customers want it", ["No gateway to install", "Alerts within 60 seconds"]),
        ("Pricing", ["Logger: 249 dollars", "Data plan: 9 dollars per month"]),
    ]
    for title, bullets in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        body = slide.placeholders[1].text_frame
        body.text = bullets[0]
        for bullet in bullets[1:]:
            body.add_paragraph().text = bullet
        slide.notes_slide.notes_text_frame.text = f"Speaker notes for {title.lower()}."
    deck.save(str(path))


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else "samples/corpus")
    out.mkdir(parents=True, exist_ok=True)
    annual_report(out / "northwind-annual-report-2024.pdf")
    research_note(out / "research-note-rn17.pdf")
    (out / "t200-field-guide.md").write_text(FIELD_GUIDE, encoding="utf-8")
    (out / "support-faq.txt").write_text(FAQ, encoding="utf-8")
    maintenance_docx(out / "t200-maintenance.docx")
    launch_pptx(out / "t300-launch.pptx")
    print(f"wrote 6 documents to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
