"""Plan rules: what the decomposer does with the model's plan before any step runs.

``plan-check`` rules send a plan back to be written again (once; a plan that fails the
same way again leaves the question whole); ``plan-reshape`` rules reshape a plan that
passed. The checks' findings are plain functions too (``restated_steps``, ``unanchored_steps``),
so tests and tools can ask what a rule would object to.
"""

from __future__ import annotations

import re
from typing import Sequence

from ..core.plan import REFERENCE, SubQuestion, plan_from
from .registry import rule
from .shapes import either_or_options, mentions
from .stages import SendBack

_NAME = re.compile(r"\b(?:[A-Z][\w'.-]*|\d[\d,.]*)(?:\s+(?:of|the|de|von|van|[A-Z][\w'.-]*|\d[\d,.]*))*")
_QUOTED = re.compile(r'"([^"]+)"')
_SKIP = {"What", "Which", "Who", "Whom", "Whose", "When", "Where", "Why", "How", "In", "On", "At", "The", "A", "An",
         "Is", "Are", "Was", "Were", "Do", "Does", "Did", "Of", "For", "From", "By", "As", "To", "And", "Or"}
_LINKS = {"of", "the", "de", "von", "van"}


def named_parts(question: str) -> list[str]:
    """Names, numbers and quoted titles of a question (what a step of a plan is anchored by)."""
    parts = set(_QUOTED.findall(question))
    for match in _NAME.finditer(question):
        words = match.group(0).split()
        while words and words[0] in _SKIP:
            words = words[1:]
        while words and words[-1].lower() in _LINKS:
            words = words[:-1]
        if words:
            parts.add(" ".join(words).strip(".,"))
    return sorted(p for p in parts if p)


@rule("either-or-steps", "plan-reshape")
def drop_off_topic_steps(question: str, plan: list[SubQuestion]) -> list[SubQuestion] | None:
    """In an 'A or B?' question, independent steps that name neither option are dropped.

    Small models end such plans with a step that compares ("Which group has more
    members?"); no passage answers it and the comparison is made afterwards anyway.
    Steps that use an earlier answer (#k) are kept; so is the plan when fewer than two
    steps would remain. References are renumbered. None when nothing is dropped.
    """
    opts = either_or_options(question)
    if opts is None:
        return None
    keep = [s for s in plan if s.depends_on or any(mentions(o, s.text) for o in opts)]
    kept = {s.index for s in keep}
    if len(keep) == len(plan) or len(keep) < 2 or any(k not in kept for s in keep for k in s.depends_on):
        return None
    position = {s.index: i for i, s in enumerate(keep)}
    texts = [REFERENCE.sub(lambda m: f"#{position[int(m.group(1)) - 1] + 1}" if int(m.group(1)) - 1 in position
                           else m.group(0), s.text) for s in keep]
    return plan_from(texts, len(texts))


@rule("single-step-verbatim", "plan-reshape")
def verbatim_single_step(question: str, plan: list[SubQuestion]) -> list[SubQuestion] | None:
    """A one-step plan is the question itself: a paraphrase can only lose something."""
    if len(plan) == 1 and plan[0].text != question:
        return [SubQuestion(0, question, ())]
    return None


_QUESTION_WORDS = {"what", "which", "who", "whom", "whose", "when", "where", "why", "how", "is", "are", "was",
                   "were", "do", "does", "did", "the", "a", "an", "of", "in", "on", "at", "to", "for", "by", "and",
                   "or", "that", "this", "with", "from", "as"}


def _content_words(text: str) -> set[str]:
    return {w.strip("?,.!'\"()").lower() for w in text.split()} - _QUESTION_WORDS - {""}


def restated_steps(question: str, plan: Sequence[SubQuestion]) -> list[int]:
    """The steps (0-based) of a plan of several that restate the whole question."""
    if len(plan) < 2:
        return []
    wanted = _content_words(question)
    if len(wanted) < 4:
        return []
    spare = 1 if len(wanted) >= 8 else 0  # a long question restated may lose a word
    return [s.index for s in plan if not s.depends_on and len(wanted - _content_words(s.text)) <= spare]


def unanchored_steps(question: str, plan: Sequence[SubQuestion]) -> list[int]:
    """The later steps (0-based) that name nothing and use no earlier answer.

    "Where was the performer born?" after "Who performed the song Quiet Shore?" has lost its
    "#1": it is searched on its own words and answered from whatever passage comes up. The
    first step may name nothing with a capital ("Who led the tallow guild?"): it starts from
    the question's own words. An 'A or B?' question is left to ``either-or-steps`` (which
    drops its comparing step), and a question that names nothing itself is left alone.
    """
    if len(plan) < 2 or either_or_options(question) is not None or not named_parts(question):
        return []
    return [s.index for s in plan[1:] if not s.depends_on and not named_parts(s.text)]


@rule("split-the-question", "plan-check")
def split_the_question(question: str, plan: Sequence[SubQuestion]) -> SendBack | None:
    """A plan of several steps in which a step restates the whole question is sent back to be split."""
    restated = restated_steps(question, plan)
    if not restated:
        return None
    numbers = ", ".join(str(i + 1) for i in restated)
    return SendBack(f"step(s) {numbers} repeat the whole question instead of asking one simple fact")


@rule("anchor-each-step", "plan-check")
def anchor_each_step(question: str, plan: Sequence[SubQuestion]) -> SendBack | None:
    """A later step of a plan that names nothing and uses no earlier answer is sent back."""
    unanchored = unanchored_steps(question, plan)
    if not unanchored:
        return None
    numbers = ", ".join(str(i + 1) for i in unanchored)
    return SendBack(f"step(s) {numbers} name nothing: name the thing the step asks about, "
                    f"or write #1, #2 for the answer of an earlier step")
