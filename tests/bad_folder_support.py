"""A folder holding every kind of file that once stopped a build, made at test time, beside good files.

``make_bad_folder(root)`` returns the folder, the files that must be read (path from the folder)
and the files that must be named as skipped, with their reason. Nothing binary is committed:
the PDFs are written by ``reagent_local.testing.text_pdf`` and pypdf (encrypted with RC4,
AES-128 and AES-256, with the empty password and with a real one).
"""

from __future__ import annotations

import io
import os
from pathlib import Path

from reagent_local.testing import text_pdf

GOOD_TEXT = ("The north workshop keeps its spare valves in the blue cabinet beside the door, "
             "and the key hangs on the hook marked seven.")
ALGORITHMS = ("RC4-128", "AES-128", "AES-256")
UNREADABLE = "secret.md"  # chmod 000; tests run as root read it anyway, so they simulate the refusal


def encrypted(text: str, algorithm: str, password: str) -> bytes:
    """A one-page PDF encrypted with ``algorithm``; user password ``password`` ('' opens without one)."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(text_pdf([text]))))
    writer.encrypt(user_password=password, owner_password="owner-secret", algorithm=algorithm)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_bad_folder(root: Path, huge_bytes: int = 600_000) -> tuple[Path, set[str], dict[str, str]]:
    """(folder, files that are read, {file named as skipped: reason}); ``huge_bytes``: the huge file's size."""
    folder = root / "bad"
    (folder / "pdfs").mkdir(parents=True)
    (folder / "names").mkdir()
    (folder / "links").mkdir()
    read: set[str] = set()
    named: dict[str, str] = {}
    (folder / "good.md").write_text(f"# Valves\n\n{GOOD_TEXT}\n", encoding="utf-8")
    (folder / "pdfs" / "good.pdf").write_bytes(text_pdf([GOOD_TEXT, "The second page names the boiler room."]))
    read |= {"good.md", "pdfs/good.pdf"}
    for algorithm in ALGORITHMS:
        slug = algorithm.lower().replace("-", "")
        (folder / "pdfs" / f"open-{slug}.pdf").write_bytes(encrypted(f"Open {algorithm}: {GOOD_TEXT}", algorithm, ""))
        (folder / "pdfs" / f"locked-{slug}.pdf").write_bytes(encrypted(f"Locked {algorithm}.", algorithm, "pw"))
        read.add(f"pdfs/open-{slug}.pdf")
        named[f"pdfs/locked-{slug}.pdf"] = "encrypted"
    whole = text_pdf([GOOD_TEXT * 3])
    (folder / "pdfs" / "truncated.pdf").write_bytes(whole[: len(whole) // 3])  # read in part or named damaged
    (folder / "pdfs" / "scan.pdf").write_bytes(text_pdf(["1", "2", "3", "4"]))  # page numbers, no text layer
    named["pdfs/scan.pdf"] = "no-text-pdf"
    (folder / "pdfs" / "download.pdf").write_text("<!DOCTYPE html><html><body>Not found</body></html>",
                                                  encoding="utf-8")
    named["pdfs/download.pdf"] = "not-pdf"
    # names: not UTF-8 (bytes), and UTF-8 beyond ASCII
    with open(os.path.join(os.fsencode(folder / "names"), b"caf\xe9-latin1.txt"), "wb") as stream:
        stream.write(f"Latin-1 name. {GOOD_TEXT}".encode())
    read.add("names/caf\\xe9-latin1.txt")
    (folder / "names" / "résumé.md").write_text(f"# Résumé\n\n{GOOD_TEXT}\n", encoding="utf-8")
    (folder / "names" / "日本語.txt").write_text(f"Japanese name. {GOOD_TEXT}\n", encoding="utf-8")
    read |= {"names/résumé.md", "names/日本語.txt"}
    # links: out of the folder, looping, broken, and inside (counted, not named: its target is read)
    outside = root / "outside.md"
    outside.write_text("# Outside\n\nSecrets outside the folder.\n", encoding="utf-8")
    os.symlink(outside, folder / "links" / "outside.md")
    os.symlink("loop-b", folder / "links" / "loop-a")  # relative: the folder may be moved
    os.symlink("loop-a", folder / "links" / "loop-b")
    os.symlink("missing.md", folder / "links" / "broken.md")
    os.symlink("../good.md", folder / "links" / "inside.md")
    os.symlink("..", folder / "links" / "folder-loop")
    named.update({"links/outside.md": "link-outside", "links/loop-a": "link-loop", "links/loop-b": "link-loop",
                  "links/broken.md": "link-broken"})
    os.mkfifo(folder / "pipe.txt")  # a read would wait for a writer for ever
    named["pipe.txt"] = "special"
    (folder / UNREADABLE).write_text("# Secret\n\nNobody may read this.\n", encoding="utf-8")
    os.chmod(folder / UNREADABLE, 0)
    named[UNREADABLE] = "unreadable"
    (folder / "empty.md").write_bytes(b"")
    (folder / "blank.txt").write_text("\n   \n\t\n", encoding="utf-8")
    named.update({"empty.md": "empty", "blank.txt": "empty"})
    (folder / "huge.txt").write_text(("Line of a log. " * 8 + "\n") * (huge_bytes // 121 + 1), encoding="utf-8")
    named["huge.txt"] = "too-large"
    (folder / "notes.txt").write_bytes(b"\x00\x01binary\x00" * 200)  # binary under a text name
    (folder / "fake.docx").write_bytes(b"\x00garbage, not a zip" * 10)
    (folder / "fake.xlsx").write_bytes(b"PK\x03\x04 a truncated zip")
    (folder / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    (folder / "broken.epub").write_bytes(_zip_without_container())
    named.update({"notes.txt": "not-text", "fake.docx": "damaged-file", "fake.xlsx": "damaged-file",
                  "broken.ipynb": "damaged-file", "broken.epub": "damaged-file"})
    return folder, read, named


def _zip_without_container() -> bytes:
    import zipfile

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as package:
        package.writestr("mimetype", "application/epub+zip")
    return out.getvalue()
