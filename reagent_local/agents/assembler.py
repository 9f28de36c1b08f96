"""Answer-Assembler (A_A): composes the final answer and finds cross-step contradictions.

The enabled ``assemble`` rules (reagent_local.rules.assemble_rules) decide clear cases
in code: a chain answered by its last step, comparisons of dates and numbers, "both"
and "the same ..." questions, an option named by a step; the model is asked otherwise
(grammar-bound to the question's two options when the ``option-grammar`` rule applies).
For the second road it reads the whole question over the evidence the retriever sent it
(:meth:`AnswerAssembler.read`), its answer put in the question's words by the ``snap`` rules.
Contradictions between sub-questions are escalated to the Supervisor: verified
statements whose values cannot both hold (the core's rules); a bridge that does not
hold: step j was asked about answer #k, yet none of step j's evidence mentions that
answer, so #k or step j's answer is wrong; and an unfounded step: step j found no
answer about #k and nothing it read mentions #k, so #k is doubted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..core.channel import Message
from ..core.conflicts import ConflictChecker
from ..core.knowledge import Statement, make_statement
from ..rules import RuleSet
from ..rules.stages import ASSEMBLE, CONSTRAIN, SNAP
from ..runtime.prompts import render_messages
from ..text import is_yes_no_value
from . import PROMPTS, Caller
from ..core.evidence import Evidence, EvidencePassage, grounded_in, is_unknown
from .messages import EvidenceFound
from .schemas import FinalAnswer, option_answer
from .verifier import Candidate, read_passages

AGENT = "assembler"
WHOLE_QUESTION = "question"  # the sub-question key of statements that answer the whole question


def final_statement(question: str, answer: str, *, confidence: float,
                    cited: tuple[EvidencePassage, ...] = ()) -> Statement:
    """A statement answering the whole question; two of them with different answers conflict."""
    return make_statement(f"{question} -> {answer}", subject="#question", relation="answer", value=answer,
                          agent=AGENT, subquestion=WHOLE_QUESTION, provenance=[(p.id, p.score) for p in cited],
                          confidence=confidence)


@dataclass(frozen=True)
class Escalation:
    """Statements that cannot all stand, with the reason, sent to the Supervisor."""

    statements: tuple[Statement, ...]
    reason: str
    kind: str  # "value" | "bridge" | "unfounded"


@dataclass(frozen=True)
class StepResult:
    """What the assembler knows of one answered sub-question."""

    index: int
    question: str  # with earlier answers substituted
    answer: str
    statement: Statement | None
    evidence_texts: tuple[str, ...]
    depends_on: tuple[int, ...]
    cited_texts: tuple[str, ...] = ()  # the passages this step's answer was read from


@dataclass(frozen=True)
class Assembly:
    """The final answer and the rule that decided it (None: the model did)."""

    answer: str
    rule: str | None = None


class AnswerAssembler:
    """Final answer from verified partial answers; escalates what does not fit together."""

    def __init__(self, call: Caller, checker: ConflictChecker, rules: RuleSet) -> None:
        self.call = call
        self.checker = checker
        self.rules = rules

    def contradictions(self, steps: Sequence[StepResult]) -> list[Escalation]:
        """Cross-step value conflicts (rules only) and broken bridges."""
        found: list[Escalation] = []
        structured = [s.statement for s in steps if s.statement is not None and s.statement.structured]
        for a, b, verdict in self.checker.find_conflicting_pairs(structured):
            if a.subquestion != b.subquestion:
                found.append(Escalation((a, b), verdict.reason, "value"))
        by_index = {s.index: s for s in steps}
        for step in steps:
            for k in step.depends_on:
                earlier = by_index.get(k)
                if earlier is None or earlier.statement is None or is_unknown(earlier.answer):
                    continue  # nothing to reconcile: an unanswered step is not a contradiction
                if is_yes_no_value(earlier.answer) or not step.evidence_texts:
                    continue
                if is_unknown(step.answer):
                    # step j found nothing, and nothing it read mentions answer #k beyond the passage #k was
                    # read from: #k is the likelier culprit
                    sources = set(earlier.cited_texts)
                    about = [t for t in step.evidence_texts if t not in sources]
                    if about and grounded_in(earlier.answer, about):
                        continue
                    reason = (f"step {step.index + 1} asks about {earlier.answer!r} (answer {k + 1}) and found no "
                              f"answer; no passage it read mentions {earlier.answer!r} but the one it came from")
                    found.append(Escalation((earlier.statement,), reason, "unfounded"))
                elif step.statement is not None and not grounded_in(earlier.answer, step.evidence_texts):
                    reason = (f"step {step.index + 1} asks about {earlier.answer!r} (answer {k + 1}) "
                              f"but none of its passages mention it")
                    found.append(Escalation((earlier.statement, step.statement), reason, "bridge"))
        return found

    def assemble(self, question: str, steps: Sequence[StepResult]) -> Assembly:
        """The final short answer: the first enabled assemble rule that decides, else the model."""
        if not steps:
            return Assembly("unknown")
        decided = self.rules.first(ASSEMBLE, question, steps, detail=lambda answer: f"answer {answer!r}")
        if decided is not None:
            return Assembly(decided.value, decided.rule)
        facts = "\n".join(f"{s.index + 1}. {s.question} -> {s.answer}" for s in steps)
        messages = render_messages(PROMPTS, "assemble", facts=facts, question=question)
        options = self.rules.first(CONSTRAIN, question, steps, detail=" | ".join)
        schema = option_answer(options.value) if options is not None else FinalAnswer
        return Assembly(" ".join(self.call(AGENT, messages, schema, max_tokens=40).value.answer.split()))

    def read_whole(self, question: str, evidence: Evidence) -> Candidate:
        """The second road: the whole question answered from the run's evidence, then the ``snap`` rules (an
        answer naming an option of 'A or B?' becomes that option)."""
        candidate = read_passages(self.call, AGENT, -1, question, evidence)
        snapped = self.rules.first(SNAP, question, candidate.answer,
                                   detail=lambda option: f"{candidate.answer!r} -> {option!r}")
        if snapped is None:
            return candidate
        return Candidate(candidate.subquestion, question, snapped.value, candidate.cited, candidate.subject,
                         candidate.relation, candidate.probability)

    @staticmethod
    def read(inbox: Sequence[Message]) -> list[EvidenceFound]:
        """The evidence the retriever found for the whole question (the second road reads it)."""
        return [m.body for m in inbox if isinstance(m.body, EvidenceFound) and m.body.step is None]
