"""Rewriter: a follow-up question made standalone from the conversation before the agents see it.

"and where was she born?" means nothing to the decomposer; the rewriter, given the earlier
turns (each question, its answer and the titles of the passages it cited), writes "Where was
Mara Lind born?". It runs before the run starts, from the entry points that hold a
conversation (``reagent chat``, the page, the OpenAI endpoint, ``ReAgent.ask(history=...)``),
and only when there is an earlier turn: a one-shot question costs no extra call. Its output is
grammar-constrained JSON like every role's; an unusable output keeps the question as asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from pydantic import BaseModel, Field

from ..errors import LLMOutputError
from ..runtime.llm import LLM, LLMCall
from ..runtime.prompts import render_messages
from ..text import normalize
from . import PROMPTS

AGENT = "decomposer"  # the rewrite is the first thing the decomposer does with a follow-up
MAX_TURNS = 4  # earlier turns shown to the model, the latest last
TITLES_PER_TURN = 3
ANSWER_CHARS = 200


class Rewritten(BaseModel):
    """Rewriter output: the question as it reads alone."""

    question: str = Field(min_length=3, max_length=300)


@dataclass(frozen=True)
class Turn:
    """One earlier turn of a conversation: what was asked, what was answered, the titles it cited."""

    question: str
    answer: str
    titles: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (what the page and `/api/ask` send as ``history``)."""
        return {"question": self.question, "answer": self.answer, "titles": list(self.titles)}

    @classmethod
    def from_dict(cls, data: Any) -> "Turn":
        """A turn from ``to_dict`` (or the page's JSON); ValueError when it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("question"), str):
            raise ValueError("a turn is an object with a 'question' string, an 'answer' string and 'titles'")
        titles = data.get("titles") or ()
        if not isinstance(titles, (list, tuple)) or not all(isinstance(t, str) for t in titles):
            raise ValueError("a turn's 'titles' is a list of strings")
        answer = data.get("answer")
        return cls(data["question"], answer if isinstance(answer, str) else "", tuple(titles))


@dataclass(frozen=True)
class Rewrite:
    """The question as asked, as the agents will read it, and the call that rewrote it (None: no call)."""

    question: str
    standalone: str
    call: LLMCall | None = None
    error: str = ""  # the model's output was unusable: the question stands as asked

    @property
    def changed(self) -> bool:
        """Whether the agents read another question than the one asked."""
        return normalize(self.standalone) != normalize(self.question)


def history_text(turns: Sequence[Turn]) -> str:
    """The earlier turns as the prompt shows them, oldest first, one line each."""
    lines = []
    for turn in list(turns)[-MAX_TURNS:]:
        line = f"Q: {' '.join(turn.question.split())} A: {' '.join(turn.answer.split())[:ANSWER_CHARS] or 'unknown'}"
        titles = [t for t in dict.fromkeys(turn.titles) if t][:TITLES_PER_TURN]
        if titles:
            line += f" (read in: {', '.join(titles)})"
        lines.append(line)
    return "\n".join(lines)


def rewrite(llm: LLM, question: str, turns: Sequence[Turn], *, max_tokens: int = 120,
            temperature: float | None = None, seed: int | None = None) -> Rewrite:
    """``question`` made standalone from the earlier ``turns``; without turns, the question itself and no call."""
    if not turns:
        return Rewrite(question, question)
    messages = render_messages(PROMPTS, "rewrite", history=history_text(turns), question=" ".join(question.split()))
    try:
        result = llm.generate_json(messages, Rewritten, max_tokens=max_tokens, temperature=temperature, seed=seed)
    except LLMOutputError as exc:
        return Rewrite(question, question, error=str(exc).splitlines()[0])
    standalone = " ".join(result.value.question.split())
    return Rewrite(question, standalone or question, call=result.call)
