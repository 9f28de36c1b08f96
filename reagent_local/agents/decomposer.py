"""Question-Decomposer (A_Q): a question -> a plan of 1..4 ordered sub-questions.

The model proposes the plan; the enabled ``plan-check`` rules (reagent_local.rules.plan_rules)
then send back a plan that restates the whole question in a step, or has a later step that
names nothing and uses no earlier answer; the ``plan-reshape`` rules drop the off-topic steps
of an either-or question and keep a one-step plan verbatim.
"""

from __future__ import annotations

import json

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

    def _finish(self, question: str, messages: list[Message]) -> Plan:
        try:
            steps = self._checked(question, messages)
        except LLMOutputError as exc:
            return Plan.whole(question, error=str(exc).splitlines()[0], raw=exc.raw)
        steps = self.rules.fold(PLAN_RESHAPE, question, steps,
                                detail=lambda before, after: f"{len(before)} -> {len(after)} steps")
        if not steps:
            return Plan.whole(question)
        return Plan(tuple(steps))

    def _propose(self, messages: list[Message]) -> list[SubQuestion]:
        return plan_from(self.call(AGENT, messages, Decomposition, max_tokens=220).value.subquestions, self.max_steps)

    def _checked(self, question: str, messages: list[Message]) -> list[SubQuestion]:
        """The model's plan; one that a plan-check rule objects to is sent back once (the replan prompt says why)."""
        steps = self._propose(messages)
        problem = self.rules.first(PLAN_CHECK, question, steps, detail=lambda found: found.what) if steps else None
        if problem is None:
            return steps
        rule, found = problem.rule, problem.value
        previous = json.dumps([s.text for s in steps], ensure_ascii=False)
        steps = self._propose(render_messages(PROMPTS, "replan", question=question, failure=found.what,
                                              previous=previous))
        if self.rules.first(PLAN_CHECK, question, steps, record=False):
            self.rules.fire(rule, detail="the second plan failed the same way: the question is kept whole")
            return []
        return steps
