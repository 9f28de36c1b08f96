"""A folder of documents made by the tests: Markdown with headings, text, HTML, PDFs, and what is skipped."""

from __future__ import annotations

import io
import os
from pathlib import Path

from reagent_local.config import load_config
from reagent_local.testing import text_pdf

GUIDE = """# Kettle Guide

The Kettle is a small tool for boiling water in a workshop.

## Install

Run the installer from the box.
It asks for the workshop's name.

```bash
# this comment is not a heading
./install --workshop north
```

## Use

Fill the kettle to the line and press the red button.
"""
NOTES = "Notes from the meeting.\nThe budget was approved.\n\nNext meeting on Friday about the roof.\n"
PAGE = """<!DOCTYPE html>
<html><head><title>Help Page</title><style>body { color: red; }</style></head>
<body><nav>Home | About</nav>
<h1>Help</h1>
<p>Welcome to the help page
of the workshop.</p>
<h2>Contact</h2>
<ul><li>Mail the caretaker, Ilse Lind.</li></ul>
<script>var hidden = "never indexed";</script>
</body></html>
"""
PDF_PAGE_2 = "The secret of page two is the blue heron of Lake Varn."
PDF_PAGES = ["Birds of the northern lakes, a field report.\nWritten in the spring.", PDF_PAGE_2]


def encrypted_pdf() -> bytes:
    """A PDF that needs the password 'secret'."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(text_pdf(["Locked text."]))))
    writer.encrypt("secret", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_folder(root: Path) -> Path:
    """The test folder: 4 readable files and 8 entries the build leaves out."""
    docs = root / "docs"
    (docs / "papers").mkdir(parents=True)
    (docs / "sub" / ".git").mkdir(parents=True)
    (docs / "guide.md").write_text(GUIDE, encoding="utf-8")
    (docs / "notes.txt").write_text(NOTES, encoding="utf-8")
    (docs / "page.html").write_text(PAGE, encoding="utf-8")
    (docs / "papers" / "birds.pdf").write_bytes(text_pdf(PDF_PAGES, title="Birds of Nowhere"))
    (docs / ".draft.md").write_text("# Draft\n\nNot ready.\n", encoding="utf-8")  # hidden file
    (docs / "sub" / ".git" / "config").write_text("[core]\n", encoding="utf-8")  # hidden folder
    (docs / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))  # binary by its suffix
    (docs / "sub" / "blob").write_bytes(b"ab\x00\x01\x02" * 100)  # binary by its bytes
    (docs / "papers" / "locked.pdf").write_bytes(encrypted_pdf())
    (docs / "papers" / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj\n<< /Type /Catal")
    (docs / "papers" / "scan.pdf").write_bytes(text_pdf(["", ""]))
    outside = root / "outside.md"
    outside.write_text("# Outside\n\nSecrets outside the folder.\n", encoding="utf-8")
    os.symlink(outside, docs / "sub" / "outside.md")
    return docs


def hash_config(tmp_path: Path):
    """A home in tmp_path with the model-free hash embedder."""
    return load_config({"paths.home": str(tmp_path / "home"), "retrieval.embedder": "hash-64"}, env={})
