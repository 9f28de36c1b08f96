"""The two-turn benchmark: a multi-hop question asked whole, and asked as a first hop then a follow-up.

Built mechanically from MuSiQue's ``question_decomposition`` (2-hop questions only):

- turn 1 is the first step. A natural-language step is asked as it is; a ``"Subject >> relation"``
  step becomes a question from a template (``"Who is the spouse of Anna Benson?"``, ``RELATIONS``);
- turn 2 is the second step as a follow-up that points back instead of naming the bridge: ``"#1"``
  becomes ``"it"`` (``"#1's"``: ``"its"``) in a natural step, whatever the grammar makes of it,
  and a ``"#1 >> relation"`` step becomes ``"And what is its capital?"`` (``"their"`` for
  relations of a person: ``"And who is their father?"``). The follow-up starts with ``"And"``; it
  never names the first answer.

Each question is answered three ways with the same pipeline: the original question in one run
(``one_turn``), and the two turns as a conversation (``turn1``, then ``follow_up``, rewritten from
turn 1's question, answer and cited titles before the agents read it). The report compares the
follow-up's EM/F1 against the one-turn question's, says how often the follow-up scores as well,
and how often the rewrite names the first hop's gold answer. Records go to ``records.jsonl`` one
line per question as it finishes; ``resume`` skips the questions already there.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..datasets import Question, load_questions
from ..errors import BenchRunError
from ..text import normalize
from .metrics import best_em_f1

RECORDS = "records.jsonl"
REPORT = "report.md"
SUMMARY = "summary.json"

# "Subject >> relation" as a question: (first-turn template, follow-up template); {s} is the subject,
# {p} the follow-up's possessive ("its"/"their"), {r} the relation
RELATIONS: dict[str, tuple[str, str]] = {
    "located in the administrative territorial entity": ("In which administrative territorial entity is {s} located?",
                                                         "And in which administrative territorial entity is it located?"),
    "located on terrain feature": ("On which terrain feature is {s} located?", "And on which terrain feature is it located?"),
    "educated at": ("Where was {s} educated?", "And where were they educated?"),
    "member of sports team": ("Which sports team was {s} a member of?", "And which sports team were they a member of?"),
    "member of political party": ("Which political party was {s} a member of?",
                                  "And which political party were they a member of?"),
    "position held": ("What position did {s} hold?", "And what position did they hold?"),
    "award received": ("What award did {s} receive?", "And what award did they receive?"),
    "member of": ("What is {s} a member of?", "And what are they a member of?"),
    "part of": ("What is {s} part of?", "And what is it part of?"),
    "location": ("Where is {s} located?", "And where is it located?"),
}
WHO = {"performer", "spouse", "father", "mother", "sibling", "child", "author", "cast member", "creator", "employer",
       "director", "producer", "composer", "founded by", "lyricist", "screenwriter"}
# relations whose subject is a person: the follow-up says "their"
OF_A_PERSON = {"spouse", "father", "mother", "sibling", "child", "employer", "educated at", "member of sports team",
               "member of political party", "position held", "award received", "place of birth", "place of death",
               "date of birth", "date of death", "country of citizenship"}


@dataclass(frozen=True)
class TwoTurns:
    """One benchmark question split into two turns."""

    id: str
    question: str  # the original multi-hop question
    answers: tuple[str, ...]
    first: str  # turn 1: the first hop
    first_answer: str  # the first hop's gold answer (the bridge)
    follow_up: str  # turn 2: the second hop, pointing back

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"id": self.id, "question": self.question, "answers": list(self.answers), "first": self.first,
                "first_answer": self.first_answer, "follow_up": self.follow_up}


def _triple(step: str) -> tuple[str, str] | None:
    """``"Subject >> relation"`` as (subject, relation), else None."""
    if ">>" not in step:
        return None
    subject, relation = (part.strip() for part in step.split(">>", 1))
    return subject, relation


def first_turn(step: str) -> str:
    """The first step as a question."""
    triple = _triple(step)
    if triple is None:
        text = " ".join(step.split())
        return text if text.endswith("?") else text + "?"
    subject, relation = triple
    if relation in RELATIONS:
        return RELATIONS[relation][0].format(s=subject)
    return f"{'Who' if relation in WHO else 'What'} is the {relation} of {subject}?"


def follow_up_turn(step: str) -> str:
    """The second step as a follow-up that points back to the first answer instead of naming it."""
    triple = _triple(step)
    if triple is None:
        text = re.sub(r"#1\s*'s\b", "its", " ".join(step.split()))
        text = re.sub(r"#1\b", "it", text)
        text = text if text.endswith("?") else text + "?"
        return "And " + text[0].lower() + text[1:]
    _, relation = triple
    if relation in RELATIONS:
        return RELATIONS[relation][1]
    possessive = "their" if relation in OF_A_PERSON else "its"
    return f"And {'who' if relation in WHO else 'what'} is {possessive} {relation}?"


def two_turns(record: dict[str, Any], question: Question) -> TwoTurns | None:
    """The question's two turns, or None when its decomposition is not two steps, the second building on the first."""
    steps = record.get("question_decomposition") or []
    if len(steps) != 2 or "#1" not in steps[1].get("question", ""):
        return None
    return TwoTurns(question.id, question.question, question.answers, first_turn(steps[0]["question"]),
                    str(steps[0].get("answer", "")), follow_up_turn(steps[1]["question"]))


def build_two_turns(file: Path, ids: Sequence[str] | None = None, n: int | None = None) -> list[TwoTurns]:
    """The file's 2-hop questions as two turns, in file order, filtered by ``ids``, the first ``n``."""
    questions = {q.id: q for q in load_questions(file, "musique")}
    wanted = set(ids) if ids is not None else None
    out = []
    with open(file, encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            record = json.loads(line)
            question = questions.get(record.get("id"))
            if question is None or (wanted is not None and question.id not in wanted):
                continue
            made = two_turns(record, question)
            if made is not None:
                out.append(made)
    if not out:
        raise BenchRunError(f"no 2-hop question of {file} with a decomposition to split",
                            hint="pass a MuSiQue file (musique_ans_*.jsonl) and ids of its 2-hop questions")
    return out[:n] if n else out


def _scored(answer: Any, answers: Sequence[str]) -> dict[str, Any]:
    em, f1 = best_em_f1(answer.answer, answers)
    return {"answer": answer.answer, "em": em, "f1": round(f1, 4), "run_id": answer.run_id,
            "llm_calls": answer.llm_calls, "seconds": round(answer.seconds, 2), "uncertain": answer.uncertain}


def run_question(pipeline: Any, item: TwoTurns) -> dict[str, Any]:
    """Answer one question whole and as two turns; one record."""
    from ..reasoning.conversation import ask_in_conversation, new_conversation_id, turn_of

    started = time.monotonic()
    whole = pipeline.ask(item.question)
    conversation = new_conversation_id()
    first = ask_in_conversation(pipeline, item.first, (), conversation=conversation)
    follow = ask_in_conversation(pipeline, item.follow_up, [turn_of(first, item.first)], conversation=conversation)
    rewrite = follow.extra.get("rewrite") or {}
    standalone = rewrite.get("standalone", item.follow_up)
    first_em, first_f1 = best_em_f1(first.answer, [item.first_answer])
    return {**item.to_dict(), "conversation": conversation,
            "one_turn": _scored(whole, item.answers),
            "turn1": {"answer": first.answer, "em": first_em, "f1": round(first_f1, 4), "run_id": first.run_id},
            "follow_up_run": {**_scored(follow, item.answers), "rewritten": standalone,
                              "names_bridge": bool(item.first_answer) and
                              normalize(item.first_answer) in normalize(standalone),
                              "names_turn1_answer": bool(first.answer.strip()) and
                              normalize(first.answer) in normalize(standalone)},
            "seconds": round(time.monotonic() - started, 1)}


def read_records(folder: Path) -> list[dict[str, Any]]:
    """The finished records of a run folder (a torn last line is dropped)."""
    path = Path(folder) / RECORDS
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            break  # a line cut by a kill: that question runs again
    return out


def run_conversation_bench(pipeline: Any, items: Sequence[TwoTurns], folder: Path, *, resume: bool = False,
                           on_record: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Answer every item into ``folder`` (resumable), then write the report; returns the summary."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    records = read_records(folder)
    if records and not resume:
        raise BenchRunError(f"{folder} already holds {len(records)} records",
                            hint="pass --resume to go on with it, or another --out")
    (folder / RECORDS).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    done = {r["id"] for r in records}
    with open(folder / RECORDS, "a", encoding="utf-8") as out:
        for item in items:
            if item.id in done:
                continue
            record = run_question(pipeline, item)
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            out.flush()
            records.append(record)
            if on_record is not None:
                on_record(record)
    return write_report(folder, records)


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The table's figures: EM/F1 both ways, how often the follow-up does as well, how often the rewrite names the bridge."""
    n = len(records)
    if not n:
        return {"questions": 0}

    def mean(values: Sequence[float]) -> float:
        return round(sum(values) / len(values), 3) if values else 0.0

    one = [r["one_turn"] for r in records]
    follow = [r["follow_up_run"] for r in records]
    return {
        "questions": n,
        "one_turn": {"em": mean([x["em"] for x in one]), "f1": mean([x["f1"] for x in one])},
        "follow_up": {"em": mean([x["em"] for x in follow]), "f1": mean([x["f1"] for x in follow])},
        "turn1": {"em": mean([r["turn1"]["em"] for r in records]), "f1": mean([r["turn1"]["f1"] for r in records])},
        "as_well_f1": mean([1.0 if f["f1"] >= o["f1"] else 0.0 for f, o in zip(follow, one)]),
        "as_well_em": mean([1.0 if f["em"] >= o["em"] else 0.0 for f, o in zip(follow, one)]),
        "one_turn_right": sum(1 for o in one if o["em"]),
        "follow_up_also_right": sum(1 for f, o in zip(follow, one) if o["em"] and f["em"]),
        "one_turn_right_follow_up_wrong": sum(1 for f, o in zip(follow, one) if o["em"] and not f["em"]),
        "follow_up_right_one_turn_wrong": sum(1 for f, o in zip(follow, one) if f["em"] and not o["em"]),
        "rewrite_names_bridge": mean([1.0 if f["names_bridge"] else 0.0 for f in follow]),
        "rewrite_names_turn1_answer": mean([1.0 if f["names_turn1_answer"] else 0.0 for f in follow]),
        "seconds": round(sum(r.get("seconds", 0.0) for r in records), 1),
    }


def write_report(folder: Path, records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``summary.json`` and ``report.md`` (the table and one line per question) in ``folder``."""
    summary = summarize(records)
    Path(folder, SUMMARY).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    lines = ["# Two-turn benchmark: the follow-up against the one-turn question", ""]
    if not records:
        lines.append("No question finished yet.")
    else:
        s = summary
        lines += [f"{s['questions']} MuSiQue 2-hop questions; the follow-up was rewritten from turn 1 before the "
                  "agents read it.", "",
                  "| asked as | EM | F1 |", "| --- | ---: | ---: |",
                  f"| one turn (the original question) | {s['one_turn']['em']:.3f} | {s['one_turn']['f1']:.3f} |",
                  f"| turn 1 (the first hop; against its own gold answer) | {s['turn1']['em']:.3f} | {s['turn1']['f1']:.3f} |",
                  f"| follow-up (turn 2, rewritten) | {s['follow_up']['em']:.3f} | {s['follow_up']['f1']:.3f} |", "",
                  f"- the follow-up scores as well as the one-turn question: {s['as_well_f1']:.0%} of questions by F1, "
                  f"{s['as_well_em']:.0%} by EM",
                  f"- of the {s['one_turn_right']} questions answered right in one turn (EM), the follow-up is right "
                  f"too on {s['follow_up_also_right']}; the follow-up is right where one turn is wrong on "
                  f"{s['follow_up_right_one_turn_wrong']}",
                  f"- the rewrite names the first hop's gold answer: {s['rewrite_names_bridge']:.0%}; names turn 1's "
                  f"own answer: {s['rewrite_names_turn1_answer']:.0%}",
                  f"- seconds, all runs: {s['seconds']:.0f}", "",
                  "| id | turn 1 | follow-up | rewritten | one turn | follow-up answer | gold |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in records:
            cell = [r["id"], f"{r['first']} → {r['turn1']['answer']}", r["follow_up"], r["follow_up_run"]["rewritten"],
                    f"{r['one_turn']['answer']} ({r['one_turn']['f1']:.2f})",
                    f"{r['follow_up_run']['answer']} ({r['follow_up_run']['f1']:.2f})", r["answers"][0]]
            lines.append("| " + " | ".join(str(c).replace("|", "/").replace("\n", " ") for c in cell) + " |")
    Path(folder, REPORT).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return summary
