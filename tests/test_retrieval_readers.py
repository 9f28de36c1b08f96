"""Corpus readers: MediaWiki dumps (wikitext stripping), JSONL, TSV, benchmark files, format detection, bad input."""

from __future__ import annotations

import bz2
import json

import pytest

from reagent_local.errors import CorpusFormatError
from reagent_local.retrieval.readers import Document, detect_format, read_documents
from reagent_local.retrieval.wikitext import strip_wikitext

MARKUP = ("{|", "|-", "{{", "}}", "[[", "]]", "<ref", "'''", "|}")

ARTICLE = """{{Infobox film
| name = Actrius
| director = [[Ventura Pons]]
}}
'''''Actrius''''' is a 1997 [[Catalan language|Catalan]] film directed by [[Ventura Pons]].<ref>{{cite web|url=http://x}}</ref> It won prizes.<ref name="a" />
[[File:Poster.jpg|thumb|The ''poster'' of the film]]

== Cast ==
* [[Núria Espert]] as Glòria
* Rosa Maria Sardà &amp; friends

{| class="wikitable"
|-
! Year !! Award
|-
| 1997 || Best Film
|}
<!-- a hidden comment -->
See [http://example.org the site] and [[:Category:Films]].

== References ==
{{reflist}}
* Some book, 1999.

== External links ==
* [http://imdb.com IMDb]

[[Category:1997 films]]
[[de:Actrius]]
__NOTOC__
"""


def _dump(pages: list[tuple[str, int, str | None, str]]) -> str:
    body = []
    for i, (title, ns, redirect, text) in enumerate(pages, 1):
        red = f'<redirect title="{redirect}" />' if redirect else ""
        body.append(
            f"<page><title>{title}</title><ns>{ns}</ns><id>{i}</id>{red}"
            f'<revision><id>{i}0</id><text xml:space="preserve">{_escape(text)}</text></revision></page>'
        )
    return ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10">'
            "<siteinfo><sitename>Wikipedia</sitename></siteinfo>" + "".join(body) + "</mediawiki>")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def test_strip_wikitext_keeps_prose_and_link_text_and_drops_markup():
    text = strip_wikitext(ARTICLE)
    assert text.startswith("Actrius is a 1997 Catalan film directed by Ventura Pons. It won prizes.")
    assert "Cast\nNúria Espert as Glòria\nRosa Maria Sardà & friends" in text
    assert "See the site and Category:Films." in text
    for gone in ("Infobox", "cite web", "Poster", "poster", "Best Film", "hidden comment", "Some book",
                 "IMDb", "1997 films", "de:", "NOTOC", "References", "External links"):
        assert gone not in text, gone
    assert not any(m in text for m in MARKUP)


def test_wikixml_reader_keeps_main_namespace_articles_and_skips_redirects(tmp_path):
    xml = _dump([("Actrius", 0, None, ARTICLE), ("Actresses", 0, "Actrius", "#REDIRECT [[Actrius]]"),
                 ("Talk:Actrius", 1, None, "chatter"), ("Empty", 0, None, "{{stub}}")])
    plain = tmp_path / "dump.xml"
    plain.write_text(xml, encoding="utf-8")
    packed = tmp_path / "dump.xml.bz2"
    packed.write_bytes(bz2.compress(xml.encode("utf-8")))
    for path in (plain, packed):
        assert detect_format(path) == "wikixml"
        docs = list(read_documents(path, "wikixml"))
        assert [d.title for d in docs] == ["Actrius", "Empty"]  # an article that strips to nothing still counts
        assert docs[0].split and "Ventura Pons" in docs[0].text and docs[1].text == ""


def test_jsonl_and_tsv_readers(tmp_path):
    jsonl = tmp_path / "docs.jsonl"
    jsonl.write_text(json.dumps({"title": "A", "text": "Alpha text."}) + "\n\n" + json.dumps({"text": "No title."}) + "\n")
    assert detect_format(jsonl) == "jsonl"
    assert list(read_documents(jsonl, "jsonl")) == [Document("A", "Alpha text."), Document("", "No title.")]
    tsv = tmp_path / "psgs.tsv"
    tsv.write_text('id\ttext\ttitle\n1\t"A text\twith a tab"\tAaa\n2\tPlain text\tBbb\n', encoding="utf-8")
    assert detect_format(tsv) == "tsv"
    assert list(read_documents(tsv, "tsv")) == [Document("Aaa", "A text\twith a tab", split=False),
                                                Document("Bbb", "Plain text", split=False)]


def test_json_array_reader_and_detection(tmp_path):
    path = tmp_path / "docs.json"
    path.write_text(json.dumps([{"title": "A", "text": "Alpha text."}, {"title": "", "text": "No title.", "id": 7}]),
                    encoding="utf-8")
    assert detect_format(path) == "json"
    assert list(read_documents(path, "json")) == [Document("A", "Alpha text."), Document("", "No title.")]
    pretty = tmp_path / "pretty.json"
    pretty.write_text('\ufeff [\n  {"title": "B", "text": "Beta."}\n]\n', encoding="utf-8")
    assert detect_format(pretty) == "json" and [d.title for d in read_documents(pretty, "json")] == ["B"]
    empty = tmp_path / "empty.json"
    empty.write_text("[]", encoding="utf-8")
    assert detect_format(empty) == "json" and list(read_documents(empty, "json")) == []


def test_json_arrays_of_benchmark_records_are_still_benchmarks(tmp_path):
    record = {"_id": "h1", "question": "q?", "answer": "a", "type": "bridge", "level": "easy",
              "supporting_facts": [["T", 0]], "context": [["T", ["Text."]]]}
    path = tmp_path / "hotpot.json"
    path.write_text(json.dumps([record]), encoding="utf-8")
    assert detect_format(path) == "hotpotqa"


@pytest.mark.parametrize(
    "content, message",
    [
        (b'[{"title": "a", "text": "b"},', "is not valid JSON"),
        (b'{"title": "a", "text": "b"}', "holds a JSON dict, not an array"),
        (b'"just a string"', "holds a JSON str, not an array"),
        (b'[{"title": "a", "text": "b"}, {"text": "no title"}]', "item 2 of the array, has no string field 'title'"),
        (b'[{"title": "a"}]', "item 1 of the array, has no string field 'text'"),
        (b'[{"title": 3, "text": ["x"]}]', "has no string field 'title' or 'text'"),
        (b'[["a", "b"]]', "item 1 of the array, is a list, not an object"),
        (b'[{"title": "a", "text": "\xff"}]', "is not UTF-8 text"),
    ],
)
def test_bad_json_corpus_is_a_clear_error(tmp_path, content, message):
    path = tmp_path / "corpus.json"
    path.write_bytes(content)
    with pytest.raises(CorpusFormatError) as info:
        list(read_documents(path, "json"))
    assert message in str(info.value) and str(path) in str(info.value)
    assert '{"title": "...", "text": "..."}' in str(info.value) or "UTF-8" in str(info.value)


def test_bad_json_is_reported_by_auto_detection_too(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('[{"title": "a", "text": "b"}', encoding="utf-8")
    with pytest.raises(CorpusFormatError, match="is not valid JSON"):
        detect_format(path)
    other = tmp_path / "other.json"
    other.write_text(json.dumps([{"name": "x"}]), encoding="utf-8")  # neither a corpus nor a benchmark
    with pytest.raises(CorpusFormatError, match="item 1 of the array, has no string field 'title' or 'text'"):
        list(read_documents(other, detect_format(other)))


def test_benchmark_reader_yields_the_deduplicated_open_corpus(tmp_path):
    rows = [{"id": "2hop__1", "question": "q", "answer": "a", "answer_aliases": [], "answerable": True,
             "question_decomposition": [],
             "paragraphs": [{"idx": 0, "title": "T", "paragraph_text": "one", "is_supporting": True},
                            {"idx": 1, "title": "T", "paragraph_text": "two", "is_supporting": False}]}] * 2
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    assert detect_format(path) == "musique"
    assert list(read_documents(path, "musique")) == [Document("T", "one", split=False), Document("T", "two", split=False)]


@pytest.mark.parametrize(
    "name, content, fmt, message",
    [
        ("page.xml.bz2", b"<!DOCTYPE html><html><body>404</body></html>", None, "HTML page"),
        ("empty.xml", b"", None, "is empty"),
        ("other.xml", b"<?xml version='1.0'?><rss><channel/></rss>", None, "not a MediaWiki export"),
        ("bad.jsonl", b'{"title": "a", "text": "b"}\nnot json\n', "jsonl", "line 2, is not JSON"),
        ("notext.jsonl", b'{"title": "a"}\n', "jsonl", 'no string field "text"'),
        ("short.tsv", b"1\tonly two\n", "tsv", "expected 3"),
        ("weird.bin", b"\x00\x01\x02 binary", None, "cannot tell the format"),
    ],
)
def test_bad_input_names_the_file(tmp_path, name, content, fmt, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(CorpusFormatError) as info:
        list(read_documents(path, fmt or detect_format(path)))
    assert message in str(info.value) and str(path) in str(info.value)


def test_truncated_bz2_dump_is_reported(tmp_path):
    xml = _dump([(f"Page {i}", 0, None, f"Text number {i} " * 200) for i in range(50)]).encode("utf-8")
    packed = bz2.compress(xml)
    path = tmp_path / "cut.xml.bz2"
    path.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(CorpusFormatError, match="truncated|not a valid"):
        list(read_documents(path, detect_format(path)))


def test_table_markup_sample_does_not_leak(shared_data):
    docs = list(read_documents(shared_data / "wiki" / "enwiki-table-markup.xml.bz2", "wikixml"))
    assert len(docs) == 5
    for doc in docs:
        assert doc.text, doc.title
        leaked = [m for m in MARKUP if m in doc.text]
        assert not leaked, (doc.title, leaked)
    estonia = next(d for d in docs if d.title == "Economy of Estonia")
    assert "Estonia" in estonia.text and "wikitable" not in estonia.text


@pytest.mark.slow  # parses the whole 6 MB sample (about 5 s)
def test_shortened_dump_sample_gives_clean_articles(wiki_dump):
    docs = list(read_documents(wiki_dump, "wikixml"))
    assert len(docs) == 106  # 206 pages, about 100 of them redirects
    actrius = next(d for d in docs if d.title == "Actrius")
    assert actrius.text.startswith("Actresses (Catalan: Actrius) is a 1997 Catalan language Spanish drama film")
    assert "directed by Ventura Pons" in actrius.text
    assert not any(m in d.text for d in docs for m in ("{{", "[[", "<ref", "{|", "'''"))
