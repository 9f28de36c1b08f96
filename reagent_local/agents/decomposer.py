"""Question-Decomposer (A_Q): a question -> 1..4 ordered sub-questions."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..prompts import render_messages
from . import PROMPTS, Caller
from .compare import options
from .evidence import normalize
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


_NAME = re.compile(r"\b(?:[A-Z][\w'.-]*|\d[\d,.]*)(?:\s+(?:of|the|de|von|van|[A-Z][\w'.-]*|\d[\d,.]*))*")
_QUOTED = re.compile(r'"([^"]+)"')
_SKIP = {"What", "Which", "Who", "Whom", "Whose", "When", "Where", "Why", "How", "In", "On", "At", "The", "A", "An",
         "Is", "Are", "Was", "Were", "Do", "Does", "Did", "Of", "For", "From", "By", "As", "To", "And", "Or"}


def named_parts(question: str) -> list[str]:
    """Names, numbers and quoted titles of a question (what a plan must not drop)."""
    parts = set(_QUOTED.findall(question))
    for match in _NAME.finditer(question):
        words = match.group(0).split()
        while words and words[0] in _SKIP:
            words = words[1:]
        while words and words[-1].lower() in {"of", "the", "de", "von", "van"}:
            words = words[:-1]
        if words:
            parts.add(" ".join(words).strip(".,"))
    return sorted(p for p in parts if p)


def missing_parts(question: str, plan: list[SubQuestion]) -> list[str]:
    """Named parts of the question that no sub-question mentions (case-insensitive, word-wise)."""
    text = " ".join(s.text for s in plan).lower()
    missing = []
    for part in named_parts(question):
        words = [w.lower().strip(".,") for w in part.split()]
        if not all(w in text for w in words):
            missing.append(part)
    return missing


def _mentions(option: str, text: str) -> bool:
    """Most of the option's words are in the text (a model may drop "(film)" or an initial)."""
    wanted, words = normalize(option).split(), set(normalize(text).split())
    return bool(wanted) and sum(w in words for w in wanted) * 2 >= len(wanted)


def drop_off_topic_steps(question: str, plan: list[SubQuestion]) -> list[SubQuestion]:
    """For an "A or B?" question, drop independent steps that name neither option.

    Small models end such plans with a step that compares ("Which group has more
    members?"); no passage answers it and the comparison is made afterwards anyway.
    Steps that use an earlier answer (#k) are kept; so is the plan when fewer than two
    steps would remain. References are renumbered.
    """
    opts = options(question)
    if opts is None:
        return plan
    keep = [s for s in plan if s.depends_on or any(_mentions(o, s.text) for o in opts)]
    kept = {s.index for s in keep}
    if len(keep) == len(plan) or len(keep) < 2 or any(k not in kept for s in keep for k in s.depends_on):
        return plan
    position = {s.index: i for i, s in enumerate(keep)}
    texts = [_REF.sub(lambda m: f"#{position[int(m.group(1)) - 1] + 1}" if int(m.group(1)) - 1 in position
                      else m.group(0), s.text) for s in keep]
    return plan_from(texts, len(texts))


class QuestionDecomposer:
    """Asks the model for a plan; a simple question stays whole.

    A plan that drops a name or number of the question is sent back once with what
    it left out; if the second plan drops it too, the question is kept whole, which
    loses nothing (the single step sees the whole question).
    """

    def __init__(self, call: Caller, max_steps: int = 4) -> None:
        self.call = call
        self.max_steps = max_steps

    def decompose(self, question: str) -> list[SubQuestion]:
        """Sub-questions in order (at least one: the question itself when the plan is empty)."""
        messages = render_messages(PROMPTS, "decompose", question=question)
        result = self.call(AGENT, messages, Decomposition, max_tokens=220)
        plan = plan_from(result.value.subquestions, self.max_steps)
        missing = missing_parts(question, plan)
        if plan and missing:
            messages = render_messages(PROMPTS, "decompose_retry", question=question,
                                       previous=json.dumps([s.text for s in plan], ensure_ascii=False),
                                       missing=", ".join(missing))
            plan = plan_from(self.call(AGENT, messages, Decomposition, max_tokens=220).value.subquestions,
                             self.max_steps)
            if missing_parts(question, plan):
                plan = []
        plan = drop_off_topic_steps(question, plan)
        if len(plan) <= 1:
            # one step is the question itself: a paraphrase can only lose something
            return [SubQuestion(0, question, ())]
        return plan
