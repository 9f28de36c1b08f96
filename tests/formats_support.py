"""Files of the formats people keep, made at test time: docx, pptx, xlsx, csv, odt, epub, ipynb, eml.

Each holds one fact a test can ask about, in a place the reader must cite (a heading, a slide,
a sheet's row, a chapter, a cell, a mail's subject). docx, pptx and xlsx are written by
python-docx, python-pptx and openpyxl; odt and epub by writing their zip structure; the rest
with the standard library.
"""

from __future__ import annotations

import io
import json
import zipfile
from email.message import EmailMessage
from pathlib import Path

# file -> (a question, the answer, the origin label a citation must show)
FACTS = {
    "report.docx": ("Which supplier delivers the copper pipes?", "Halvorsen Metals",
                    "report.docx § Annual Report > Suppliers"),
    "deck.pptx": ("How many visitors came to the open day?", "4,200",
                  "deck.pptx § Open Day Results, slide 2"),
    "budget.xlsx": ("What did the roof repair cost?", "18,750",
                    "budget.xlsx § Repairs, rows 1-4"),
    "staff.csv": ("Who is the caretaker of the east wing?", "Ilse Lind", "staff.csv, rows 1-4"),
    "minutes.odt": ("When does the garden committee meet?", "every second Tuesday",
                    "minutes.odt § Minutes > Garden committee"),
    "book.epub": ("What colour is the heron of Lake Varn?", "blue",
                  "book.epub § Chapter 2: The Lake"),
    "analysis.ipynb": ("What was the mean rainfall in March?", "87 mm", "analysis.ipynb § Rainfall > Results, cells 3-4"),
    "mail.eml": ("When will the boiler be serviced?", "on 14 March",
                 "mail.eml § Boiler service (from Ilse Lind <ilse@example.org>)"),
}


def docx_bytes() -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.title = "Annual Report"
    document.add_heading("Annual Report", level=1)
    document.add_paragraph("This report covers the workshop's year.")
    document.add_heading("Suppliers", level=2)
    document.add_paragraph("The copper pipes are delivered by Halvorsen Metals of Bergen.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Item", "Supplier"
    table.cell(1, 0).text, table.cell(1, 1).text = "Valves", "Nordic Flow"
    document.add_heading("Staff", level=2)
    document.add_paragraph("Three people work in the north workshop.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx_bytes() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[0])
    first.shapes.title.text = "Workshop Year"
    first.placeholders[1].text = "A summary for the board"
    second = deck.slides.add_slide(deck.slide_layouts[1])
    second.shapes.title.text = "Open Day Results"
    second.placeholders[1].text = "4,200 visitors came to the open day.\nMost came on Saturday."
    box = second.shapes.add_textbox(Inches(1), Inches(5), Inches(4), Inches(1))
    box.text_frame.text = "Source: the gate counter."
    second.notes_slide.notes_text_frame.text = "Mention the weather."
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def xlsx_bytes() -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Income"
    sheet.append(["Source", "Amount"])
    sheet.append(["Grants", 40000])
    repairs = book.create_sheet("Repairs")
    repairs.append(["Repair", "Cost", "Month"])
    repairs.append(["Boiler", 2300, "January"])
    repairs.append(["Roof repair", 18750, "April"])
    repairs.append(["Windows", 5100, "June"])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


STAFF_CSV = "name,role,wing\nAnna Berg,cook,west\nIlse Lind,caretaker,east\nOle Dahl,gardener,north\n"


def _zip(members: list[tuple[str, str]], stored_first: str | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        for name, text in members:
            compress = zipfile.ZIP_STORED if name == stored_first else zipfile.ZIP_DEFLATED
            package.writestr(name, text, compress_type=compress)
    return out.getvalue()


def odt_bytes() -> bytes:
    content = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.3">
<office:body><office:text>
<text:h text:outline-level="1">Minutes</text:h>
<text:p>The meeting opened at six.</text:p>
<text:h text:outline-level="2">Garden committee</text:h>
<text:p>The garden committee meets<text:s/>every second Tuesday in the library.</text:p>
<text:list><text:list-item><text:p>Seeds are ordered in February.</text:p></text:list-item></text:list>
</office:text></office:body></office:document-content>"""
    meta = """<?xml version="1.0" encoding="UTF-8"?>
<office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:dc="http://purl.org/dc/elements/1.1/"><office:meta><dc:title>Minutes of March</dc:title></office:meta>
</office:document-meta>"""
    return _zip([("mimetype", "application/vnd.oasis.opendocument.text"), ("content.xml", content),
                 ("meta.xml", meta)], stored_first="mimetype")


def _xhtml(title: str, body: str) -> str:
    return (f'<?xml version="1.0" encoding="utf-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head>'
            f"<title>{title}</title></head><body>{body}</body></html>")


def epub_bytes() -> bytes:
    container = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"""
    opf = """<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Birds of the North</dc:title>
<dc:identifier id="id">urn:uuid:1</dc:identifier></metadata>
<manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
<item id="c1" href="text/ch1.xhtml" media-type="application/xhtml+xml"/>
<item id="c2" href="text/ch2.xhtml" media-type="application/xhtml+xml"/></manifest>
<spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>"""
    nav = _xhtml("Contents", '<nav xmlns:epub="http://www.idpf.org/2007/ops" epub:type="toc"><ol>'
                             '<li><a href="text/ch1.xhtml">Chapter 1: The Forest</a></li>'
                             '<li><a href="text/ch2.xhtml#start">Chapter 2: The Lake</a></li></ol></nav>')
    ch1 = _xhtml("1", "<h1>The Forest</h1><p>Owls nest in the old pines of the forest.</p>")
    ch2 = _xhtml("2", "<h1>The Lake</h1><p>The heron of Lake Varn is blue, and it fishes at dawn.</p>")
    return _zip([("mimetype", "application/epub+zip"), ("META-INF/container.xml", container),
                 ("OEBPS/content.opf", opf), ("OEBPS/nav.xhtml", nav), ("OEBPS/text/ch1.xhtml", ch1),
                 ("OEBPS/text/ch2.xhtml", ch2)], stored_first="mimetype")


def ipynb_text() -> str:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Rainfall\n", "\n", "Monthly rainfall at the station."]},
        {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [],
         "source": ["import statistics\n", "march = [80, 90, 91]"]},
        {"cell_type": "markdown", "metadata": {}, "source": "## Results\n\nThe mean rainfall in March was 87 mm."},
        {"cell_type": "code", "metadata": {}, "execution_count": 2, "source": "statistics.mean(march)",
         "outputs": [{"output_type": "execute_result", "execution_count": 2, "metadata": {},
                      "data": {"text/plain": ["87"]}}]},
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1)


def eml_bytes() -> bytes:
    message = EmailMessage()
    message["Subject"] = "Boiler service"
    message["From"] = "Ilse Lind <ilse@example.org>"
    message["To"] = "workshop@example.org"
    message["Date"] = "Mon, 02 Mar 2026 09:15:00 +0100"
    message.set_content("Hello all,\n\nthe boiler will be serviced on 14 March, so there is no hot water that "
                        "morning.\n\nIlse\n")
    message.add_attachment(b"%PDF-1.4 fake", maintype="application", subtype="pdf", filename="invoice.pdf")
    return message.as_bytes()


def make_formats(folder: Path) -> Path:
    """One file of each format in ``folder`` (created)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.docx").write_bytes(docx_bytes())
    (folder / "deck.pptx").write_bytes(pptx_bytes())
    (folder / "budget.xlsx").write_bytes(xlsx_bytes())
    (folder / "staff.csv").write_text(STAFF_CSV, encoding="utf-8")
    (folder / "minutes.odt").write_bytes(odt_bytes())
    (folder / "book.epub").write_bytes(epub_bytes())
    (folder / "analysis.ipynb").write_text(ipynb_text(), encoding="utf-8")
    (folder / "mail.eml").write_bytes(eml_bytes())
    return folder
