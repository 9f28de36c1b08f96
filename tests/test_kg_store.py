"""Building kg.duckdb from a small dump and querying it: entities, ranking, provenance, errors."""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

import duckdb
import pytest

from reagent_local.errors import CorpusFormatError, IndexMismatchError
from reagent_local.kg import KnowledgeGraph, Triple, triple_to_fact_text
from reagent_local.retrieval.kg_build import build_kg
from reagent_local.kg.store import KG_FILENAME

PAGES = [
    ("Abraham Lincoln", 0, None, """{{Infobox officeholder
| name = Abraham Lincoln
| birth_date = {{birth date|1809|2|12}}
| birth_place = [[Hodgenville, Kentucky]], U.S.
| spouse = [[Mary Todd Lincoln|Mary Todd]]
}}'''Abraham Lincoln''' was a president."""),
    ("Lincoln", 0, "Abraham Lincoln", "#REDIRECT [[Abraham Lincoln]]"),
    ("Talk:Actrius", 1, None, "{{Infobox film|director = [[Nobody]]}}"),
    ("Actrius", 0, None, """{{Infobox film
| name = Actresses
| director = [[Ventura Pons]]
| starring = {{ubl|[[Núria Espert]]|[[Rosa Maria Sardà]]}}
| language = Catalan
| released = {{film date|df=yes|1997|1|17}}
}}"""),
    ("Animalia (book)", 0, None, "{{Infobox book|author = [[Graeme Base]]|language = English}}"),
    ("Ada", 0, None, "'''Ada''' may refer to several things."),
]


def write_dump(path: Path, pages=PAGES) -> Path:
    parts = ['<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">']
    for i, (title, ns, redirect, text) in enumerate(pages, start=1):
        redirect_xml = f'<redirect title="{escape(redirect)}" />' if redirect else ""
        parts.append(
            f"<page><title>{escape(title)}</title><ns>{ns}</ns><id>{i}</id>{redirect_xml}"
            f"<revision><id>{i}</id><text>{escape(text)}</text></revision></page>"
        )
    parts.append("</mediawiki>")
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("kg")
    build_kg(write_dump(folder / "dump.xml"), folder / "index")
    return folder / "index"


@pytest.fixture
def kg(index_dir: Path):
    graph = KnowledgeGraph.open(index_dir)
    assert graph is not None
    yield graph
    graph.close()


def test_build_counts_articles_only(tmp_path: Path) -> None:
    stats = build_kg(write_dump(tmp_path / "dump.xml"), tmp_path / "out")
    assert stats["articles"] == 4  # the redirect and the talk page are not articles
    assert stats["subjects"] == 3  # "Ada" has no infobox
    assert stats["triples"] == sum(stats["by_relation"].values()) == 4 + 6 + 2
    assert stats["by_relation"]["starring"] == 2
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [KG_FILENAME]  # no leftovers


def test_limit_counts_the_first_articles(tmp_path: Path) -> None:
    stats = build_kg(write_dump(tmp_path / "dump.xml"), tmp_path / "out", limit=1)
    assert (stats["articles"], stats["subjects"]) == (1, 1)
    with KnowledgeGraph.open(tmp_path / "out") as graph:
        assert graph.counts_by_relation() == {"birth_date": 1, "birth_place": 1, "name": 1, "spouse": 1}


def test_open_returns_none_without_a_graph(tmp_path: Path) -> None:
    assert KnowledgeGraph.open(tmp_path) is None


def test_open_rejects_another_schema(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / KG_FILENAME))
    con.execute("CREATE TABLE meta (key VARCHAR, value VARCHAR); INSERT INTO meta VALUES ('schema_version', '99')")
    con.close()
    with pytest.raises(IndexMismatchError, match="rebuild"):
        KnowledgeGraph.open(tmp_path)


def test_bad_dump_raises_a_corpus_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_text("<html><body>not a dump</body></html>")
    with pytest.raises(CorpusFormatError):
        build_kg(bad, tmp_path / "out")
    assert not (tmp_path / "out" / KG_FILENAME).exists()


def test_triples_keep_provenance_and_order(kg: KnowledgeGraph) -> None:
    triples = kg.triples("Actrius")
    assert [t.relation for t in triples] == ["name", "director", "starring", "starring", "language", "release_date"]
    assert all(t.passage_id == "Actrius#0" for t in triples)
    (released,) = kg.triples("Actrius", "release_date")
    assert (released.value, released.value_date, released.raw_key) == ("17 January 1997", "1997-01-17", "released")
    assert kg.triples("Talk:Actrius") == [] and kg.triples("Nobody") == []


def test_find_entities_ignores_case_and_accents_longest_first(kg: KnowledgeGraph) -> None:
    assert kg.find_entities("when was ABRAHAM lincoln born?") == ["Abraham Lincoln"]
    assert kg.find_entities("Who directed ACTRIUS, and who wrote Animalia?") == ["Actrius", "Animalia (book)"]
    assert kg.find_entities("the film Actresses") == ["Actrius"]  # the infobox name is an alias
    assert kg.find_entities("Who was the wife of Lincoln?") == ["Abraham Lincoln"]  # a redirect is another name
    assert kg.find_entities("") == []


def test_search_ranks_the_asked_relation_first(kg: KnowledgeGraph) -> None:
    assert kg.search("Who directed Actrius?", k=1)[0].value == "Ventura Pons"
    assert kg.search("When was Abraham Lincoln born?", k=1)[0].relation == "birth_date"
    assert kg.search("Where was Abraham Lincoln born?", k=1)[0].relation == "birth_place"
    assert kg.search("Who was Abraham Lincoln's wife?", k=1)[0].value == "Mary Todd Lincoln"
    assert len(kg.search("Tell me about Actrius", k=3)) == 3


def test_search_finds_triples_by_value_when_the_relation_is_asked(kg: KnowledgeGraph) -> None:
    hits = kg.search("Which film starred Nuria Espert?")
    assert [(t.subject, t.relation) for t in hits] == [("Actrius", "starring")]
    assert kg.search("Nuria Espert") == []  # a value alone does not pull its triples


def test_fact_text_and_value_lookup(kg: KnowledgeGraph) -> None:
    (spouse,) = kg.triples("Abraham Lincoln", "spouse")
    assert triple_to_fact_text(spouse) == 'Abraham Lincoln: spouse = Mary Todd Lincoln (shown as "Mary Todd")'
    (birth,) = kg.triples("Abraham Lincoln", "birth_date")
    assert triple_to_fact_text(birth) == "Abraham Lincoln: birth date = February 12, 1809 [1809-02-12]"
    assert [t.subject for t in kg.with_value("graeme base")] == ["Animalia (book)"]


def test_two_readers_at_once(index_dir: Path) -> None:
    with KnowledgeGraph.open(index_dir) as a, KnowledgeGraph.open(index_dir) as b:
        assert a.counts_by_relation() == b.counts_by_relation()
        assert isinstance(next(a.iter_all()), Triple)


def test_builder_streams_pages_and_abort_leaves_nothing(tmp_path: Path) -> None:
    from reagent_local.retrieval.kg_build import KGBuilder
    from reagent_local.retrieval.wikidump import iter_pages

    pages = list(iter_pages(write_dump(tmp_path / "dump.xml")))
    with pytest.raises(RuntimeError):
        with KGBuilder(tmp_path / "aborted") as builder:
            builder.add(pages[0])
            raise RuntimeError("the passage build failed")
    assert list((tmp_path / "aborted").iterdir()) == []

    builder = KGBuilder(tmp_path / "out", source="dump.xml")
    added = [builder.add(page) for page in pages]
    assert added == [4, 0, 0, 6, 2, 0]  # redirect, talk page and "Ada" add nothing
    stats = builder.finish()
    with KnowledgeGraph.open(tmp_path / "out") as graph:
        assert graph.stats()["source"] == "dump.xml"
        assert sum(graph.counts_by_relation().values()) == stats["triples"] == 12


def test_searches_from_several_threads(kg: KnowledgeGraph) -> None:
    from concurrent.futures import ThreadPoolExecutor

    questions = ["Who directed Actrius?", "When was Abraham Lincoln born?"] * 20
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda q: kg.search(q, k=1)[0].value, questions))
    assert answers == ["Ventura Pons", "February 12, 1809"] * 20
