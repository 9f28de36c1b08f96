"""`reagent bench kg`: template questions from the graph, answer matching in passages, recalls, no-graph indexes."""

from __future__ import annotations

import json
from xml.sax.saxutils import escape

import pytest
from click.testing import CliRunner

from reagent_local.commands.bench_kg import kg as kg_command
from reagent_local.config import load_config
from reagent_local.errors import ReagentError
from reagent_local.kg import KnowledgeGraph, Triple
from reagent_local.bench.kg_bench import (TEMPLATES, answer_forms, contains_answer, format_kg_table, question_subject,
                                    run_kg_bench, template_questions)
from reagent_local.core.relations import ALL_RELATIONS
from reagent_local.retrieval import build_index

# Each prose states some infobox facts and leaves others out, so the graph adds exactly these:
# largest city, population, release date and birth place (4 of 8 questions).
PAGES = [
    ("Alabama", """{{Infobox U.S. state
| Capital = [[Montgomery, Alabama|Montgomery]]
| LargestCity = [[Birmingham, Alabama|Birmingham]]
| 2010Pop = 4,779,736
}}'''Alabama''' is a state in the southeastern United States. Its capital is Montgomery."""),
    ("Actrius", """{{Infobox film
| director = [[Ventura Pons]]
| language = Catalan
| released = {{film date|df=yes|1997|1|17}}
}}'''Actrius''' is a 1997 Catalan drama film directed by Ventura Pons."""),
    ("Abraham Lincoln", """{{Infobox officeholder
| birth_date = {{birth date|1809|2|12}}
| birth_place = [[Hodgenville, Kentucky]], U.S.
}}'''Abraham Lincoln''' (February 12, 1809 – April 15, 1865) was the 16th President of the United States."""),
    ("Albedo", "'''Albedo''' is the fraction of sunlight that a surface reflects."),
]
GRAPH_ONLY = {"largest_city", "population", "release_date", "birth_place"}


def _triple(value: str, *, display=None, date=None, number=None) -> Triple:
    return Triple("S", "r", value, number, None, date, "r", "S#0", display)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("kg-bench")
    config = load_config({"paths.home": str(root / "home"), "retrieval.embedder": "hash-64"}, env={})
    body = "".join(f"<page><title>{escape(t)}</title><ns>0</ns><id>{i}</id><revision><id>{i}</id>"
                   f"<text>{escape(x)}</text></revision></page>" for i, (t, x) in enumerate(PAGES, 1))
    dump = root / "dump.xml"
    dump.write_text(f'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">{body}</mediawiki>', encoding="utf-8")
    build_index(dump, "wiki", config, progress=False)
    build_index(dump, "wiki-nokg", config, kg=False, progress=False)
    hotpot = root / "hotpot.json"
    hotpot.write_text(json.dumps([{"_id": "q", "question": "Q?", "answer": "A", "type": "bridge", "level": "easy",
                                   "supporting_facts": [["Alabama", 0]],
                                   "context": [["Alabama", ["Its capital is Montgomery."]]]}]), encoding="utf-8")
    build_index(hotpot, "bench-hotpot", config, fmt="hotpotqa", progress=False)
    return config


def test_every_shared_relation_has_a_template():
    assert set(TEMPLATES) == ALL_RELATIONS - {"answer"}
    assert all(t.count("{subject}") == 1 for t in TEMPLATES.values())
    assert question_subject("Animalia (book)") == "Animalia" and question_subject("Alabama") == "Alabama"


def test_answer_forms_cover_dates_numbers_shown_text_and_place_heads():
    assert {"february 12 1809", "12 february 1809"} <= answer_forms(_triple("February 12, 1809", date="1809-02-12"))
    assert "april 1709" in answer_forms(_triple("April 1709", date="1709-04"))
    assert "384 bc" in answer_forms(_triple("384 BC", date="-0383"))
    assert {"4 858 979", "4858979"} <= answer_forms(_triple("4,858,979 (2015 est.)", number=4858979.0))
    assert {"montgomery alabama", "montgomery"} <= answer_forms(_triple("Montgomery, Alabama", display="Montgomery"))
    assert "hodgenville" in answer_forms(_triple("Hodgenville, Kentucky"))
    assert "pauline bush" in answer_forms(_triple("Pauline Bush (actress)"))
    assert "english" in answer_forms(_triple("English 95.1%"))


def test_contains_answer_matches_whole_words_after_folding():
    ulm = [_triple("Ulm")]
    assert contains_answer(["Einstein was born in Ulm, Württemberg."], ulm)
    assert not contains_answer(["The Ulmer family moved."], ulm)
    assert contains_answer(["starring NÚRIA ESPERT"], [_triple("Núria Espert")])
    assert contains_answer(["Lincoln was born on 12 February 1809."], [_triple("February 12, 1809", date="1809-02-12")])
    assert not contains_answer(["Lincoln was born in 1809."], [_triple("February 12, 1809", date="1809-02-12")])


def test_questions_come_from_the_graph_and_limit_takes_relations_in_turn(home):
    with KnowledgeGraph.open(home.paths.indexes / "wiki") as graph:
        questions = template_questions(graph)
        limited = template_questions(graph, limit=3)
    assert len(questions) == 8 and len({q.relation for q in questions}) == 8
    capital = next(q for q in questions if q.relation == "capital")
    assert capital.question == "What is the capital of Alabama?" and capital.gold[0].value == "Montgomery, Alabama"
    assert len(limited) == 3 and len({q.relation for q in limited}) == 3


def test_report_counts_what_only_the_graph_has(home):
    report = run_kg_bench("wiki", home)
    assert report["kg"] and report["questions"] == 8 and "upper bound" in report["note"]
    by_relation = report["by_relation"]
    assert {rel for rel, s in by_relation.items() if s["only_graph"] == 1.0} == GRAPH_ONLY
    assert all(s["graph"] == 1.0 for s in by_relation.values())
    overall = report["overall"]
    assert (overall["passages"], overall["graph"], overall["union"], overall["only_graph"]) == (0.5, 1.0, 1.0, 0.5)
    assert all(len(r["passage_ids"]) <= 5 and r["graph_rank"] >= 1 for r in report["records"])
    table = format_kg_table(report)
    assert "upper bound" in table and "only graph" in table
    assert table.splitlines()[-2].split() == ["all", "8", "0.500", "1.000", f"{overall['graph_top1']:.3f}", "1.000", "0.500"]
    assert overall["graph_top1"] == sum(r["graph_rank"] == 1 for r in report["records"]) / 8


@pytest.mark.parametrize("index, reason", [("wiki-nokg", "--no-kg"), ("bench-hotpot", "HotpotQA paragraphs")])
def test_an_index_without_graph_reports_that_it_adds_nothing(home, index, reason):
    report = run_kg_bench(index, home)
    assert not report["kg"] and report["questions"] == 0 and reason in report["reason"]
    assert format_kg_table(report).startswith(f"index {index}: the knowledge graph adds nothing.")


def test_command_prints_the_table_and_writes_the_report(home, tmp_path, monkeypatch):
    monkeypatch.setenv("REAGENT_HOME", str(home.paths.home))
    monkeypatch.setenv("REAGENT_RETRIEVAL_EMBEDDER", "hash-64")
    monkeypatch.delenv("REAGENT_CONFIG", raising=False)
    out = tmp_path / "kg.json"
    result = CliRunner().invoke(kg_command, ["--index", "wiki", "--limit", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "What the knowledge graph adds on index wiki: 2 questions" in result.output
    assert json.loads(out.read_text())["questions"] == 2
    as_json = CliRunner().invoke(kg_command, ["--index", "bench-hotpot", "--json"])
    assert json.loads(as_json.output)["kg"] is False
    with pytest.raises(ReagentError, match="at least 1"):
        run_kg_bench("wiki", home, limit=0)
