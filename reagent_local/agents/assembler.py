"""Answer-Assembler (A_A): composes the final answer and finds cross-step contradictions.

Two kinds of contradiction between sub-questions are escalated to the Supervisor:
verified statements whose values cannot both hold (the core's rules), and a bridge
that does not hold: step j was asked about answer #k, yet none of step j's evidence
mentions that answer, so #k or step j's answer is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..core.conflicts import ConflictChecker
from ..core.knowledge import Statement
from ..prompts import render_messages
from . import PROMPTS, Caller
from .compare import both_yes, compare, matching_option, options, same_answer
from .evidence import grounded_in, is_unknown, is_yes_no_question, normalize
from .schemas import FinalAnswer, option_answer

AGENT = "assembler"


@dataclass(frozen=True)
class Escalation:
    """Statements that cannot all stand, with the reason, sent to the Supervisor."""

    statements: tuple[Statement, ...]
    reason: str
    kind: str  # "value" | "bridge"


@dataclass(frozen=True)
class StepResult:
    """What the assembler knows of one answered sub-question."""

    index: int
    question: str  # with earlier answers substituted
    answer: str
    statement: Statement | None
    evidence_texts: tuple[str, ...]
    depends_on: tuple[int, ...]


def is_chain(steps: Sequence[StepResult]) -> bool:
    """True when the last step (transitively) uses the answer of every other step."""
    if not steps:
        return False
    needed, frontier = {steps[-1].index}, [steps[-1]]
    by_index = {s.index: s for s in steps}
    while frontier:
        step = frontier.pop()
        for k in step.depends_on:
            if k not in needed and k in by_index:
                needed.add(k)
                frontier.append(by_index[k])
    return needed == {s.index for s in steps}


def _local_deps(step: StepResult, steps: Sequence[StepResult]) -> tuple[int, ...]:
    """A step's dependencies as positions in ``steps`` (steps may be a subset of the plan)."""
    position = {s.index: i for i, s in enumerate(steps)}
    return tuple(position[k] for k in step.depends_on if k in position)


class AnswerAssembler:
    """Final answer from verified partial answers; escalates what does not fit together."""

    def __init__(self, call: Caller, checker: ConflictChecker) -> None:
        self.call = call
        self.checker = checker

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
                if earlier is None or earlier.statement is None or step.statement is None:
                    continue
                if normalize(earlier.answer) in {"yes", "no"} or not step.evidence_texts:
                    continue
                if is_unknown(earlier.answer) or is_unknown(step.answer):
                    continue  # nothing to reconcile: an unanswered step is not a contradiction
                if not grounded_in(earlier.answer, step.evidence_texts):
                    reason = (f"step {step.index + 1} asks about {earlier.answer!r} (answer {k + 1}) "
                              f"but none of its passages mention it")
                    found.append(Escalation((earlier.statement, step.statement), reason, "bridge"))
        return found

    def assemble(self, question: str, steps: Sequence[StepResult]) -> str:
        """The final short answer.

        A chain (every step feeds the last one) is answered by its last step, as is a
        single step; only comparisons and other joins need the model to combine facts.
        """
        yes_no = is_yes_no_question(question)
        opts = None if yes_no else options(question)
        if not yes_no and is_chain(steps):
            if opts is None or matching_option(steps[-1].answer, opts):
                return steps[-1].answer
            # an "A or B?" question whose chain ended on neither option: decide below
        answers, deps = [s.answer for s in steps], [_local_deps(s, steps) for s in steps]
        if yes_no:
            decided = both_yes(question, answers) or same_answer(question, [s.question for s in steps], answers, deps)
        else:
            decided = compare(question, [s.question for s in steps], answers, deps)
        if decided is not None:
            return decided
        if opts is not None:
            for step in reversed(steps):
                option = matching_option(step.answer, opts)
                if option is not None:
                    return option
        facts = "\n".join(f"{s.index + 1}. {s.question} -> {s.answer}" for s in steps)
        messages = render_messages(PROMPTS, "assemble", facts=facts, question=question)
        # an "A or B?" question is answered with A or B: the grammar offers nothing else
        schema = option_answer(opts) if opts is not None and len(set(opts)) == 2 else FinalAnswer
        return " ".join(self.call(AGENT, messages, schema, max_tokens=40).value.answer.split())
