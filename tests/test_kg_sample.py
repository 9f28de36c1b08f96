"""The knowledge graph of the shared dump sample holds what a reader sees in its infoboxes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reagent_local.kg import KnowledgeGraph
from reagent_local.retrieval.kg_build import build_kg

SAMPLE = "wiki/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
MARKUP = ("{{", "}}", "[[", "]]", "<ref", "'''", "|")


def _shared_data() -> Path:
    env = os.environ.get("REAGENT_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    dump = _shared_data() / SAMPLE
    if not dump.is_file():
        pytest.skip(f"shared dump sample not found at {dump} (set REAGENT_SHARED_DATA)")
    out = tmp_path_factory.mktemp("kg-sample")
    stats = build_kg(dump, out)
    graph = KnowledgeGraph.open(out)
    assert graph is not None
    yield stats, graph
    graph.close()


def values(graph: KnowledgeGraph, subject: str, relation: str) -> list[str]:
    return [t.value for t in graph.triples(subject, relation)]


def test_alabama(built) -> None:
    _, kg = built
    # Infobox U.S. state: |Capital = [[Montgomery, Alabama|Montgomery]]
    #                     |LargestCity = [[Birmingham, Alabama|Birmingham]] <br />212,038 ...
    (capital,) = kg.triples("Alabama", "capital")
    assert (capital.value, capital.display, capital.raw_key) == ("Montgomery, Alabama", "Montgomery", "Capital")
    assert values(kg, "Alabama", "largest_city") == ["Birmingham, Alabama"]
    (population,) = kg.triples("Alabama", "population")
    assert population.value_number == 4_858_979 and population.raw_key == "2010Pop"


def test_abraham_lincoln(built) -> None:
    _, kg = built
    (birth,) = kg.triples("Abraham Lincoln", "birth_date")
    assert birth.value_date == "1809-02-12"
    assert values(kg, "Abraham Lincoln", "birth_place") == ["Hodgenville, Kentucky"]
    assert [t.value_date for t in kg.triples("Abraham Lincoln", "death_date")] == ["1865-04-15"]
    assert values(kg, "Abraham Lincoln", "spouse") == ["Mary Todd Lincoln"]
    # his article also holds an "Infobox U.S. Cabinet": its members are not facts about him
    assert kg.triples("Abraham Lincoln", "treasury") == []


def test_actrius(built) -> None:
    _, kg = built
    assert values(kg, "Actrius", "director") == ["Ventura Pons"]
    assert values(kg, "Actrius", "language") == ["Catalan"]
    assert values(kg, "Actrius", "starring") == ["Núria Espert", "Rosa Maria Sardà", "Anna Lizaran", "Mercè Pons"]
    assert [t.value_date for t in kg.triples("Actrius", "release_date")] == ["1997-01-17"]


def test_algeria_largest_city_resolves_to_the_capital(built) -> None:
    _, kg = built
    # Infobox country: |capital = [[Algiers]] ... |largest_city = capital
    assert values(kg, "Algeria", "capital") == ["Algiers"]
    assert values(kg, "Algeria", "largest_city") == ["Algiers"]


def test_no_wiki_markup_in_any_value(built) -> None:
    stats, kg = built
    triples = list(kg.iter_all())
    assert len(triples) == stats["triples"] > 1000
    leaks = [(t.subject, t.raw_key, t.value, t.display) for t in triples
             if any(m in t.value or m in (t.display or "") for m in MARKUP)]
    assert leaks == []
    assert stats["dropped_values"] == 0  # nothing needed dropping either
    assert all(t.value.strip() == t.value and t.value for t in triples)


def test_counts_and_search_on_the_sample(built) -> None:
    stats, kg = built
    assert stats["articles"] == 106 and stats["subjects"] >= 45
    assert kg.counts_by_relation() == stats["by_relation"]
    top = kg.search("What is the capital of Alabama?", k=1)[0]
    assert (top.subject, top.relation, top.display) == ("Alabama", "capital", "Montgomery")
    assert kg.search("Who directed Actrius?", k=1)[0].value == "Ventura Pons"
