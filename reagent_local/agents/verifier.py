"""Verifier (A_V): answers a sub-question from evidence, checks the answer, decides what happens next.

Cheap deterministic checks come first (DESIGN 5b): an answer the model could not give,
a span absent from the passages it cites, a cited passage that reads like an
instruction, an answer whose type does not fit the question (the ``check`` rules), a
value that contradicts a knowledge-graph fact; then the ``doubt`` rules (an answer read
from passages that never name what the step builds on). Only pairs the rules cannot
decide go to the LLM judge. The verifier's decision on a step's attempts is a value:
:class:`Accept` or :class:`Retry` (a local backtrack: new evidence, a new query); an answer
that fails a check is not retried (the surest answer that passed stands, else it, uncertain).
It reads its inbox: the evidence the retriever found for a step, and the controller's
challenges (:meth:`Verifier.read`); a retry goes back to the retriever as a
:class:`~.messages.Rejection`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, NamedTuple, Sequence, Union

from ..core.channel import Message
from ..core.conflicts import ConflictChecker, Verdict, check_against_facts
from ..core.knowledge import Statement, make_statement
from ..core.relations import ALL_RELATIONS
from ..errors import LLMOutputError
from ..rules import RuleSet, answer_type_problem
from ..rules.stages import DOUBT
from ..runtime.prompts import render_messages
from ..text import is_yes_no_value, normalize
from . import PROMPTS, Caller
from ..core.evidence import BuiltOn, Evidence, EvidencePassage, format_evidence, grounded_in, is_unknown, values_agree
from .messages import EvidenceFound, Recheck, Rejection
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
    probability: float | None = None  # how sure the model was of the span (token probabilities), if reported

    def to_statement(self, confidence: float) -> Statement:
        """The statement the verifier holds for this candidate."""
        structured = self.relation in ALL_RELATIONS and self.relation != "answer" and bool(self.subject.strip())
        provenance = [(p.id, p.score) for p in self.cited]
        text = f"{self.question} -> {self.answer}"
        if structured:
            return make_statement(text, subject=self.subject.strip(), relation=self.relation, value=self.answer,
                                  agent=AGENT, subquestion=self.subquestion, provenance=provenance, confidence=confidence)
        if is_yes_no_value(self.answer):
            return make_statement(text, subject=f"#{self.subquestion + 1}", relation="answer", value=self.answer,
                                  agent=AGENT, subquestion=self.subquestion, provenance=provenance, confidence=confidence)
        # free text: two answers to one sub-question are compared by the LLM judge, not by string rules
        return make_statement(text, agent=AGENT, subquestion=self.subquestion, provenance=provenance,
                              confidence=confidence)


@dataclass(frozen=True)
class Check:
    """What the checks found wrong with a candidate."""

    problems: tuple[str, ...] = ()
    kg_conflicts: tuple[tuple[Statement, Verdict], ...] = ()
    kg_supports: tuple[Statement, ...] = ()
    own_conflicts: tuple[tuple[Statement, Verdict], ...] = field(default=())
    # reasons to read again that do not make the answer wrong (it was read from another article than the
    # one the step asks about): a retry is worth one call, and the answer still stands if the retry fails
    doubts: tuple[str, ...] = ()

    @property
    def sound(self) -> bool:
        """No check failed (doubts allowed)."""
        return not self.problems and not self.kg_conflicts and not self.own_conflicts

    @property
    def ok(self) -> bool:
        """No check failed and nothing was doubted."""
        return self.sound and not self.doubts

    @property
    def retry_signal(self) -> str:
        """The conflict signal a retry for these findings names (a benchmark record counts them apart): only
        sound answers are retried, so the model's doubt or a doubt about where the answer was read."""
        return "low-confidence" if self.ok else "off-subject"

    def reasons(self) -> list[str]:
        """Every problem and doubt as one readable reason."""
        reasons = list(self.problems) + list(self.doubts)
        reasons += [f"contradicts the infobox fact {f.text!r}" for f, _ in self.kg_conflicts]
        reasons += [f"contradicts verified {h.text!r}: {v.reason}" for h, v in self.own_conflicts]
        return reasons


@dataclass(frozen=True)
class Attempt:
    """One try at a step: the query, its evidence, the candidate answer, its check and confidence."""

    query: str
    evidence: Evidence
    candidate: Candidate
    check: Check
    confidence: float

    @property
    def statement(self) -> Statement:
        """The statement the verifier holds for this attempt."""
        return self.candidate.to_statement(self.confidence)


@dataclass(frozen=True)
class Accept:
    """The attempt stands; ``retract`` are weaker statements of this step it replaces."""

    attempt: Attempt
    retract: tuple[Statement, ...] = ()
    uncertain: bool = False  # accepted unchecked (no local backtracking)
    name = "accept"

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(self.attempt.check.reasons())


@dataclass(frozen=True)
class Retry:
    """A local backtrack: drop the attempt, ask the retriever for new evidence."""

    attempt: Attempt
    reasons: tuple[str, ...]
    hints: tuple[str, ...]  # titles of the passages seen, for the new query
    keep: tuple[str, ...] = ()  # passage ids to read again beside new ones: an unsure answer's sources
    name = "retry"


Decision = Union[Accept, Retry]


class LLMJudge:
    """The Verifier's judge for free-text pairs (implements conflicts.Judge)."""

    def __init__(self, call: Caller) -> None:
        self.call = call

    def judge(self, a: Statement, b: Statement) -> Verdict:
        messages = render_messages(PROMPTS, "judge", a=a.text, b=b.text)
        try:
            result = self.call(AGENT, messages, ConflictJudgement, max_tokens=16)
        except LLMOutputError as exc:  # logged by the call; no verdict is no conflict, said so in the reason
            return Verdict(False, f"LLM judge: output unusable ({str(exc).splitlines()[0]})")
        return Verdict(result.value.contradict, "LLM judge: " + ("contradict" if result.value.contradict else "compatible"))


def read_passages(call: Caller, agent: str, index: int, question: str, evidence: Evidence,
                  rejected: Sequence[str] = ()) -> Candidate:
    """A span answer to ``question`` from numbered passages, with the passages it came from and its probability.

    The verifier reads a step's evidence this way, the assembler the whole question's. ``rejected``
    answers (given up by the supervisor) are named in the prompt, so the same passages can give another.
    """
    asked = question + (f" (It is not {' and not '.join(rejected)}.)" if rejected else "")
    messages = render_messages(PROMPTS, "answer", evidence=format_evidence(evidence), question=asked)
    result = call(agent, messages, SubAnswer, max_tokens=90)
    value: SubAnswer = result.value
    answer = " ".join(value.answer.split())
    cited = tuple(evidence.by_number(value.passages))
    if not grounded_in(answer, [f"{p.title}: {p.text}" for p in cited]):
        # small models often cite the wrong number: cite the passages that contain the span
        containing = tuple(p for p in evidence.passages if grounded_in(answer, [f"{p.title}: {p.text}"]))
        cited = containing or cited
    return Candidate(index, question, answer, cited, value.subject, value.relation,
                     result.call.span_probability(value.answer))


def confidence_of(candidate: Candidate, evidence: Evidence, check: Check) -> float:
    """A confidence in [0, 1]: the model's own probability for the span (else the rank of its passage),
    raised by graph support, lowered by failed checks."""
    if not evidence.passages:
        return 0.1
    if candidate.probability is not None:
        score = candidate.probability
    else:
        best_rank = min((evidence.passages.index(p) for p in candidate.cited if p in evidence.passages),
                        default=len(evidence.passages))
        score = 0.55 + 0.25 * (1 - best_rank / max(1, len(evidence.passages)))
    if check.kg_supports:
        score += 0.15
    if check.problems:
        score -= 0.3
    return round(min(1.0, max(0.05, score)), 3)


class Verifier:
    """Answers from evidence, checks the answer, and decides: accept or retry."""

    def __init__(self, call: Caller, checker: ConflictChecker, rules: RuleSet, *, min_confidence: float = 0.0,
                 local: bool = True) -> None:
        self.call = call
        self.checker = checker
        self.rules = rules
        self.min_confidence = min_confidence  # a checked answer less sure than this is retried once
        self.local = local  # local backtracking: an unsure or doubted answer is retried

    @property
    def acts_on_doubts(self) -> bool:
        """Whether the verifier acts on doubts (where an answer was read): only with local backtracking, where a
        doubt earns a retry, and with a ``doubt`` rule on; the retriever then says what each step builds on."""
        return self.local and bool(self.rules.active(DOUBT))

    def answer(self, index: int, question: str, evidence: Evidence, rejected: Sequence[str] = ()) -> Candidate:
        """Ask the model for a span answer with the passages it used (not one of the ``rejected`` answers)."""
        return read_passages(self.call, AGENT, index, question, evidence, rejected)

    @staticmethod
    def not_again(rejected: Iterable[str] = ()) -> list[str]:
        """The answers a step's next reading is told not to give: those the supervisor gave up (``rejected``; a
        step is read again only after an answer that passed its checks, so none of its own is ruled out)."""
        return sorted(set(rejected))

    def examine(self, candidate: Candidate, evidence: Evidence, *, query: str, held: Sequence[Statement] = (),
                facts: Iterable[Statement] = (), rejected: Iterable[str] = (), about: Sequence[BuiltOn] = ()) -> Attempt:
        """Check a candidate (against ``held``, its own statements, and graph ``facts``) and score it;
        ``about``: what the step asks about (the answers it builds on)."""
        check = self.check(candidate, evidence, verified=held, facts=facts, about=about)
        if candidate.answer in set(rejected):
            check = Check(check.problems + (f"{candidate.answer!r} was discarded by the supervisor",),
                          check.kg_conflicts, check.kg_supports, check.own_conflicts, check.doubts)
        return Attempt(query, evidence, candidate, check, confidence_of(candidate, evidence, check))

    def check(self, candidate: Candidate, evidence: Evidence, *, verified: Sequence[Statement] = (),
              facts: Iterable[Statement] = (), about: Sequence[BuiltOn] = ()) -> Check:
        """Deterministic checks, then graph facts, then the verifier's own verified statements, then whether
        the answer was read where it should be (the ``doubt`` rules: a doubt is no failure, it earns a retry)."""
        problems: list[str] = []
        if is_unknown(candidate.answer):
            return Check(problems=("no passage answers the question",))
        type_problem = answer_type_problem(candidate.question, candidate.answer, self.rules,
                                           step=candidate.subquestion)
        if type_problem:
            problems.append(type_problem)
        if any(p.suspicious for p in candidate.cited):
            problems.append("a cited passage contains instructions, not facts")
        is_yes_no = is_yes_no_value(candidate.answer)
        # the title is part of the passage: "Fraser Valley Regional District" may only be named there
        texts = [f"{p.title}: {p.text}" for p in (candidate.cited or evidence.passages)]
        if not is_yes_no and not grounded_in(candidate.answer, texts + [f.text for f in evidence.facts]):
            problems.append(f"the answer {candidate.answer!r} does not appear in the cited passages")
        statement = candidate.to_statement(confidence=0.5)
        kg_conflicts, kg_supports = (), ()
        if statement.structured and statement.relation != "answer":
            fact_check = check_against_facts(statement, facts, self.checker.rules)
            kg_conflicts = tuple((f, v) for f, v in fact_check.conflicts
                                 if not values_agree(f.value or "", statement.value or ""))
            kg_supports = fact_check.supports
        own = []
        for held in verified:
            # local scope: this step's own earlier answers; cross-step conflicts are the assembler's
            if held.subquestion == statement.subquestion and held.id != statement.id:
                verdict = self.checker.conflict(held, statement)
                if verdict.conflict and not values_agree(held.value or "", statement.value or ""):
                    own.append((held, verdict))
        doubt = self._doubt(candidate, about) if not is_yes_no else None
        return Check(tuple(problems), kg_conflicts, kg_supports, tuple(own), (doubt,) if doubt else ())

    def _doubt(self, candidate: Candidate, about: Sequence[BuiltOn]) -> str | None:
        """Why the answer may have been read in the wrong place: the first enabled ``doubt`` rule that says so."""
        doubt = self.rules.first(DOUBT, candidate.cited, about, step=candidate.subquestion)
        return doubt.value if doubt else None

    def decide(self, attempts: Sequence[Attempt], *, retries: int, local: bool | None = None) -> Decision:
        """Accept an attempt or retry with new evidence (until retries are spent or an answer repeats).

        An answer that failed a check is not retried: the surest attempt that passed stands, else it, uncertain.
        A checked span answer the model was unsure of (confidence below ``min_confidence``) is
        retried once before anything is built on it; then the surest checked attempt stands. So is a doubted
        answer (read from another article than the one its step asks about): one retry, then the surest
        sound attempt stands, as a retry that reads elsewhere again seldom finds the answer. A yes or
        no is not: a two-way verdict's token probability says little (on the tune questions its retries
        mostly gave the same verdict again, and otherwise one fixed, one broken). ``local`` defaults to the
        verifier's own switch; ``retries`` is the controller's budget for the step.
        """
        local = self.local if local is None else local
        last = attempts[-1]
        check, statement = last.check, last.statement
        # the answers that passed their checks; failing those, the ones that only raised a doubt
        checked = [a for a in attempts if a.check.ok] or [a for a in attempts if a.check.sound]
        verdict = is_yes_no_value(last.candidate.answer)
        if check.ok and (last.confidence >= self.min_confidence or verdict or not local):
            return Accept(last)
        if local and not check.problems and not check.kg_conflicts and check.own_conflicts and all(
                held.confidence < statement.confidence for held, _ in check.own_conflicts):
            # it only contradicts older, weaker answers of this step: those go, this one stays
            return Accept(last, retract=tuple(held for held, _ in check.own_conflicts))
        if not local:  # the ablation without local backtracking keeps the first answer (a doubt is no failure)
            return Accept(last, uncertain=not check.sound)
        if not check.sound:
            # a failed check sends nothing back: the surest answer that passed stands, else this one, uncertain
            return Accept(max(checked, key=lambda a: a.confidence)) if checked else Accept(last, uncertain=True)
        unsure = check.ok and last.confidence < self.min_confidence
        reasons = tuple(check.reasons()) or (f"the model is unsure of {last.candidate.answer!r} "
                                             f"(confidence {last.confidence:.2f})",)
        repeated = sum(normalize(a.candidate.answer) == normalize(last.candidate.answer) for a in attempts) > 1
        # a doubt earns one retry: doubted a second time, the surest sound answer stands
        doubted = [a.check.sound and bool(a.check.doubts) for a in attempts]
        doubted_again = doubted[-1] and any(doubted[:-1])
        # the last answer is sound (a failed one returned above), so ``checked`` holds it or surer ones, and it cites no
        # passage that reads like instructions (that fails a check): nothing is excluded from the retry
        if len(attempts) > retries or repeated or unsure and len(checked) > 1 or doubted_again:
            return Accept(max(checked, key=lambda a: a.confidence))  # the surest answer that passed its checks
        # an answer that passed its checks but was unsure may be right: its passages are read again beside new ones
        keep = tuple(p.id for p in last.candidate.cited) if unsure else ()
        return Retry(last, reasons, tuple(p.title for p in last.evidence.passages[:3]), keep)

    @staticmethod
    def read(inbox: Sequence[Message]) -> "Inbox":
        """What to do: withdraw the statements the controller challenged, verify the evidence that came for steps."""
        return Inbox(tuple(s for m in inbox if isinstance(m.body, Recheck) for s in m.statements),
                     tuple(m.body for m in inbox if isinstance(m.body, EvidenceFound) and m.body.step is not None))

    @staticmethod
    def rejection(step: int, attempts: Sequence[Attempt], retry: Retry, built_on: Sequence[str]) -> Rejection:
        """The reject that sends a step back to the retriever: what failed, what was tried, and whose articles to
        read further (the answers the step builds on, ``built_on``, then the subject the model named)."""
        last = retry.attempt
        named = last.candidate.subject.strip()
        subjects = [*(a for a in built_on if not is_unknown(a)), *([named] if named else [])]
        return Rejection(step=step, answer=last.candidate.answer, reasons=retry.reasons, question=last.candidate.question,
                         query=last.query, tried=tuple(a.query for a in attempts), hints=retry.hints,
                         keep=retry.keep, subjects=tuple(dict.fromkeys(subjects)))


class Inbox(NamedTuple):
    """The verifier's reading of a round: statements to withdraw, evidence to verify (in the order it came)."""

    withdraw: tuple[Statement, ...]
    verify: tuple[EvidenceFound, ...]


def graph_facts(evidence: Evidence) -> list[Statement]:
    """The evidence's knowledge-graph facts as statements of the agent 'kg' (for the fact check)."""
    out = []
    for fact in evidence.facts:
        try:
            out.append(make_statement(fact.text, subject=fact.subject, relation=fact.relation, value=fact.value,
                                      agent="kg", provenance=[(fact.passage_id, 1.0)], confidence=0.9))
        except ValueError:
            continue  # a relation the core has no rule for: the graph fact is context only
    return out
