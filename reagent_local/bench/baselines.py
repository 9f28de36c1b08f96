"""The two one-call baselines: closed-book (the model alone) and single-step RAG."""

from __future__ import annotations

from typing import Sequence

from pydantic import BaseModel, Field

from ..errors import LLMOutputError
from ..runtime.prompts import render_messages
from ..retrieval.passages import Passage
from .methods import CallTally, MethodContext, MethodResult, error_text, format_passages, retrieve

PROMPTS = "reagent_local.bench"
ANSWER_TOKENS = 96  # {"answer": <= 80 characters} fits in well under this


class SpanAnswer(BaseModel):
    """A short answer span."""

    answer: str = Field(max_length=80)


class ClosedBook:
    """The model answers from its own knowledge, with no retrieval."""

    name = "closed-book"

    def __init__(self, ctx: MethodContext) -> None:
        self.ctx = ctx

    def answer(self, question: str) -> MethodResult:
        """One call, no passages."""
        tally = CallTally()
        messages = render_messages(PROMPTS, "closedbook", question=question)
        try:
            result = self.ctx.llm.generate_json(messages, SpanAnswer, max_tokens=ANSWER_TOKENS)
        except LLMOutputError as exc:
            tally.calls += 1
            return tally.result("", error=error_text(exc))
        tally.add(result.call)
        return tally.result(result.value.answer.strip())


class SingleStepRAG:
    """Retrieve the top-k passages for the question once, then answer from them in one call.

    The passages it cites are the ones it was given.
    """

    name = "rag"

    def __init__(self, ctx: MethodContext) -> None:
        self.ctx = ctx

    def answer(self, question: str) -> MethodResult:
        """One retrieval, one call."""
        return read_passages(self.ctx, question, retrieve(self.ctx, question), CallTally())


def read_passages(ctx: MethodContext, question: str, passages: Sequence[Passage], tally: CallTally) -> MethodResult:
    """Answer from the given passages in one call (the RAG reader, also IRCoT's)."""
    text = format_passages(passages, ctx.config.retrieval.passage_chars)
    messages = render_messages(PROMPTS, "rag", question=question, passages=text)
    try:
        result = ctx.llm.generate_json(messages, SpanAnswer, max_tokens=ANSWER_TOKENS)
    except LLMOutputError as exc:
        tally.calls += 1
        return tally.result("", passages, error=error_text(exc))
    tally.add(result.call)
    return tally.result(result.value.answer.strip(), passages)
