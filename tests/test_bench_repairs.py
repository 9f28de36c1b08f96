"""`bench repairs`: scripted reagent-both runs with real event logs, one question per category."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reagent_local.bench import repairs as rp
from reagent_local.bench.records import RECORDS_FILE, read_records
from reagent_local.bench.repairs_view import markdown
from reagent_local.bench.runner import run_benchmark
from reagent_local.cli import main
from reagent_local.config import load_config
from reagent_local.datasets import Hop, gold_hops, load_questions, open_corpus
from reagent_local.errors import BenchRunError
from reagent_local.testing import InMemoryIndex, ScriptedLLM, answer_citing


def para(title: str, text: str, supporting: bool = False) -> dict:
    return {"title": title, "paragraph_text": text, "is_supporting": supporting}


def musique(qid: str, question: str, answer: str, paragraphs: list[dict], hops: list[tuple[str, str]]) -> dict:
    return {"id": qid, "question": question, "answer": answer, "answer_aliases": [], "answerable": True,
            "paragraphs": [{"idx": i, **p} for i, p in enumerate(paragraphs)],
            "question_decomposition": [{"id": i, "question": q, "answer": a, "paragraph_support_idx": None}
                                       for i, (q, a) in enumerate(hops)]}


# One person a question: the first reading (unsure: a low-confidence retry) reads the person's article, the
# retry reads the family's article (its reformulated query names the family and the place only it holds).
# (id, person, family, article, family's article, first answer, retry answer, gold, gold paragraphs, confidence
# of the retry)
PEOPLE = [
    # wrong, then right: repaired
    ("r", "Anna Berg", "Berg", "Anna Berg (born 1950 in Kessel) is a painter.",
     "The Berg family settled in Lomm in 1960.", "Kessel", "Lomm", "Lomm", ("family",), 0.9),
    # right, then wrong: broken
    ("b", "Ilse Brandt", "Brandt", "Ilse Brandt (born 1950 in Kessel) is a painter.",
     "The Brandt family settled in Oberau in 1960.", "Kessel", "Oberau", "Kessel", ("article",), 0.9),
    # right, then right again: right before and after
    ("s", "Karl Dorn", "Dorn", "Karl Dorn (born 1950 in Selz) is a painter.",
     "The Dorn family settled in Selz in 1960.", "Selz", "Selz", "Selz", ("article",), 0.9),
    # wrong, then wrong; the gold paragraph shares no word with any query: never retrieved
    ("n", "Jon Tal", "Tal", "Jon Tal (born 1950 in Xam) is a painter.",
     "The Tal family settled in Yel in 1960.", "Xam", "Yel", "Vorn", ("records",), 0.9),
    # wrong, then wrong; the gold article was read first, the final answer cites the family's: not cited
    ("c", "Lena Falk", "Falk", "Lena Falk (born 1950 in Rimbach, raised in Zell) is a painter.",
     "The Falk family settled in Ulm in 1960.", "Rimbach", "Ulm", "Zell", ("article",), 0.9),
    # wrong and surer, then right and less sure: the first answer stands; a step reached the gold one
    ("h", "Otto Lund", "Lund", "Otto Lund (born 1950 in Tarnow, or in Velden) is a painter.",
     "The Lund family settled in Velden in 1960.", "Tarnow", "Velden", "Velden", ("article",), 0.3),
]


def people_dataset(path: Path) -> Path:
    records = []
    for qid, person, family, article, settled, _, _, gold, golds, _ in PEOPLE:
        paragraphs = [para(person, article, "article" in golds), para(f"{family} family", settled, "family" in golds)]
        if "records" in golds:
            paragraphs.append(para("Parish records", "A birthplace listed there: Vorn.", True))
        records.append(musique(f"1hop__{qid}", f"Where was {person} born?", gold, paragraphs,
                               [(f"{person} >> place of birth", gold)]))
    # two hops in one gold paragraph; the plan asks the whole question in one step: the plan could not reach it
    records.append(musique("2hop__p", "Where was the founder of the Kel Company born?", "Pell",
                           [para("Kel Company", "The Kel Company of Dunn was founded by Mo Rask, who was born in Pell.",
                                 True), para("Kel family", "The Kel family settled in Ost in 1960.")],
                           [("Kel Company >> founded by", "Mo Rask"), ("#1 >> place of birth", "Pell")]))
    # two steps, the first answering the wrong person: a step's answer wrong
    records.append(musique("2hop__w", "Where was the founder of the Wex Company born?", "Rho",
                           [para("Wex Company", "The Wex Company was founded by Ada Pim of Rho and funded by Bo Kay.",
                                 True), para("Bo Kay", "Bo Kay was born in Tau."),
                            para("Kay family", "The Kay family settled in Ums in 1960.")],
                           [("Wex Company >> founded by", "Ada Pim"), ("#1 >> place of birth", "Rho")]))
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def people_model() -> ScriptedLLM:
    llm = ScriptedLLM()
    for qid, person, family, _, settled, first, retry, _, _, sure in PEOPLE:
        place = settled.split(" in ")[1].split()[0]
        llm.add_rule({"subquestions": [f"Where was {person} born?"]}, schema="Decomposition", contains=person)
        llm.add_rule({"query": f"{family} family {place}"}, schema="Reformulation", contains=person)
        llm.add_rule(answer_citing(retry, f"{family} family"), schema="SubAnswer", contains=f"settled in {place}",
                     confidence=sure)
        llm.add_rule(answer_citing(first, person), schema="SubAnswer", contains=f"{person} born?",
                     confidence=0.5 if qid == "h" else 0.2)
    # the Kel Company: one step; Dunn (unsure), then Ost (less sure): Dunn stands
    llm.add_rule({"subquestions": ["Where was the founder of the Kel Company born?"]}, schema="Decomposition",
                 contains="Kel Company")
    llm.add_rule({"query": "Kel family Ost"}, schema="Reformulation", contains="Kel Company")
    llm.add_rule(answer_citing("Ost", "Kel family"), schema="SubAnswer", contains="settled in Ost", confidence=0.3)
    llm.add_rule(answer_citing("Dunn", "Kel Company"), schema="SubAnswer", contains="Kel Company born?",
                 confidence=0.5)
    # the Wex Company: two steps; the founder read as Bo Kay; Tau (unsure), then Ums (less sure): Tau stands
    llm.add_rule({"subquestions": ["Who founded the Wex Company?", "Where was #1 born?"]}, schema="Decomposition",
                 contains="Wex Company")
    llm.add_rule({"query": "Kay family Ums"}, schema="Reformulation", contains="Bo Kay")
    llm.add_rule(answer_citing("Ums", "Kay family"), schema="SubAnswer", contains="settled in Ums", confidence=0.3)
    llm.add_rule(answer_citing("Bo Kay", "Wex Company"), schema="SubAnswer", contains="Who founded the Wex Company?",
                 confidence=0.95)
    llm.add_rule(answer_citing("Tau", "Bo Kay"), schema="SubAnswer", contains="Where was Bo Kay born?",
                 confidence=0.5)
    llm.add_rule(answer_citing("Tau", "Bo Kay"), schema="SubAnswer", contains="Wex Company born?", confidence=0.95)
    llm.add_rule({"answer": "Tau"}, schema="FinalAnswer", contains="Wex Company")
    return llm


def run_people(tmp_path: Path) -> Path:
    data = people_dataset(tmp_path / "people.jsonl")
    index = InMemoryIndex()
    for n, passage in enumerate(open_corpus(load_questions(data, "musique"))):
        index.add(passage.title, passage.text, n)
    config = load_config({"retrieval.top_k": 1}, env={})
    out = tmp_path / "people"
    run_benchmark("musique", data, config=config, methods=["reagent-both"], out=out, llm=people_model(),
                  retriever=index)
    return out


@pytest.fixture(scope="module")
def people(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_people(tmp_path_factory.mktemp("repairs"))


def test_people_scenario_fires_where_meant(people: Path) -> None:
    records = {r["id"]: r for r in read_records(people / RECORDS_FILE)}
    for qid, *_ in PEOPLE:
        assert records[f"1hop__{qid}"]["backtracked"], qid


def run_hotpot(tmp_path: Path) -> Path:
    """One HotpotQA question (no gold steps): Gath (unsure), then Iko (less sure): Gath stands, all cited."""
    data = tmp_path / "hotpot.json"
    data.write_text(json.dumps([{
        "_id": "hq", "type": "bridge", "level": "hard", "question": "Where was Eva Nord born?", "answer": "Bree",
        "supporting_facts": [["Eva Nord", 0]],
        "context": [["Eva Nord", ["Eva Nord (born 1950 in Gath, or in Bree) is a painter."]],
                    ["Nord family", ["The Nord family settled in Iko in 1960."]]]}]), encoding="utf-8")
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": ["Where was Eva Nord born?"]}, schema="Decomposition", contains="Eva Nord")
    llm.add_rule({"query": "Nord family Iko"}, schema="Reformulation", contains="Eva Nord")
    llm.add_rule(answer_citing("Iko", "Nord family"), schema="SubAnswer", contains="settled in Iko", confidence=0.3)
    llm.add_rule(answer_citing("Gath", "Eva Nord"), schema="SubAnswer", contains="Eva Nord born?", confidence=0.5)
    index = InMemoryIndex()
    for n, passage in enumerate(open_corpus(load_questions(data, "hotpotqa"))):
        index.add(passage.title, passage.text, n)
    out = tmp_path / "hotpot"
    run_benchmark("hotpotqa", data, config=load_config({"retrieval.top_k": 1}, env={}), methods=["reagent-both"],
                  out=out, llm=llm, retriever=index)
    return out


@pytest.fixture(scope="module")
def hotpot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run_hotpot(tmp_path_factory.mktemp("repairs-hotpot"))


EXPECTED = {"1hop__r": rp.REPAIRED, "1hop__b": rp.BROKEN, "1hop__s": rp.STAYED_RIGHT, "1hop__n": rp.NOT_RETRIEVED,
            "1hop__c": rp.NOT_CITED, "1hop__h": rp.NOT_CHOSEN, "2hop__p": rp.PLAN_SHORT, "2hop__w": rp.STEP_WRONG,
            "hq": rp.FINAL_WRONG}


def test_every_category_from_scripted_runs_and_their_logs(people: Path, hotpot: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture) -> None:
    report = rp.repairs([people, hotpot])
    rows = {r["id"]: r for r in report["rows"]}
    assert {qid: r["category"] for qid, r in rows.items()} == EXPECTED
    assert rows["1hop__n"]["gold_retrieved"] == "0/1"
    assert (rows["1hop__c"]["gold_retrieved"], rows["1hop__c"]["gold_cited"]) == ("1/1", "0/1")
    assert rows["1hop__h"]["reached"] and not rows["2hop__w"]["reached"]
    assert (rows["2hop__p"]["plan_steps"], rows["2hop__p"]["hops"]) == (1, 2)
    assert rows["2hop__w"]["missing_steps"] == ["Wex Company >> founded by"] and rows["2hop__w"]["plan_steps"] == 2
    assert rows["1hop__r"]["signals"] == ["low-confidence"]
    assert (rows["1hop__b"]["answer_without"], rows["1hop__b"]["answer"]) == ("Kessel", "Oberau")
    musique_table, pooled = report["tables"]["musique"], report["pooled"]
    assert (musique_table["questions"], musique_table["fired"], musique_table["wrong_without"]) == (8, 8, 6)
    assert report["tables"]["hotpotqa"]["categories"] == {rp.FINAL_WRONG: {"count": 1, "share": 1.0, "changed": 0}}
    assert pooled["fired"] == 9 and pooled["categories"][rp.REPAIRED] == {"count": 1, "share": 1 / 9, "changed": 1}
    assert pooled["categories"][rp.NOT_CHOSEN]["changed"] == 0  # the first answer stood
    text = markdown(report)
    assert "### Pooled: fired on 9 of 9 questions; wrong without backtracking on 7" in text
    assert "| the plan could not reach the answer | 1 | 11% | 0 |" in text and "### musique" in text
    assert pooled["none_retrieved"] == 1 and "Of the 1 never retrieved, 1 had no gold paragraph" in text
    assert "| 2hop__w | musique | cited, a step's answer wrong | low-confidence" in text
    out = tmp_path / "repairs.json"
    main(["bench", "repairs", f"{people},{hotpot}", "--json", "--out", str(out)])
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(out.read_text(encoding="utf-8")) and len(printed["rows"]) == 9


def test_a_folder_without_its_log_gets_what_the_records_tell(people: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("config.json", RECORDS_FILE):
        shutil.copy(people / name, bare / name)
    report = rp.repairs([bare])
    rows = {r["id"]: r for r in report["rows"]}
    assert not report["folders"][0]["event_log"]
    for qid in ("1hop__r", "1hop__b", "1hop__s"):
        assert rows[qid]["category"] == EXPECTED[qid]
    for qid in ("1hop__n", "1hop__c", "1hop__h", "2hop__p", "2hop__w"):
        assert rows[qid]["category"] == rp.NEEDS_LOG
    assert rows["1hop__c"]["note"] == "gold not all cited" and rows["2hop__p"]["note"] == "all gold cited"
    text = markdown(report)
    assert "| needs the run's log (all gold cited) | 3 | 38% |" in text  # h, p, w
    assert "| needs the run's log (gold not all cited) | 2 | 25% |" in text  # n, c


def test_user_mistakes_are_errors_with_hints(people: Path, tmp_path: Path) -> None:
    with pytest.raises(BenchRunError, match="no records of reagent-local") as caught:
        rp.repairs([people], "reagent-local")
    assert "reagent-both" in caught.value.hint
    moved = tmp_path / "moved"
    shutil.copytree(people, moved, ignore=shutil.ignore_patterns("*.duckdb*", "*.lock"))
    config = json.loads((moved / "config.json").read_text(encoding="utf-8"))
    config["file"] = str(tmp_path / "gone.jsonl")
    (moved / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(BenchRunError, match="dataset file"):
        rp.repairs([moved])


def record(**fields) -> dict:
    base = {"method": "reagent-both", "id": "x", "dataset": "2wiki", "type": "comparison", "prediction": "Bert",
            "answers": ["Alma"], "em": 0.0, "backtracked": True, "answer_without_backtracking": "Bert",
            "em_without_backtracking": 0.0, "support_recall": 1.0, "cited": [{"id": "Alma#0", "title": "Alma"}],
            "signals": ["two-roads"], "roads": None}
    return {**base, **fields}


def test_2wiki_comparison_values_are_its_steps_and_old_records_stay_unknown() -> None:
    gold = rp.Gold(support=(("Alma", None), ("Bert", None)), answers=("Alma",), hop_count=2,
                   hops=(Hop("Alma >> date of birth", ("March 8, 1975",)), Hop("Bert >> date of birth", ("1980",))))
    passages = {"Alma#0": ("Alma", "Alma was born on 8 March 1975."), "Bert#0": ("Bert", "Bert was born in 1980.")}
    record_x = record(cited=[{"id": "Alma#0", "title": "Alma"}, {"id": "Bert#0", "title": "Bert"}])
    found = rp.classify(record_x, gold, rp.Seen(passages, 2, ("8 March 1975", "1981")))
    assert found["category"] == rp.STEP_WRONG and found["missing_steps"] == ["Bert >> date of birth"]
    both = rp.classify(record_x, gold, rp.Seen(passages, 2, ("8 March 1975", "1980")))
    assert both["category"] == rp.STEP_WRONG and both["missing_steps"] == []  # the comparison itself went wrong
    chosen = rp.classify(record(roads={"chain": "Alma", "whole": "Bert", "winner": "whole question"},
                                cited=record_x["cited"]), gold, rp.Seen(passages, 2, ()))
    assert chosen["category"] == rp.NOT_CHOSEN
    old = record(answer_without_backtracking=None, em_without_backtracking=None, em=1.0)
    assert rp.classify(old, gold, None)["category"] == rp.UNKNOWN
    assert rp.classify(record(em=1.0, em_without_backtracking=None, em_before=0.0), gold, None)["category"] \
        == rp.REPAIRED  # an older record: the answer before the first rollback stands in


def test_matching_answers_and_cut_passages() -> None:
    assert rp.tokens_match("8 March 1975", "March 8, 1975") and rp.tokens_match("Curtin", "John Curtin")
    assert not rp.tokens_match("Natalie Wood", "Lana Wood") and not rp.tokens_match("", "x")
    gold = "Mira Voss (born 1870) was a merchant. She founded the Ardent Company in 1901 in Kessel."
    assert rp.supports("Mira Voss", "Mira Voss (born 1870) was a merchant. ...", "Mira Voss", gold)
    assert rp.supports("Mira Voss", "Mira Voss (born 1870) … in 1901 in Kessel.", "Mira Voss", gold)
    assert not rp.supports("Mira Voss", "Mira Voss (born 1871) …", "Mira Voss", gold)
    assert not rp.supports("Other", "Mira Voss (born 1870)", "Mira Voss", gold)


def test_gold_hops_of_each_dataset(tmp_path: Path) -> None:
    wiki = tmp_path / "2wiki.json"
    wiki.write_text(json.dumps([{"_id": "w1", "type": "compositional", "question": "q", "answer": "Cork",
                                 "context": [["C", ["C is a man."]]], "supporting_facts": [["C", 0]],
                                 "evidences": [["C", "father", "S"], ["S", "place of burial", "Cork"]]}]),
                    encoding="utf-8")
    assert gold_hops(wiki) == {"w1": (Hop("C >> father", ("S",)), Hop("S >> place of burial", ("Cork",)))}
    data = people_dataset(tmp_path / "people.jsonl")
    assert gold_hops(data, "musique")["2hop__p"][1] == Hop("#1 >> place of birth", ("Pell",))
    hotpot = tmp_path / "hotpot.json"
    hotpot.write_text(json.dumps([{"_id": "h", "question": "q", "answer": "a", "context": [],
                                   "supporting_facts": []}]), encoding="utf-8")
    assert gold_hops(hotpot) == {}
