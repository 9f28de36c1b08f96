"""docx, pptx, xlsx, csv, odt, epub, ipynb and eml in a folder index, each passage with its precise origin;
titles from a heading that heads the file; ligatures in PDF text. Real files made by the tests; the hash
embedder: seconds."""

from __future__ import annotations

import json

import pytest
from docs_support import hash_config
from formats_support import FACTS, STAFF_CSV, eml_bytes, epub_bytes, ipynb_text, make_formats, pptx_bytes, xlsx_bytes

from reagent_local.retrieval import Index, build_index
from reagent_local.retrieval.doc_passages import read_document
from reagent_local.retrieval.folder_scan import kind_of
from reagent_local.retrieval.passages import Origin
from reagent_local.retrieval.pdf_text import pdf_blocks, unligature
from reagent_local.retrieval.store import PassageStore
from reagent_local.testing import text_pdf


def _read(name: str, data: bytes):
    return read_document(name, data, kind_of(name))


def test_every_format_is_read_and_each_fact_carries_its_origin(tmp_path):
    folder = make_formats(tmp_path / "kept")
    config = hash_config(tmp_path)
    path = build_index(folder, "kept", config, progress=False)
    store = PassageStore(path / "passages.duckdb")
    try:
        passages = list(store.passages(0, store.count()))
        files = {f["path"]: f for f in store.files()}
    finally:
        store.close()
    assert set(files) == set(FACTS)
    for name, (_question, answer, label) in FACTS.items():
        holding = [p for p in passages if p.origin.path == name and answer.replace(",", "") in p.text.replace(",", "")]
        assert holding, (name, [p.text for p in passages if p.origin.path == name])
        assert label in {p.origin.label() for p in holding}, (name, [p.origin.label() for p in holding])
    assert files["report.docx"]["title"] == "Annual Report" and files["book.epub"]["title"] == "Birds of the North"
    assert files["mail.eml"]["title"] == "Boiler service" and files["staff.csv"]["title"] == "staff"
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["folder"]["skipped"] == {} and manifest["documents"] == len(FACTS)
    with Index.open("kept", config) as index:  # the exact words find each file's passage
        hit = index.search("copper pipes Halvorsen", k=1, mode="sparse")[0]
        assert hit.passage.origin.label() == FACTS["report.docx"][2]


def test_pptx_slides_are_pages_with_the_slide_title_as_heading_and_notes_read():
    document = _read("deck.pptx", pptx_bytes())
    assert document.title == "Workshop Year"
    origins = [p.origin for p in document.passages]
    assert [(o.page, o.heading) for o in origins] == [(1, ("Workshop Year",)), (2, ("Open Day Results",))]
    assert origins[1].label() == "deck.pptx § Open Day Results, slide 2"
    second = document.passages[1].text
    assert "4,200 visitors" in second and "Source: the gate counter." in second and "Notes: Mention the weather." in second


def test_sheet_rows_are_lines_with_the_header_named_in_each_row():
    document = _read("budget.xlsx", xlsx_bytes())
    repairs = [p for p in document.passages if p.origin.heading == ("Repairs",)]
    assert [p.origin.lines for p in repairs] == [(1, 4)]
    assert "Repair: Roof repair; Cost: 18750; Month: April" in repairs[0].text.split("\n")
    rows = _read("staff.csv", STAFF_CSV.encode()).passages
    assert rows[0].origin == Origin("staff.csv", (), None, (1, 4))
    assert rows[0].text.split("\n")[2] == "name: Ilse Lind; role: caretaker; wing: east"
    # a long table is cut between rows, each passage citing its own rows
    long_csv = "item,note\n" + "".join(f"part {n},a note about part {n} with several more words in it\n"
                                       for n in range(2, 62))
    cut = _read("parts.csv", long_csv.encode()).passages
    assert len(cut) > 1 and cut[0].origin.lines[0] == 1 and cut[-1].origin.lines[1] == 61
    for passage in cut:
        first, last = passage.origin.lines
        assert f"item: part {max(first, 2)};" in passage.text and f"item: part {last};" in passage.text
    semicolons = _read("eu.csv", "name;city\nAnna;Oslo\nOle;Bergen\n".encode()).passages[0].text
    assert "name: Ole; city: Bergen" in semicolons  # the delimiter is sniffed


def test_notebook_cells_are_lines_and_headings_run_across_cells():
    document = _read("analysis.ipynb", ipynb_text().encode())
    assert document.title == "Rainfall"
    assert [p.origin.label() for p in document.passages] == ["analysis.ipynb § Rainfall, cells 1-2",
                                                            "analysis.ipynb § Rainfall > Results, cells 3-4"]
    assert "Output:\n87" in document.passages[1].text


def test_epub_chapters_are_named_by_the_table_of_contents():
    document = _read("book.epub", epub_bytes())
    assert [p.origin.heading for p in document.passages] == [("Chapter 1: The Forest",), ("Chapter 2: The Lake",)]
    assert "heron of Lake Varn is blue" in document.passages[1].text


def test_a_mail_is_titled_by_its_subject_and_headed_by_its_sender():
    document = _read("mail.eml", eml_bytes())
    assert document.title == "Boiler service"
    text = document.passages[0].text
    assert text.startswith("From: Ilse Lind <ilse@example.org>\nTo: workshop@example.org\nDate:")
    assert "Attachments (not read): invoice.pdf" in text and "serviced on 14 March" in text
    assert "%PDF" not in text


@pytest.mark.parametrize("name,data", [("fake.docx", b"PK\x03\x04 short"), ("fake.pptx", b"not a zip"),
                                       ("fake.odt", b"PK\x05\x06" + b"\x00" * 18), ("fake.epub", b"\x00" * 40),
                                       ("fake.ipynb", b'{"cells": 3}'), ("fake.eml", b"\xff\xfe just bytes")])
def test_a_damaged_file_of_each_format_is_named_not_raised(name, data):
    from reagent_local.retrieval.pdf_text import Unreadable

    with pytest.raises(Unreadable) as raised:
        _read(name, data)
    assert raised.value.reason in {"damaged-file", "not-text", "binary"}, raised.value.reason


def test_the_title_is_a_heading_that_heads_the_whole_file_else_the_file_name():
    changelog = "## Version 8.5.0\n\nFixed the parser.\n\n## Version 8.4.0\n\nAdded a flag.\n"
    assert _read("CHANGES.md", changelog.encode()).title == "CHANGES"  # no heading stands for the whole file
    assert _read("guide.md", b"## Install\n\nRun it.\n\n### Options\n\nNone.\n").title == "Install"
    assert _read("guide.md", b"# Kettle\n\nIntro.\n\n## Use\n\nBoil.\n").title == "Kettle"
    assert _read("notes.md", b"Just a paragraph of notes.\n").title == "notes"
    page = b"<html><body><h2>Release 3</h2><p>One.</p><h2>Release 2</h2><p>Two.</p></body></html>"
    assert _read("releases.html", page).title == "releases"


def test_ligatures_are_letters_in_pdf_text():
    assert unligature("Simpli\ufb01ed e\ufb03cient \ufb02ow \ufb00 \ufb04 \ufb05 \ufb06") == "Simplified efficient flow ff ffl st st"
    blocks = pdf_blocks(text_pdf(["The e\x0ecient path was simpli\x0ced; \x0cnd it on page one of the manual."]))
    assert blocks.blocks[0].text == "The efficient path was simplified; find it on page one of the manual."


def test_an_image_only_pdf_is_named_as_needing_ocr_by_its_characters_per_page():
    from reagent_local.retrieval.pdf_text import MIN_CHARS_PER_PAGE, Unreadable

    with pytest.raises(Unreadable) as raised:
        pdf_blocks(text_pdf(["1", "2", "Page 3", ""]))
    assert raised.value.reason == "no-text-pdf" and raised.value.detail == "7 characters of text on 4 pages"
    enough = "x" * (MIN_CHARS_PER_PAGE * 2)
    assert pdf_blocks(text_pdf([enough, ""])).blocks  # one page of text carries a blank one


def test_origins_of_new_formats_label_their_units():
    assert Origin("d.pptx", ("Intro",), 3).label() == "d.pptx § Intro, slide 3"
    assert Origin("b.xlsx", ("Q3",), None, (2, 9)).label() == "b.xlsx § Q3, rows 2-9"
    assert Origin("n.ipynb", (), None, (4, 4)).label() == "n.ipynb, cell 4"
    assert Origin("p.pdf", (), 2).label() == "p.pdf, page 2" and Origin("a.md", (), None, (1, 2)).place() == "lines 1-2"
    assert Origin("Makefile", (), None, (1, 1)).place() == "line 1"


def test_one_office_file_is_a_source_too(tmp_path):
    folder = make_formats(tmp_path / "kept")
    path = build_index(folder / "deck.pptx", "deck", hash_config(tmp_path), progress=False)
    manifest = json.loads((path / "manifest.json").read_text())
    assert (manifest["format"], manifest["documents"], manifest["passages"]) == ("docs", 1, 2)


def test_a_docx_heading_set_by_outline_level_and_the_title_rule():
    import io

    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    document = docx.Document()
    custom = document.add_paragraph("Custom outline heading")
    level = OxmlElement("w:outlineLvl")
    level.set(qn("w:val"), "1")  # 0-based: a level-2 heading without a Heading style
    custom._p.get_or_add_pPr().append(level)
    document.add_paragraph("Body under it.")
    document.add_heading("Real Heading", 1)
    document.add_paragraph("Body two.")
    out = io.BytesIO()
    document.save(out)
    read = _read("memo.docx", out.getvalue())
    assert [p.origin.heading for p in read.passages] == [("Custom outline heading",), ("Real Heading",)]
    assert read.title == "memo"  # the first heading is not above the later level-1 one: the file name
