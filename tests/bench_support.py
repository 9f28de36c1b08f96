"""The benchmark tests' shared parts: a self-contained driver script (the ``driver`` fixture in conftest.py
loads it), a scripted model for river questions, and the exact-accounting scenario."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from pydantic import BaseModel

from reagent_local.bench.records import RECORDS_FILE, read_records
from reagent_local.bench.runner import run_benchmark
from reagent_local.config import load_config
from reagent_local.datasets import load_questions, open_corpus
from reagent_local.runtime.llm import Message
from reagent_local.testing import InMemoryIndex, ScriptedLLM, answer_citing

# A self-contained driver: a tiny HotpotQA-format file, a scripted model that answers from
# what it is shown, and an in-memory retriever. The test runs it in a subprocess (to kill it)
# and loads it in-process with runpy (for the reference and resumed runs).
DRIVER = r'''
import json, os, re, sys, time
from pathlib import Path
from reagent_local.bench.runner import run_benchmark
from reagent_local.config import load_config
from reagent_local.datasets import load_questions, open_corpus
from reagent_local.testing import InMemoryIndex, Rule, ScriptedLLM

N_QUESTIONS = 8
METHODS = ["closed-book", "rag", "ircot"]


def write_dataset(path):
    records = []
    for i in range(N_QUESTIONS):
        records.append({
            "_id": f"q{i}", "type": "bridge", "level": "hard",
            "question": f"What is the capital of the country where the river Riv{i} flows?",
            "answer": f"City{i}",
            "supporting_facts": [[f"Riv{i}", 0], [f"Land{i}", 0]],
            "context": [
                [f"Riv{i}", [f"Riv{i} is a river.", f" Riv{i} flows through Land{i}."]],
                [f"Land{i}", [f"Land{i} is a country.", f" Its capital is City{i}."]],
                [f"Peak{i}", [f"Peak{i} is a mountain near the river Riv{i}."]],
            ],
        })
    Path(path).write_text(json.dumps(records), encoding="utf-8")


def respond(messages, schema):
    if os.environ.get("BENCH_SLOW"):
        time.sleep(float(os.environ["BENCH_SLOW"]))
    gate = os.environ.get("BENCH_GATE")
    deadline = time.monotonic() + 60
    while gate and os.path.exists(gate) and time.monotonic() < deadline:  # held: a test acts on a run mid-way
        time.sleep(0.02)
    text = messages[-1]["content"]
    i = re.search(r"Riv(\d+) flows\?", text).group(1)
    known = f"Its capital is City{i}" in text
    name = schema.__name__
    if name == "SpanAnswer":
        return {"answer": f"City{i}" if known else "Paris"}
    if name == "ReasoningStep":
        return {"thought": f"Land{i} capital city" if not known else f"The capital of Land{i} is City{i}.",
                "answer": f"City{i}" if known else ""}
    raise AssertionError(f"unexpected schema {name}")


def build(data_file):
    llm = ScriptedLLM(rules=[Rule(respond)])
    questions = load_questions(data_file, "hotpotqa")
    retriever = InMemoryIndex()
    for n, p in enumerate(open_corpus(questions)):
        retriever.add(p.title, p.text, n)
    config = load_config({"retrieval.top_k": 2, "pipeline.max_retrieval_rounds": 2}, env={})
    return llm, retriever, config


def run(data_file, out, resume=False, **kwargs):
    llm, retriever, config = build(data_file)
    return run_benchmark("hotpotqa", data_file, config=config, n=6, seed=5, methods=METHODS, out=out,
                         resume=resume, llm=llm, retriever=retriever, **kwargs)


if __name__ == "__main__":
    run(Path(sys.argv[1]), Path(sys.argv[2]), resume=len(sys.argv) > 3)
'''




def river_answers(messages, schema):
    """Every role's and baseline's answer to "the capital of the country where the river RivN flows",
    read from what the prompt shows (a scripted model for runs through the real pipeline)."""
    text, name = messages[-1]["content"], schema.__name__
    if name == "Decomposition":
        i = re.search(r"Riv(\d+)", text).group(1)
        return {"subquestions": [f"Which country does the river Riv{i} flow through?", "What is the capital of #1?"]}
    if name == "SubAnswer":
        if m := re.search(r"capital of (Land\d+)\?", text):
            return {"answer": m.group(1).replace("Land", "City"), "passages": [1], "subject": m.group(1),
                    "relation": "other"}
        if m := re.search(r"Riv(\d+) flows\?", text):  # the whole question (the second road)
            return {"answer": f"City{m.group(1)}", "passages": [1], "subject": "", "relation": "other"}
        i = re.search(r"Riv(\d+) flow through", text).group(1)
        return {"answer": f"Land{i}", "passages": [1], "subject": f"Riv{i}", "relation": "other"}
    if name == "FinalAnswer":
        return {"answer": re.findall(r"City\d+", text)[-1]}
    i = re.search(r"Riv(\d+) flows\?", text).group(1)
    known = f"Its capital is City{i}" in text
    if name == "SpanAnswer":
        return {"answer": f"City{i}" if known else "Paris"}
    return {"thought": f"The capital of Land{i} is City{i}." if known else f"Land{i} capital city",
            "answer": f"City{i}" if known else ""}


# Exact accounting (test_bench_without_backtracking.py, test_bench_profile.py): on q1 a local retry
# fixes step 1 (and step 2 then asks about another person), on q2 a retry of an unsure right
# answer breaks it, on q3 nothing fires.
EXACT_QUESTIONS = [
    ("q1", "When was the founder of the Ardent Company born?", "1870",
     [["Ardent Company", ["The Ardent Company was founded in 1901 by Mira Voss; Paul Reed sailed its first ship."]],
      ["Mira Voss", ["Mira Voss (born 1870), founder of the Ardent Company, was a merchant."]],
      ["Paul Reed", ["Paul Reed (born 1855) was a sailor on the Ardent."]]]),
    ("q2", "Where was Ilse Brandt born?", "Kessel",
     [["Ilse Brandt", ["Ilse Brandt (born 1950 in Kessel) is a painter."]],
      ["Brandt family", ["The Brandt family settled in Oberau in 1960."]]]),
    ("q3", "What is the capital of Norland?", "Vesk",
     [["Norland", ["Norland is a country whose capital is Vesk."]]]),
]
# seconds of the one call only the run without backtracking makes: above a loaded machine's whole scripted
# question (0.64 s seen beside two benchmarks, 2.1 s beside two and the test suite at nice 19)
SLOW = 4.0


def write_exact_dataset(path: Path) -> Path:
    """The three questions of the exact-accounting scenario as a HotpotQA-format file."""
    records = [{"_id": qid, "type": "bridge", "level": "hard", "question": q, "answer": a,
                "supporting_facts": [[context[0][0], 0]], "context": context} for qid, q, a, context in EXACT_QUESTIONS]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def exact_model() -> ScriptedLLM:
    """Answers decided by the prompt alone (as a greedy model with the aligned prefill): no rule counts its uses."""
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": ["Who founded the Ardent Company?", "When was #1 born?"]},
                 schema="Decomposition", contains="Ardent")
    for _, question, _, _ in EXACT_QUESTIONS[1:]:
        llm.add_rule({"subquestions": [question]}, schema="Decomposition", contains=question)
    llm.add_rule({"query": "Ardent Company founder"}, schema="Reformulation", contains="Ardent")
    llm.add_rule({"query": "Brandt family Oberau"}, schema="Reformulation", contains="Brandt")
    # q1, step 1: first the sailor, unsure (a low-confidence retry), then, once the retry shows the founder's own
    # passage, the founder (step 2's question about her comes first: it shows that passage too)
    llm.add_rule(answer_citing("1870", "Mira Voss"), schema="SubAnswer", contains="When was Mira Voss born?",
                 confidence=0.95)
    llm.add_rule(answer_citing("Mira Voss", "Ardent Company"), schema="SubAnswer",
                 contains="founder of the Ardent Company, was a merchant", confidence=0.95)
    llm.add_rule(answer_citing("Paul Reed", "Ardent Company"), schema="SubAnswer",
                 contains="Who founded the Ardent Company?", confidence=0.4)

    def slowly_1855(messages: list[Message], schema: type[BaseModel]) -> dict:
        time.sleep(SLOW)
        return answer_citing("1855", "Paul Reed")(messages, schema)

    llm.add_rule(slowly_1855, schema="SubAnswer", contains="When was Paul Reed born?", confidence=0.95)
    # q2: the right answer, unsure; the retry reads another passage and is sure of the wrong one
    llm.add_rule(answer_citing("Oberau", "Ilse Brandt"), schema="SubAnswer", contains="Oberau", confidence=0.9)
    llm.add_rule(answer_citing("Kessel", "Ilse Brandt"), schema="SubAnswer", contains="Ilse Brandt born?",
                 confidence=0.2)
    llm.add_rule(answer_citing("Vesk", "Norland"), schema="SubAnswer", contains="Norland?", confidence=0.95)
    return llm


def run_exact(data: Path, out: Path, methods: list[str]) -> list[dict]:
    """Run ``methods`` over the scenario's file into ``out``; its records.

    The shipped defaults but for one passage a search: q1's fix is its low-confidence retry."""
    index = InMemoryIndex()
    for n, passage in enumerate(open_corpus(load_questions(data, "hotpotqa"))):
        index.add(passage.title, passage.text, n)
    config = load_config({"retrieval.top_k": 1}, env={})
    run_benchmark("hotpotqa", data, config=config, methods=methods, out=out, llm=exact_model(), retriever=index)
    return read_records(out / RECORDS_FILE)


# Ablations (test_bench_ablate.py): nine questions, each part acting on some of them only.
# "founder" questions: the model's first plan has a second step that names nothing and uses no earlier answer, the
# rule anchor-each-step sends it back and the second plan is right (without the rule: no answer); "born" questions: the right answer comes unsure,
# the low-confidence retry reads another passage and is sure of a wrong one (min_confidence breaks them);
# the "capital" question: nothing fires; the "city" question: two steps the model assembles, so the chain is in
# doubt and the whole question is read too (the roads agree: no signal fires).
FOUNDERS = [("Ardent", "Mira Voss", "1870"), ("Borel", "Otto Lund", "1881"), ("Calder", "Hana Kerr", "1892"),
            ("Dunmore", "Ivo Brandt", "1903")]
BIRTHS = [("Ilse Brandt", "Kessel", "Oberau"), ("Jonas Weller", "Tarnow", "Selz"), ("Karin Holm", "Velden", "Wirth"),
          ("Lena Falk", "Rimbach", "Ulm")]


def ablation_questions() -> list[tuple[str, str, str, list]]:
    """(id, question, answer, context) of the ablation scenario, founders first, then the capital, then births."""
    out = []
    for n, (firm, founder, year) in enumerate(FOUNDERS):
        out.append((f"f{n}", f"When was the founder of the {firm} Company born?", year,
                    [[f"{firm} Company", [f"The {firm} Company was founded in 1901 by {founder}."]],
                     [founder, [f"{founder} (born {year}) was a merchant."]]]))
    out.append(("c0", "What is the capital of Norland?", "Vesk", [["Norland", ["Norland is a country whose capital is Vesk."]]]))
    out.append(("w0", "Which city is the capital of Osterland?", "Lund",
                [["Osterland", ["Osterland is a country whose capital is Lund. The Mur flows through Osterland."]]]))
    for n, (person, place, elsewhere) in enumerate(BIRTHS):
        family = person.split()[1]
        out.append((f"b{n}", f"Where was {person} born?", place,
                    [[person, [f"{person} (born 1950 in {place}) is a painter."]],
                     [f"{family} family", [f"The {family} family settled in {elsewhere} in 1960."]]]))
    return out


def write_ablation_dataset(path: Path) -> Path:
    """The ablation scenario as a HotpotQA-format file."""
    records = [{"_id": qid, "type": "bridge" if qid[0] == "f" else "comparison", "level": "hard", "question": q,
                "answer": a, "supporting_facts": [[context[0][0], 0]], "context": context}
               for qid, q, a, context in ablation_questions()]
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def _plans(messages: list[Message], schema: type[BaseModel]) -> dict:
    text = messages[-1]["content"]
    question = re.search(r"Question: (.*)", text).group(1)
    if "Osterland" in question:
        return {"subquestions": ["What is the capital of Osterland?", "Which river flows through Osterland?"]}
    if firm := re.search(r"founder of the (\w+) Company", question):
        first = "What failed:" not in text  # the rule sent the first plan back
        return {"subquestions": [f"Who founded the {firm.group(1)} Company?",
                                 "When was the founder born?" if first else "When was #1 born?"]}
    return {"subquestions": [question]}


def ablation_model(flaky: bool = False) -> ScriptedLLM:
    """Answers decided by the prompt alone; ``flaky``: the capital's answer changes every time it is asked."""
    llm = ScriptedLLM()
    if flaky:
        asked = iter(range(1000))
        llm.add_rule(lambda m, s: answer_citing("Vesk" if next(asked) % 2 == 0 else "Norland")(m, s), schema="SubAnswer",
                     contains="capital of Norland?", confidence=0.95)
    llm.add_rule(_plans, schema="Decomposition")
    for firm, founder, year in FOUNDERS:
        llm.add_rule(answer_citing(founder, f"{firm} Company"), schema="SubAnswer",
                     contains=f"Who founded the {firm} Company?", confidence=0.95)
        llm.add_rule(answer_citing(year, founder), schema="SubAnswer", contains=f"When was {founder} born?",
                     confidence=0.95)
    for person, place, elsewhere in BIRTHS:
        family = person.split()[1]
        llm.add_rule({"query": f"{family} family {elsewhere}"}, schema="Reformulation", contains=person)
        llm.add_rule(answer_citing(elsewhere, person), schema="SubAnswer", contains=elsewhere, confidence=0.9)
        llm.add_rule(answer_citing(place, person), schema="SubAnswer", contains=f"{person} born?", confidence=0.2)
    llm.add_rule(answer_citing("Vesk", "Norland"), schema="SubAnswer", contains="capital of Norland?", confidence=0.95)
    llm.add_rule(answer_citing("Lund", "Osterland"), schema="SubAnswer", contains="capital of Osterland?", confidence=0.95)
    llm.add_rule(answer_citing("Mur", "Osterland"), schema="SubAnswer", contains="river flows", confidence=0.95)
    llm.add_rule({"answer": "Lund"}, schema="FinalAnswer", contains="Osterland")
    # whatever else is asked (a step that names nothing, the whole question read): nothing found
    llm.add_rule({"answer": "unknown", "passages": [], "subject": "", "relation": "other"}, schema="SubAnswer")
    llm.add_rule({"query": "company founder"}, schema="Reformulation")
    llm.add_rule({"answer": "unknown"}, schema="FinalAnswer")
    return llm


def ablation_index(data: Path) -> InMemoryIndex:
    """The scenario's open corpus in memory."""
    index = InMemoryIndex()
    for n, passage in enumerate(open_corpus(load_questions(data, "hotpotqa"))):
        index.add(passage.title, passage.text, n)
    return index


def ablation_config(**overrides) -> "object":
    """The scenario's configuration (one passage a search, every question-shape rule on: the ablation machinery is
    tested over all of them, whatever the shipped defaults keep)."""
    return load_config({"retrieval.top_k": 1, "pipeline.rules": ("all",), **overrides}, env={})


def run_ablation_baseline(data: Path, out: Path, methods: list[str] | None = None, llm: ScriptedLLM | None = None,
                          **options) -> list[dict]:
    """Run the scenario (``reagent-both`` by default) into ``out``; its records."""
    run_benchmark("hotpotqa", data, config=options.pop("config", None) or ablation_config(),
                  methods=methods or ["reagent-both"], out=out, llm=llm or ablation_model(),
                  retriever=ablation_index(data), **options)
    return read_records(out / RECORDS_FILE)
