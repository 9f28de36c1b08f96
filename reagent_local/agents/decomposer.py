"""Question-Decomposer (A_Q): a question -> a plan of 1..4 ordered sub-questions.

The model proposes the plan; the enabled ``plan`` rules (reagent_local.rules.plan_rules)
then send back a plan that drops a name of the question, drop the off-topic steps of
an either-or question, and keep a one-step plan verbatim.
"""

from __future__ import annotations

import json

from ..errors import LLMOutputError
from ..plan import Plan, plan_from
from ..prompts import render_messages
from ..rules import RuleSet
from ..rules.plan_rules import missing_parts
from . import PROMPTS, Caller
from .schemas import Decomposition

AGENT = "decomposer"
KEEP_NAMES = "keep-named-parts"


class QuestionDecomposer:
    """Asks the model for a plan; the question stays whole when no usable plan comes back."""

    def __init__(self, call: Caller, rules: RuleSet, max_steps: int = 4) -> None:
        self.call = call
        self.rules = rules
        self.max_steps = max_steps

    def plan(self, question: str) -> Plan:
        """The plan for a question (at least one step: the question itself when nothing better comes back)."""
        try:
            steps = self._propose(question)
        except LLMOutputError as exc:
            return Plan.whole(question, error=str(exc).splitlines()[0], raw=exc.raw)
        for rule in self.rules.active("plan"):
            if rule.name == KEEP_NAMES:
                continue
            reshaped = rule.fn(question, steps)
            if reshaped is not None:
                self.rules.fire(rule.name, detail=f"{len(steps)} -> {len(reshaped)} steps")
                steps = reshaped
        return Plan(tuple(steps)) if steps else Plan.whole(question)

    def _propose(self, question: str) -> list:
        """The model's plan; one that drops a name of the question is sent back once (rule keep-named-parts)."""
        messages = render_messages(PROMPTS, "decompose", question=question)
        steps = plan_from(self.call(AGENT, messages, Decomposition, max_tokens=220).value.subquestions, self.max_steps)
        missing = missing_parts(question, steps) if self.rules.on(KEEP_NAMES) else []
        if not steps or not missing:
            return steps
        self.rules.fire(KEEP_NAMES, detail="left out " + ", ".join(missing))
        messages = render_messages(PROMPTS, "decompose_retry", question=question,
                                   previous=json.dumps([s.text for s in steps], ensure_ascii=False),
                                   missing=", ".join(missing))
        steps = plan_from(self.call(AGENT, messages, Decomposition, max_tokens=220).value.subquestions, self.max_steps)
        if missing_parts(question, steps):
            self.rules.fire(KEEP_NAMES, detail="the second plan left them out too: the question is kept whole")
            return []
        return steps
