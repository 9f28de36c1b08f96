"""The two one-call methods (the simplest baselines): closed-book (the model alone) and single-step RAG."""

from __future__ import annotations

from typing import Sequence

from pydantic import BaseModel, Field

from ..core.evidence import is_unknown, supported
from ..agents.router import Reading
from ..errors import LLMOutputError
from ..rules import RuleSet, answer_type_problem
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
    """Answer from the given passages in one call (the RAG reader, also IRCoT's); the result carries what the
    ``adaptive`` router reads of the answer (its ``reading``)."""
    text = format_passages(passages, ctx.config.retrieval.passage_chars)
    messages = render_messages(PROMPTS, "rag", question=question, passages=text)
    try:
        result = ctx.llm.generate_json(messages, SpanAnswer, max_tokens=ANSWER_TOKENS)
    except LLMOutputError as exc:
        tally.calls += 1
        out = tally.result("", passages, error=error_text(exc))
        out.reading = reading_of(ctx, question, "", passages, None).to_json()
        return out
    tally.add(result.call)
    answer = result.value.answer.strip()
    out = tally.result(answer, passages)
    out.reading = reading_of(ctx, question, answer, passages, result.call.span_probability(answer)).to_json()
    return out


def reading_of(ctx: MethodContext, question: str, answer: str, passages: Sequence[Passage],
               probability: float | None) -> Reading:
    """What a router reads of a baseline's answer: the model's confidence, grounding, type fit, passages."""
    if is_unknown(answer) or not answer:
        return Reading(answer or "unknown", 0.0, False, False, len(passages), unknown=True)
    grounded = supported(answer, passages)
    fits = answer_type_problem(question, answer, RuleSet(ctx.config.pipeline.rules)) is None
    return Reading(answer, probability if probability is not None else 0.5, grounded, fits, len(passages))
