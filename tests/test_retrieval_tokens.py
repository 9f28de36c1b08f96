"""BM25 tokenizer version 2: versions, flags, paths and identifiers whole as well as split; an index keeps the
tokenizer it was built with (old ones: version 1), and `index convert --tokenizer` changes it without re-embedding."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from docs_support import hash_config

from reagent_local.errors import IndexCorruptError
from reagent_local.retrieval import Index, build_index
from reagent_local.retrieval.convert import convert_index
from reagent_local.retrieval.sparse import SparseIndex, build_bm25
from reagent_local.retrieval.tokens import words_v1, words_v2

TECH = [
    "Version 8.2.0. Fixed the parser when a flag is repeated.",  # 0
    "Use --force to overwrite an existing index; -k sets how many passages come back.",  # 1
    "The reader lives in src/reagent/readers.py next to the scanner.",  # 2
    "Call get_user_name() or getUserName on the HTTPServer object; os.path.join builds paths.",  # 3
    "The force of the wind bent the old tree near the river.",  # 4
    "Version 8.1.9. Dropped support for Python 3.8.",  # 5
]


def test_version_one_is_bm25s_splitter() -> None:
    text = "Click 8.2.0 adds --force to src/foo.py and get_user_name"
    assert words_v1(text) == re.findall(r"(?u)\b\w\w+\b", text.lower())
    assert "8.2.0" not in words_v1(text) and "--force" not in words_v1(text)


@pytest.mark.parametrize("text, whole, parts", [
    ("released 8.2.0 today", ["8.2.0"], []),
    ("tag v8.2.0", ["v8.2.0", "8.2.0"], ["v8"]),
    ("pass --force-reinstall or -k", ["--force-reinstall", "-k"], ["force", "reinstall"]),
    ("see ./src/foo.py", ["src/foo.py", "foo.py"], ["src", "foo", "py"]),
    ("os.path.join", ["os.path.join"], ["os", "path", "join"]),
    ("get_user_name", ["get_user_name"], ["get", "user", "name"]),
    ("getUserName and HTTPServer", ["getusername", "httpserver"], ["get", "user", "name", "http", "server"]),
])
def test_version_two_keeps_the_whole_and_the_parts(text: str, whole: list[str], parts: list[str]) -> None:
    words = words_v2(text)
    assert set(whole) <= set(words) and set(parts) <= set(words)
    assert set(words_v1(text)) <= set(words)  # version 1's words are all still there


def test_prose_gains_few_tokens() -> None:
    text = "Paris is the capital of France, on the Seine; about 2,100,000 people live there."
    assert words_v2(text) == words_v1(text)


def _search(folder: Path, query: str) -> list[int]:
    return SparseIndex(folder).search(query, 3)[0]


def test_a_version_two_index_finds_versions_flags_paths_and_identifier_parts(tmp_path: Path) -> None:
    info = build_bm25(iter(TECH), tmp_path / "bm25")
    assert info["tokenizer"] == 2
    assert _search(tmp_path / "bm25", "8.2.0")[0] == 0  # not 8.1.9: the whole version is a term
    assert _search(tmp_path / "bm25", "--force")[0] == 1  # the flag beats the wind's force
    assert set(_search(tmp_path / "bm25", "force")) >= {1, 4}  # and "force" still finds "--force"
    assert _search(tmp_path / "bm25", "readers.py")[0] == 2
    assert _search(tmp_path / "bm25", "user name")[0] == 3
    assert _search(tmp_path / "bm25", "os.path.join")[0] == 3


def test_an_index_keeps_the_tokenizer_it_was_built_with(tmp_path: Path) -> None:
    build_bm25(iter(TECH), tmp_path / "v1", tokenizer=1)
    assert json.loads((tmp_path / "v1" / "params.json").read_text())["tokenizer"] == 1
    assert SparseIndex(tmp_path / "v1").tokenizer == 1
    assert _search(tmp_path / "v1", "8.2.0") == []  # version 1 has no such word, as before
    # an index built before tokenizer versions has none recorded: searched as version 1
    params = json.loads((tmp_path / "v1" / "params.json").read_text())
    del params["tokenizer"]
    (tmp_path / "v1" / "params.json").write_text(json.dumps(params))
    old = SparseIndex(tmp_path / "v1")
    assert old.tokenizer == 1 and _search(tmp_path / "v1", "8.2.0") == []
    assert old.search("get_user_name", 3)[0] == [3]


def _write_docs(folder: Path) -> Path:
    folder.mkdir()
    (folder / "CHANGES.md").write_text("# Changes\n\n## Version 8.2.0\n\nThe --force flag now replaces the index.\n\n"
                                       "## Version 8.1.9\n\nA fix in src/app/reader.py for empty files.\n",
                                       encoding="utf-8")
    (folder / "wind.md").write_text("# Wind\n\nThe force of the wind bent the old tree.\n", encoding="utf-8")
    return folder


def test_an_index_records_its_tokenizer_and_convert_changes_it_without_embedding(tmp_path: Path) -> None:
    config = hash_config(tmp_path)
    path = build_index(_write_docs(tmp_path / "docs"), "docs", config, progress=False)
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["bm25"]["tokenizer"] == 2
    with Index.open("docs", config) as index:
        top = index.search("8.2.0", k=1, mode="sparse")[0].passage
        assert "Version 8.2.0" in top.text and top.origin.path == "CHANGES.md"
    old = convert_index("docs", "docs-v1", config, None, tokenizer=1)
    assert json.loads((old / "manifest.json").read_text())["bm25"]["tokenizer"] == 1
    assert (old / "dense.faiss").stat().st_ino == (path / "dense.faiss").stat().st_ino  # shared, not re-embedded
    with Index.open("docs-v1", config) as index:
        assert index.search("8.2.0", k=1, mode="sparse") == []
        assert index.search("8.2.0", k=1, mode="hybrid")  # the dense side still answers
    # a manifest that disagrees with its BM25 files is caught when the index loads
    manifest = json.loads((old / "manifest.json").read_text())
    manifest["bm25"]["tokenizer"] = 2
    (old / "manifest.json").write_text(json.dumps(manifest))
    with Index.open("docs-v1", config) as index, pytest.raises(IndexCorruptError, match="tokenizer version 1"):
        index.search("8.2.0", k=1, mode="sparse")
