"""Answer-Assembler (A_A): composes the final answer.

The enabled ``assemble`` rules (reagent_local.rules.assemble_rules) decide clear cases
in code: a chain answered by its last step, comparisons of dates and numbers, "both"
questions; the model is asked otherwise (grammar-bound to the question's two options when
the ``option-grammar`` rule applies). For the second road it reads the whole question over
the evidence the retriever sent it (:meth:`AnswerAssembler.read`).
Conflicts between steps reach the Supervisor through the channel (two asserts of one wave
that cannot both hold); the assembler no longer looks for contradictions across steps
(removed after the dev decision: docs/repairs.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..core.channel import Message
from ..core.knowledge import Statement, make_statement
from ..rules import RuleSet
from ..rules.stages import ASSEMBLE, CONSTRAIN
from ..runtime.prompts import render_messages
from . import PROMPTS, Caller
from ..core.evidence import Evidence, EvidencePassage
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
class StepResult:
    """What the assembler knows of one answered sub-question."""

    index: int
    question: str  # with earlier answers substituted
    answer: str
    statement: Statement | None
    depends_on: tuple[int, ...]


@dataclass(frozen=True)
class Assembly:
    """The final answer and the rule that decided it (None: the model did)."""

    answer: str
    rule: str | None = None


class AnswerAssembler:
    """Final answer from verified partial answers, and the whole question read for the second road."""

    def __init__(self, call: Caller, rules: RuleSet) -> None:
        self.call = call
        self.rules = rules

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
        """The second road: the whole question answered from the run's evidence."""
        return read_passages(self.call, AGENT, -1, question, evidence)

    @staticmethod
    def read(inbox: Sequence[Message]) -> list[EvidenceFound]:
        """The evidence the retriever found for the whole question (the second road reads it)."""
        return [m.body for m in inbox if isinstance(m.body, EvidenceFound) and m.body.step is None]
