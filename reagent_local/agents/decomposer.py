"""Question-Decomposer (A_Q): a question -> a plan of 1..4 ordered sub-questions.

The model proposes the plan; the enabled ``plan`` rules (reagent_local.rules.plan_rules)
then send back a plan that drops a name of the question, restates the whole question in
a step, or has a later step that names nothing and uses no earlier answer; they drop the
off-topic steps of an either-or question and keep a one-step plan verbatim. When a plan
fails later (a step finds no usable answer), the loop asks for a new plan with
:meth:`QuestionDecomposer.replan`, saying what failed.
"""

from __future__ import annotations

import json
from typing import Sequence

from ..errors import LLMOutputError
from ..runtime.llm import Message
from ..reasoning.plan import Plan, SubQuestion, plan_from
from ..runtime.prompts import render_messages
from ..rules import RuleSet
from ..rules.plan_rules import missing_parts, restated_steps, unanchored_steps
from . import PROMPTS, Caller
from .schemas import Decomposition

AGENT = "decomposer"
KEEP_NAMES = "keep-named-parts"
SPLIT = "split-the-question"
ANCHOR = "anchor-each-step"
_SENDS_BACK = (KEEP_NAMES, SPLIT, ANCHOR)  # rules that ask the model again rather than reshape the plan


class QuestionDecomposer:
    """Asks the model for a plan; the question stays whole when no usable plan comes back."""

    def __init__(self, call: Caller, rules: RuleSet, max_steps: int = 4) -> None:
        self.call = call
        self.rules = rules
        self.max_steps = max_steps

    def plan(self, question: str) -> Plan:
        """The plan for a question (at least one step: the question itself when nothing better comes back)."""
        return self._finish(question, render_messages(PROMPTS, "decompose", question=question))

    def replan(self, question: str, previous: Sequence[SubQuestion], failure: str) -> Plan:
        """A new plan after ``previous`` failed (``failure`` says how); the question whole if none is better."""
        messages = render_messages(PROMPTS, "replan", question=question, failure=failure,
                                   previous=json.dumps([s.text for s in previous], ensure_ascii=False))
        return self._finish(question, messages, attempt=2, reason=failure)

    def _finish(self, question: str, messages: list[Message], attempt: int = 1, reason: str = "") -> Plan:
        try:
            steps = self._checked(question, messages)
        except LLMOutputError as exc:
            return Plan.whole(question, error=str(exc).splitlines()[0], raw=exc.raw, attempt=attempt, reason=reason)
        for rule in self.rules.active("plan"):
            if rule.name in _SENDS_BACK:
                continue
            reshaped = rule.fn(question, steps)
            if reshaped is not None:
                self.rules.fire(rule.name, detail=f"{len(steps)} -> {len(reshaped)} steps")
                steps = reshaped
        if not steps:
            return Plan.whole(question, attempt=attempt, reason=reason)
        return Plan(tuple(steps), attempt=attempt, reason=reason)

    def _propose(self, messages: list[Message]) -> list[SubQuestion]:
        return plan_from(self.call(AGENT, messages, Decomposition, max_tokens=220).value.subquestions, self.max_steps)

    def _checked(self, question: str, messages: list[Message]) -> list[SubQuestion]:
        """The model's plan; one that drops a name of the question or restates it in a step is sent back once."""
        steps = self._propose(messages)
        problem = self._problem(question, steps)
        if not steps or not problem:
            return steps
        rule, what = problem
        self.rules.fire(rule, detail=what)
        previous = json.dumps([s.text for s in steps], ensure_ascii=False)
        retry = (render_messages(PROMPTS, "decompose_retry", question=question, missing=what, previous=previous)
                 if rule == KEEP_NAMES else
                 render_messages(PROMPTS, "replan", question=question, failure=what, previous=previous))
        steps = self._propose(retry)
        if self._problem(question, steps):
            self.rules.fire(rule, detail="the second plan failed the same way: the question is kept whole")
            return []
        return steps

    def _problem(self, question: str, steps: list[SubQuestion]) -> tuple[str, str] | None:
        """(rule, what is wrong) for a plan the model must write again, or None."""
        missing = missing_parts(question, steps) if self.rules.on(KEEP_NAMES) else []
        if missing:
            return KEEP_NAMES, ", ".join(missing)
        restated = restated_steps(question, steps) if self.rules.on(SPLIT) else []
        if restated:
            numbers = ", ".join(str(i + 1) for i in restated)
            return SPLIT, f"step(s) {numbers} repeat the whole question instead of asking one simple fact"
        unanchored = unanchored_steps(question, steps) if self.rules.on(ANCHOR) else []
        if unanchored:
            numbers = ", ".join(str(i + 1) for i in unanchored)
            return ANCHOR, (f"step(s) {numbers} name nothing: name the thing the step asks about, "
                            f"or write #1, #2 for the answer of an earlier step")
        return None
