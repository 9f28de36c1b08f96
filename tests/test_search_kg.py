"""`reagent search --kg`: entities and ranked triples from an index's graph, and why an index has none."""

from __future__ import annotations

import json
from pathlib import Path
from xml.sax.saxutils import escape

import pytest
from click.testing import CliRunner

from reagent_local.cli import cli, main
from reagent_local.config import load_config
from reagent_local.errors import IndexMismatchError, QuestionError
from reagent_local.retrieval.kg_lookup import NoKnowledgeGraphError, lookup, open_index_graph
from reagent_local.retrieval import build_index

PAGES = [
    ("Alabama", """{{Infobox U.S. state
| Capital = [[Montgomery, Alabama|Montgomery]]
| LargestCity = [[Birmingham, Alabama|Birmingham]]
}}'''Alabama''' is a state in the southeastern United States. Its capital is Montgomery."""),
    ("Actrius", """{{Infobox film
| name = Actresses
| director = [[Ventura Pons]]
| language = Catalan
}}'''Actrius''' is a 1997 Catalan drama film directed by Ventura Pons."""),
    ("Albedo", "'''Albedo''' is the fraction of sunlight that a surface reflects."),
]
HOTPOT = [{"_id": "q1", "question": "What is the capital of Alabama?", "answer": "Montgomery", "type": "bridge",
           "level": "easy", "supporting_facts": [["Alabama", 0]],
           "context": [["Alabama", ["Alabama is a state whose capital is Montgomery."]]]}]


def write_dump(path: Path, pages=PAGES) -> Path:
    body = "".join(
        f"<page><title>{escape(t)}</title><ns>0</ns><id>{i}</id><revision><id>{i}</id>"
        f"<text>{escape(text)}</text></revision></page>"
        for i, (t, text) in enumerate(pages, 1)
    )
    path.write_text(f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">{body}</mediawiki>', encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home with four hash-64 indexes: a dump with its graph, the same dump --no-kg, JSONL, HotpotQA."""
    root = tmp_path_factory.mktemp("search-kg")
    config = load_config({"paths.home": str(root / "home"), "retrieval.embedder": "hash-64"}, env={})
    dump = write_dump(root / "dump.xml")
    build_index(dump, "wiki", config, progress=False)
    build_index(dump, "wiki-nokg", config, kg=False, progress=False)
    jsonl = root / "docs.jsonl"
    jsonl.write_text(json.dumps({"title": "Alabama", "text": "Its capital is Montgomery."}) + "\n", encoding="utf-8")
    build_index(jsonl, "plain", config, progress=False)
    hotpot = root / "hotpot.json"
    hotpot.write_text(json.dumps(HOTPOT), encoding="utf-8")
    build_index(hotpot, "bench-hotpot", config, fmt="hotpotqa", progress=False)
    return root / "home"


@pytest.fixture
def env(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REAGENT_HOME", str(home))
    monkeypatch.setenv("REAGENT_RETRIEVAL_EMBEDDER", "hash-64")
    monkeypatch.delenv("REAGENT_CONFIG", raising=False)
    return home


def test_text_output_lists_entities_then_ranked_triples_with_provenance(env):
    result = CliRunner().invoke(cli, ["search", "--kg", "Who directed Actrius?", "--index", "wiki"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "entities: Actrius"
    assert lines[1] == "1. Actrius | director | Ventura Pons  [Actrius#0]"
    shown = CliRunner().invoke(cli, ["search", "--kg", "What is the capital of Alabama?", "--index", "wiki", "-k", "1"])
    assert shown.output.splitlines()[1:] == ['1. Alabama | capital | Montgomery, Alabama  (shown as "Montgomery")  [Alabama#0]']


def test_json_output_has_rank_value_display_and_passage(env):
    result = CliRunner().invoke(cli, ["search", "--kg", "What is the largest city of Alabama?", "--index", "wiki",
                                      "-k", "2", "--json"])
    data = json.loads(result.output)
    assert data["index"] == "wiki" and data["entities"] == ["Alabama"] and len(data["triples"]) == 2
    first = data["triples"][0]
    assert (first["rank"], first["relation"], first["value"], first["display"], first["passage_id"]) == (
        1, "largest_city", "Birmingham, Alabama", "Birmingham", "Alabama#0")


def test_a_query_naming_no_entity_says_so(env):
    result = CliRunner().invoke(cli, ["search", "--kg", "What reflects sunlight?", "--index", "wiki"])
    assert result.exit_code == 0 and result.output.strip() == "no entity of the knowledge graph is named in the query"


def test_graph_search_needs_no_embedder(env, monkeypatch):
    # The passages were embedded with hash-64; a graph lookup must not load or check any embedder.
    monkeypatch.setenv("REAGENT_RETRIEVAL_EMBEDDER", "hash-32")
    result = CliRunner().invoke(cli, ["search", "--kg", "Who directed Actrius?", "--index", "wiki"])
    assert result.exit_code == 0 and "Ventura Pons" in result.output
    passages = CliRunner().invoke(cli, ["search", "Who directed Actrius?", "--index", "wiki"])
    assert isinstance(passages.exception, IndexMismatchError)  # the passage search does refuse it


@pytest.mark.parametrize("index, expected", [
    ("wiki-nokg", ["built from a dump with --no-kg", "rebuild it without --no-kg", "--name wiki-nokg --force"]),
    ("plain", ["built from jsonl documents", "no infoboxes", "MediaWiki XML dump"]),
    ("bench-hotpot", ["built from HotpotQA paragraphs", "no infoboxes", "without --kg"]),
])
def test_an_index_without_graph_is_one_error_that_says_why(env, capsys, index, expected):
    with pytest.raises(SystemExit) as exit_info:
        main(["search", "--kg", "capital of Alabama", "--index", index])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1 and "Traceback" not in err
    assert f"index {index} has no knowledge graph" in err
    for text in expected:
        assert text in err, (text, err)


def test_library_lookup(env):
    config = load_config()
    with pytest.raises(NoKnowledgeGraphError):
        open_index_graph("wiki-nokg", config)
    with open_index_graph("wiki", config) as graph:
        found = lookup(graph, "capital of alabama", k=10)
        assert found.entities == ["Alabama"] and found.triples[0].value == "Montgomery, Alabama"
        assert [t["rank"] for t in found.to_dict()["triples"]] == list(range(1, len(found.triples) + 1))
        with pytest.raises(QuestionError, match="empty"):
            lookup(graph, "  ")
