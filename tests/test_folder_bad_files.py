"""No file can stop a folder build or update: every bad kind is named, the rest is indexed.

The folder of tests/bad_folder_support.py (encrypted PDFs of three algorithms with and without a
password, truncated, image-only and HTML-named PDFs, undecodable and non-ASCII names, links out,
loops, a FIFO, an unreadable file, empty, huge and binary files under text names). The hash
embedder: seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from bad_folder_support import GOOD_TEXT, UNREADABLE, make_bad_folder
from docs_support import make_folder

from reagent_local.config import load_config
from reagent_local.retrieval import Index, build_index, update_index
from reagent_local.retrieval import doc_passages, folder_build
from reagent_local.retrieval.folder_scan import REASONS, FileEntry, scan
from reagent_local.retrieval.store import PassageStore


def _config(tmp_path: Path):
    return load_config({"paths.home": str(tmp_path / "home"), "retrieval.embedder": "hash-64",
                        "retrieval.max_file_mb": 0.5}, env={})


@pytest.fixture
def refuse_unreadable(monkeypatch):
    """chmod 000 stops no reader running as root (the tests do): refuse that file as the kernel would."""
    real = folder_build._read

    def read(entry, max_bytes):
        if entry.rel.rsplit("/", 1)[-1] == UNREADABLE:
            raise PermissionError(13, "Permission denied", str(entry.path))
        return real(entry, max_bytes)

    monkeypatch.setattr(folder_build, "_read", read)


def _indexed(path: Path) -> dict[str, dict]:
    store = PassageStore(path / "passages.duckdb")
    try:
        return {f["path"]: f for f in store.files()}
    finally:
        store.close()


def _check(path: Path, lines: list[str], read: set[str], named: dict[str, str], prefix: str = "") -> None:
    indexed = _indexed(path)
    assert read <= set(indexed), sorted(read - set(indexed))
    manifest = json.loads((path / "manifest.json").read_text())
    listed = {s["path"]: s["reason"] for s in manifest["folder"]["skipped_files"]}
    said = "\n".join(lines)
    for rel, reason in named.items():
        assert listed.get(rel) == reason, (rel, listed.get(rel))
        assert f"skipped {rel}: {REASONS[reason]}" in said, (rel, said)
        assert rel not in indexed
    # the truncated PDF is read in part or named damaged, never a crash; nothing is both read and skipped
    truncated = f"{prefix}pdfs/truncated.pdf"
    assert truncated in indexed or listed.get(truncated) == "damaged"
    assert not set(indexed) & set(listed)
    assert all("\n" not in line and "Traceback" not in line for line in lines)
    assert "Secrets outside" not in json.dumps(list(indexed))


def test_a_build_over_every_bad_kind_reads_the_good_files_and_names_each_bad_one(tmp_path, refuse_unreadable):
    folder, read, named = make_bad_folder(tmp_path)
    lines: list[str] = []
    path = build_index(folder, "bad", _config(tmp_path), progress=False, log=lines.append)
    _check(path, lines, read, named)
    with Index.open("bad", _config(tmp_path)) as index:
        hits = index.search("Open AES-256 spare valves", k=10, mode="sparse")
        assert "pdfs/open-aes256.pdf" in {h.passage.origin.path for h in hits}  # decrypted with the empty password
        found = {h.passage.origin.path for h in index.search("Latin-1 name", k=3, mode="sparse")}
        assert "names/caf\\xe9-latin1.txt" in found  # the undecodable name, its bytes written as \xNN


def test_an_update_over_every_bad_kind_does_the_same(tmp_path, refuse_unreadable):
    docs = make_folder(tmp_path)
    config = _config(tmp_path)
    build_index(docs, "docs", config, progress=False)
    bad, read, named = make_bad_folder(tmp_path / "more")
    os.rename(bad, docs / "bad")
    lines: list[str] = []
    path = update_index("docs", config, progress=False, log=lines.append)
    _check(path, lines, {f"bad/{r}" for r in read}, {f"bad/{r}": reason for r, reason in named.items()}, "bad/")
    assert "guide.md" in _indexed(path)
    again: list[str] = []
    path = update_index("docs", config, progress=False, log=again.append)  # and the next one too
    assert f"skipped bad/pdfs/locked-aes128.pdf: {REASONS['encrypted']} (it needs a password)" in again


def test_a_reader_that_crashes_skips_its_file_with_the_error_named(tmp_path, monkeypatch):
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "good.md").write_text(f"# Good\n\n{GOOD_TEXT}\n", encoding="utf-8")
    (folder / "odd.csv").write_text("a,b\n1,2\n", encoding="utf-8")

    def broken(_text):
        raise RuntimeError("a bug in a reader")

    monkeypatch.setitem(doc_passages.TEXTUAL, "csv", broken)
    lines: list[str] = []
    path = build_index(folder, "f", _config(tmp_path), progress=False, log=lines.append)
    assert "skipped odd.csv: could not be read (RuntimeError: a bug in a reader)" in lines
    assert set(_indexed(path)) == {"good.md"}


def test_a_fifo_in_place_of_a_listed_file_is_refused_without_waiting(tmp_path):
    fifo = tmp_path / "was-a-file.txt"
    os.mkfifo(fifo)
    entry = FileEntry("was-a-file.txt", fifo, "text", 10, 0)
    outcome: list[object] = []
    reader = threading.Thread(target=lambda: outcome.append(_attempt(entry)), daemon=True)
    reader.start()
    reader.join(5)
    assert not reader.is_alive(), "reading a FIFO waited for a writer"
    assert outcome == ["not-regular"]


def _attempt(entry: FileEntry) -> str:
    try:
        folder_build._read(entry, 1000)
    except folder_build._NotRegular:
        return "not-regular"
    return "read"


def test_the_size_limit_is_a_setting_and_the_scan_names_it(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "big.txt").write_text("word " * 50_000, encoding="utf-8")  # 250 KB
    assert [s.line() for s in scan(folder, max_bytes=100_000).skipped] == [
        "big.txt: too large (0.238 MB, over the limit of 0.0954 MB: retrieval.max_file_mb)"]
    assert [f.rel for f in scan(folder).files] == ["big.txt"]


def test_the_cli_builds_the_bad_folder_without_a_stack_trace(tmp_path):
    folder, _read, _named = make_bad_folder(tmp_path)
    env = {**os.environ, "REAGENT_HOME": str(tmp_path / "home"), "REAGENT_RETRIEVAL_EMBEDDER": "hash-64",
           "REAGENT_RETRIEVAL_MAX_FILE_MB": "0.5", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "reagent_local", "index", "build", str(folder), "--name", "bad",
                           "--quiet"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    for needle in ("skipped pdfs/locked-aes256.pdf: an encrypted PDF", "skipped pdfs/scan.pdf: no text layer (needs OCR)",
                   "skipped pipe.txt: not a regular file (a FIFO)", "skipped links/loop-a: a link that loops",
                   "skipped pdfs/download.pdf: not a PDF (it holds an HTML page", "skipped huge.txt: too large"):
        assert needle in done.stderr, done.stderr
    info = subprocess.run([sys.executable, "-m", "reagent_local", "index", "info", "bad"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert "notes.txt: binary content under a text name" in info.stdout, info.stdout
