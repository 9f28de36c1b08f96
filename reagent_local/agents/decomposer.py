"""Question-Decomposer (A_Q): a question -> a plan of 1..4 ordered sub-questions.

The model proposes the plan; the enabled ``plan-check`` rules (reagent_local.rules.plan_rules)
then send back a plan that drops a name of the question, restates the whole question in
a step, or has a later step that names nothing and uses no earlier answer; the
``plan-reshape`` rules drop the off-topic steps of an either-or question and keep a
one-step plan verbatim. When a plan fails later (a step finds no usable answer), the
loop asks for a new plan with :meth:`QuestionDecomposer.replan`, saying what failed; a
new plan that asks what the old one asked changes nothing (:meth:`QuestionDecomposer.same_plan`).
"""

from __future__ import annotations

import json
from typing import Sequence

from ..errors import LLMOutputError
from ..core.plan import Plan, SubQuestion, plan_from
from ..rules import RuleSet
from ..rules.stages import PLAN_CHECK, PLAN_RESHAPE
from ..runtime.llm import Message
from ..runtime.prompts import render_messages
from . import PROMPTS, Caller
from .schemas import Decomposition

AGENT = "decomposer"


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
        steps = self.rules.fold(PLAN_RESHAPE, question, steps,
                                detail=lambda before, after: f"{len(before)} -> {len(after)} steps")
        if not steps:
            return Plan.whole(question, attempt=attempt, reason=reason)
        return Plan(tuple(steps), attempt=attempt, reason=reason)

    def _propose(self, messages: list[Message]) -> list[SubQuestion]:
        return plan_from(self.call(AGENT, messages, Decomposition, max_tokens=220).value.subquestions, self.max_steps)

    def _checked(self, question: str, messages: list[Message]) -> list[SubQuestion]:
        """The model's plan; one that drops a name of the question or restates it in a step is sent back once."""
        steps = self._propose(messages)
        problem = self.rules.first(PLAN_CHECK, question, steps, detail=lambda found: found.what) if steps else None
        if problem is None:
            return steps
        rule, found = problem.rule, problem.value
        previous = json.dumps([s.text for s in steps], ensure_ascii=False)
        retry = (render_messages(PROMPTS, "decompose_retry", question=question, missing=found.what, previous=previous)
                 if found.lost == "names" else
                 render_messages(PROMPTS, "replan", question=question, failure=found.what, previous=previous))
        steps = self._propose(retry)
        if self.rules.first(PLAN_CHECK, question, steps, record=False):
            self.rules.fire(rule, detail="the second plan failed the same way: the question is kept whole")
            return []
        return steps

    @staticmethod
    def same_plan(new: Sequence[SubQuestion], old: Sequence[tuple[str, str]]) -> bool:
        """The new plan asks what the old one asked, step for step, written with "#1" or with the answer found
        for it ("Where was #1 born?" again as "Where was Mara Lind born?"): solving it would repeat every call.
        ``old``: each old step's text and its question as asked (its earlier answers substituted)."""
        return len(new) == len(old) and all(step.text in asked for step, asked in zip(new, old))
