"""Several indexes in one question: two real indexes built here (hash embedder), searched and answered together."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from reagent_local.cli import main
from reagent_local.config import load_config
from reagent_local.core.log import EventLog
from reagent_local.errors import IndexMismatchError, ReagentError
from reagent_local.reasoning.pipeline import Pipeline
from reagent_local.reasoning.wiring import open_index
from reagent_local.retrieval import MultiIndex, build_index
from reagent_local.retrieval.passages import local_id, source_index
from reagent_local.share.compat import identity
from reagent_local.testing import ScriptedLLM

from scenario_runs import scenario_config

# hop 1 (who directed the film) is only in "films"; hop 2 (where the director was born) only in "people"
FILMS = [{"title": "Blue Harbour", "text": "Blue Harbour is a 1998 drama film directed by Mara Lind."},
         {"title": "Grey Dock", "text": "Grey Dock is a 2003 comedy film directed by Tom Hale."}]
PEOPLE = [{"title": "Mara Lind", "text": "Mara Lind is a Danish film director. She was born in Aarhus."},
          {"title": "Tom Hale", "text": "Tom Hale is an English actor born in Leeds."}]


def config_for(home: Path, embedder: str = "hash-64"):
    return load_config({"paths.home": str(home), "retrieval.embedder": embedder, "retrieval.top_k": 2}, env={})


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("REAGENT_HOME", str(tmp_path))
    monkeypatch.setenv("REAGENT_RETRIEVAL_EMBEDDER", "hash-64")
    monkeypatch.delenv("REAGENT_CONFIG", raising=False)
    config = config_for(tmp_path)
    for name, corpus in (("films", FILMS), ("people", PEOPLE)):
        source = tmp_path / f"{name}.json"
        source.write_text(json.dumps(corpus), encoding="utf-8")
        build_index(source, name, config, progress=False, kg=False)
    return tmp_path


def test_ids_carry_their_index_and_plain_ids_do_not() -> None:
    assert source_index("notes|guide.md#2") == "notes" and local_id("notes|guide.md#2") == "guide.md#2"
    assert source_index("Paris#0") is None and local_id("Paris#0") == "Paris#0"
    assert source_index("a b|x#0") is None  # not an index name: an id of one index that holds a '|'


def test_search_fuses_both_indexes_and_get_finds_prefixed_ids(home: Path) -> None:
    with open_index("films,people", config_for(home)) as index:
        assert isinstance(index, MultiIndex) and index.name == "films,people"
        hits = index.search("Mara Lind", k=4, mode="sparse")
        assert {h.index for h in hits} == {"films", "people"}
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert all(h.passage.id == f"{h.index}|{local_id(h.passage.id)}" for h in hits)
        assert hits[0].score >= hits[-1].score
        found = index.get("people|Mara Lind#0")
        assert found is not None and found.id == "people|Mara Lind#0" and "Aarhus" in found.text
        assert index.get("films|Mara Lind#0") is None and index.get("Mara Lind#0") is None


def test_a_two_hop_question_cites_passages_of_both_indexes(home: Path) -> None:
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": ["Who directed the film Blue Harbour?", "Where was #1 born?"]}, schema="Decomposition")
    llm.add_rule({"answer": "Mara Lind", "passages": [1], "subject": "Blue Harbour", "relation": "director"},
                 schema="SubAnswer", contains="Who directed the film Blue Harbour?")
    llm.add_rule({"answer": "Aarhus", "passages": [1], "subject": "Mara Lind", "relation": "birth_place"},
                 schema="SubAnswer", contains="Where was Mara Lind born?")
    llm.add_rule({"answer": "Aarhus"}, schema="FinalAnswer")
    config = scenario_config()
    config = replace(config, paths=config_for(home).paths, retrieval=replace(config_for(home).retrieval, top_k=2))
    with open_index("films,people", config) as index, EventLog(home / "log.duckdb") as log:
        answer = Pipeline(config, llm=llm, retriever=index, log=log, kg=None).ask(
            "Where was the director of the film Blue Harbour born?")
        events = log.events(answer.run_id)
    assert answer.answer == "Aarhus"
    assert [p.index for p in answer.subquestions[0].passages][:1] == ["films"]
    assert [p.index for p in answer.subquestions[1].passages][:1] == ["people"]
    cited = answer.to_dict()["passages"]
    assert {p["index"] for p in cited} == {"films", "people"}
    assert "films: Blue Harbour" in answer.sources() and "people: Mara Lind" in answer.sources()
    logged = json.dumps([e.payload for e in events])
    assert "people|Mara Lind#0" in logged  # the log (and so the trace) keeps the prefixed ids


def test_cli_search_over_two_indexes_names_each_hit_index(home: Path, capsys: pytest.CaptureFixture) -> None:
    main(["search", "Mara Lind Aarhus", "--index", "films,people", "--json", "-k", "3"])
    hits = json.loads(capsys.readouterr().out)
    assert {h["index"] for h in hits} == {"films", "people"}
    main(["search", "Mara Lind", "--index", "films,people", "-k", "2", "--mode", "sparse"])
    out = capsys.readouterr().out
    assert "people: Mara Lind  [people|Mara Lind#0]" in out


def test_indexes_of_different_embedders_or_one_name_are_refused(home: Path) -> None:
    other = home / "elsewhere"
    source = home / "people.json"
    build_index(source, "people", config_for(other, "hash-32"), progress=False, kg=False)
    with pytest.raises(IndexMismatchError) as info:
        MultiIndex.open(["films", other / "indexes" / "people"], config_for(home))
    assert "different embedders" in info.value.message and "hash-32" in info.value.message
    assert info.value.hint and "--force" in info.value.hint
    build_index(source, "films", config_for(other), progress=False, kg=False)
    with pytest.raises(ReagentError, match="two of the indexes are named films"):
        MultiIndex.open(["films", other / "indexes" / "films"], config_for(home))


def test_a_server_of_the_same_indexes_in_another_order_is_not_the_same(home: Path) -> None:
    config = config_for(home)
    both = identity(replace(config, retrieval=replace(config.retrieval, index="films,people")))
    spaced = identity(replace(config, retrieval=replace(config.retrieval, index="films, people")))
    swapped = identity(replace(config, retrieval=replace(config.retrieval, index="people,films")))
    assert both["index"] == spaced["index"] and both["index"] != swapped["index"]
    assert both["index"].endswith("indexes/films," + str(home / "indexes" / "people"))
