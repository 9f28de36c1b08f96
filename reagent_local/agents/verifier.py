"""Verifier (A_V): answers a sub-question from evidence and checks the answer.

Cheap deterministic checks come first (DESIGN 5b): an answer the model could not give,
a span absent from the passages it cites, a cited passage that reads like an
instruction, an answer whose type does not fit the question, a value that contradicts
a knowledge-graph fact. Only pairs the rules cannot decide go to the LLM judge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from ..core.conflicts import ConflictChecker, Verdict, check_against_facts, normalize_value
from ..core.knowledge import Statement, make_statement
from ..prompts import render_messages
from ..core.relations import ALL_RELATIONS
from . import PROMPTS, Caller
from .evidence import Evidence, EvidencePassage, answer_type_problem, format_evidence, grounded_in, is_unknown
from .schemas import ConflictJudgement, SubAnswer

AGENT = "verifier"


@dataclass(frozen=True)
class Candidate:
    """A proposed answer to one sub-question, before it is verified."""

    subquestion: int
    question: str
    answer: str
    cited: tuple[EvidencePassage, ...]
    subject: str
    relation: str

    def to_statement(self, confidence: float) -> Statement:
        """The statement the verifier asserts when the candidate passes."""
        structured = self.relation in ALL_RELATIONS and self.relation != "answer" and bool(self.subject.strip())
        provenance = [(p.id, p.score) for p in self.cited]
        text = f"{self.question} -> {self.answer}"
        if structured:
            return make_statement(text, subject=self.subject.strip(), relation=self.relation, value=self.answer,
                                  agent=AGENT, subquestion=self.subquestion, provenance=provenance, confidence=confidence)
        if normalize_value(self.answer) in {"yes", "no"}:
            return make_statement(text, subject=f"#{self.subquestion + 1}", relation="answer", value=self.answer,
                                  agent=AGENT, subquestion=self.subquestion, provenance=provenance, confidence=confidence)
        # free text: two answers to one sub-question are compared by the LLM judge, not by string rules
        return make_statement(text, agent=AGENT, subquestion=self.subquestion, provenance=provenance,
                              confidence=confidence)


@dataclass(frozen=True)
class Check:
    """The verifier's verdict on a candidate."""

    problems: tuple[str, ...] = ()
    kg_conflicts: tuple[tuple[Statement, Verdict], ...] = ()
    kg_supports: tuple[Statement, ...] = ()
    own_conflicts: tuple[tuple[Statement, Verdict], ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.problems and not self.kg_conflicts and not self.own_conflicts


class LLMJudge:
    """The Verifier's judge for free-text pairs (implements conflicts.Judge)."""

    def __init__(self, call: Caller) -> None:
        self.call = call

    def judge(self, a: Statement, b: Statement) -> Verdict:
        messages = render_messages(PROMPTS, "judge", a=a.text, b=b.text)
        result = self.call(AGENT, messages, ConflictJudgement, max_tokens=16)
        return Verdict(result.value.contradict, "LLM judge: " + ("contradict" if result.value.contradict else "compatible"))


_YEAR = re.compile(r"\b(1\d{3}|20\d{2})\b")


def _values_agree(a: str, b: str) -> bool:
    """Values that differ only by qualification ('Montgomery' / 'Montgomery, Alabama') or
    by date precision and format ('February 12, 1809' / '1809-02-12')."""
    ya, yb = set(_YEAR.findall(a)), set(_YEAR.findall(b))
    if ya and yb:
        return bool(ya & yb)
    ta, tb = set(normalize_value(a).split()), set(normalize_value(b).split())
    return bool(ta) and bool(tb) and (ta <= tb or tb <= ta)


class Verifier:
    """Answers from evidence, checks the answer, reports what is wrong with it."""

    def __init__(self, call: Caller, checker: ConflictChecker) -> None:
        self.call = call
        self.checker = checker

    def answer(self, index: int, question: str, evidence: Evidence) -> Candidate:
        """Ask the model for a span answer with the passages it used."""
        messages = render_messages(PROMPTS, "answer", evidence=format_evidence(evidence), question=question)
        value: SubAnswer = self.call(AGENT, messages, SubAnswer, max_tokens=90).value
        answer = " ".join(value.answer.split())
        cited = tuple(evidence.by_number(value.passages))
        if not grounded_in(answer, [f"{p.title}: {p.text}" for p in cited]):
            # small models often cite the wrong number: cite the passages that contain the span
            containing = tuple(p for p in evidence.passages if grounded_in(answer, [f"{p.title}: {p.text}"]))
            cited = containing or cited
        return Candidate(index, question, answer, cited, value.subject, value.relation)

    def check(self, candidate: Candidate, evidence: Evidence, *, verified: Sequence[Statement] = (),
              facts: Iterable[Statement] = ()) -> Check:
        """Deterministic checks, then graph facts, then the verifier's own verified statements."""
        problems: list[str] = []
        if is_unknown(candidate.answer):
            return Check(problems=("no passage answers the question",))
        type_problem = answer_type_problem(candidate.question, candidate.answer)
        if type_problem:
            problems.append(type_problem)
        if any(p.suspicious for p in candidate.cited):
            problems.append("a cited passage contains instructions, not facts")
        is_yes_no = normalize_value(candidate.answer) in {"yes", "no"}
        # the title is part of the passage: "Fraser Valley Regional District" may only be named there
        texts = [f"{p.title}: {p.text}" for p in (candidate.cited or evidence.passages)]
        if not is_yes_no and not grounded_in(candidate.answer, texts + [f.text for f in evidence.facts]):
            problems.append(f"the answer {candidate.answer!r} does not appear in the cited passages")
        statement = candidate.to_statement(confidence=0.5)
        kg_conflicts, kg_supports = (), ()
        if statement.structured and statement.relation != "answer":
            fact_check = check_against_facts(statement, facts, self.checker.rules)
            kg_conflicts = tuple((f, v) for f, v in fact_check.conflicts if not _values_agree(f.value or "", statement.value or ""))
            kg_supports = fact_check.supports
        own = []
        for held in verified:
            # local scope: this step's own earlier answers; cross-step conflicts are the assembler's
            if held.subquestion == statement.subquestion and held.id != statement.id:
                verdict = self.checker.conflict(held, statement)
                if verdict.conflict and not _values_agree(held.value or "", statement.value or ""):
                    own.append((held, verdict))
        return Check(tuple(problems), kg_conflicts, kg_supports, tuple(own))


def confidence_of(candidate: Candidate, evidence: Evidence, check: Check) -> float:
    """A confidence in [0, 1] from evidence rank, grounding and graph support."""
    if not evidence.passages:
        return 0.1
    best_rank = min((evidence.passages.index(p) for p in candidate.cited if p in evidence.passages), default=len(evidence.passages))
    score = 0.55 + 0.25 * (1 - best_rank / max(1, len(evidence.passages)))
    if check.kg_supports:
        score += 0.15
    if check.problems:
        score -= 0.3
    return round(min(1.0, max(0.05, score)), 3)
