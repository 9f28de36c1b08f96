"""Question-Decomposer (A_Q): a question -> 1..4 ordered sub-questions."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..prompts import render_messages
from . import PROMPTS, Caller
from .schemas import Decomposition

AGENT = "decomposer"
_REF = re.compile(r"#(\d+)")


@dataclass(frozen=True)
class SubQuestion:
    """One step of the plan; ``depends_on`` lists earlier steps it refers to (0-based)."""

    index: int
    text: str
    depends_on: tuple[int, ...]

    def resolve(self, answers: dict[int, str]) -> str:
        """The sub-question with '#k' replaced by the answer of step k (1-based in text)."""
        return _REF.sub(lambda m: answers.get(int(m.group(1)) - 1, m.group(0)), self.text)


def plan_from(subquestions: list[str], max_steps: int) -> list[SubQuestion]:
    """Clean a model's list: trim, drop empties and duplicates, keep references backward."""
    plan: list[SubQuestion] = []
    seen: set[str] = set()
    for text in subquestions:
        text = " ".join(text.split())
        if not text or text.lower() in seen or len(plan) >= max_steps:
            continue
        index = len(plan)
        refs = tuple(sorted({int(r) - 1 for r in _REF.findall(text) if 0 < int(r) <= index}))
        # a reference to itself or a later step cannot be resolved: keep the text, drop the link
        plan.append(SubQuestion(index=index, text=text, depends_on=refs))
        seen.add(text.lower())
    return plan


class QuestionDecomposer:
    """Asks the model for a plan; a simple question stays whole."""

    def __init__(self, call: Caller, max_steps: int = 4) -> None:
        self.call = call
        self.max_steps = max_steps

    def decompose(self, question: str) -> list[SubQuestion]:
        """Sub-questions in order (at least one: the question itself when the plan is empty)."""
        messages = render_messages(PROMPTS, "decompose", question=question)
        result = self.call(AGENT, messages, Decomposition, max_tokens=220)
        plan = plan_from(result.value.subquestions, self.max_steps)
        return plan or [SubQuestion(0, question, ())]
