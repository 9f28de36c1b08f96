"""A plan: the ordered sub-questions of a question and which earlier answers each one uses.

Later sub-questions refer to earlier answers as ``#1``, ``#2`` (1-based in the text,
0-based in ``depends_on``). The decomposer makes plans; the loop, the assembler and the
question-shape rules read them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, Sequence

REFERENCE = re.compile(r"#(\d+)")


@dataclass(frozen=True)
class SubQuestion:
    """One step of the plan; ``depends_on`` lists earlier steps it refers to (0-based)."""

    index: int
    text: str
    depends_on: tuple[int, ...]

    def resolve(self, answers: dict[int, str]) -> str:
        """The sub-question with '#k' replaced by the answer of step k (1-based in text)."""
        return REFERENCE.sub(lambda m: answers.get(int(m.group(1)) - 1, m.group(0)), self.text)


def plan_from(subquestions: Sequence[str], max_steps: int) -> list[SubQuestion]:
    """Clean a model's list: trim, drop empties and duplicates, keep references backward."""
    plan: list[SubQuestion] = []
    seen: set[str] = set()
    for text in subquestions:
        text = " ".join(text.split())
        if not text or text.lower() in seen or len(plan) >= max_steps:
            continue
        index = len(plan)
        # a reference to itself or a later step cannot be resolved: keep the text, drop the link
        refs = tuple(sorted({int(r) - 1 for r in REFERENCE.findall(text) if 0 < int(r) <= index}))
        plan.append(SubQuestion(index=index, text=text, depends_on=refs))
        seen.add(text.lower())
    return plan


def dependents(plan: Sequence[SubQuestion], index: int) -> set[int]:
    """A step and every step that (transitively) uses its answer."""
    affected = {index}
    changed = True
    while changed:
        changed = False
        for sub in plan:
            if sub.index not in affected and affected & set(sub.depends_on):
                affected.add(sub.index)
                changed = True
    return affected


class StepLike(Protocol):
    """What plan-shape helpers read of an answered step (agents' StepResult fits)."""

    index: int
    question: str
    answer: str
    depends_on: tuple[int, ...]


def is_chain(steps: Sequence[StepLike]) -> bool:
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


def local_dependencies(steps: Sequence[StepLike]) -> list[tuple[int, ...]]:
    """Each step's dependencies as positions in ``steps`` (steps may be a subset of the plan)."""
    position = {s.index: i for i, s in enumerate(steps)}
    return [tuple(position[k] for k in s.depends_on if k in position) for s in steps]


@dataclass(frozen=True)
class Plan:
    """The decomposer's decision: the steps to solve; ``error`` when the model's plan was unusable."""

    steps: tuple[SubQuestion, ...]
    error: str = ""
    raw: str = ""

    @classmethod
    def whole(cls, question: str, error: str = "", raw: str = "") -> "Plan":
        """The question itself as the only step."""
        return cls((SubQuestion(0, question, ()),), error, raw)
