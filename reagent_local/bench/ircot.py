"""IRCoT-style interleaved retrieval and chain of thought (Trivedi et al., 2023), on a budget.

Retrieval phase: retrieve top-k for the question; then, turn by turn, the model writes
one reasoning step. A step that reaches the answer ends the phase; any other step
becomes the next search query and its new passages are appended after the old ones
(so llama.cpp reuses the cached prompt prefix). At most ``pipeline.max_retrieval_rounds``
steps, and at most ``MAX_PASSAGES`` passages, the cap the paper uses.

Reading phase: as in the paper's "IRCoT QA", a reader answers the question from all the
collected passages (the same reader and prompt as single-step RAG), so the method
differs from RAG only in what it retrieved. The passages it cites are all it collected.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..errors import LLMOutputError
from ..runtime.prompts import render_messages
from ..retrieval.passages import Passage
from .one_call import PROMPTS, read_passages
from .methods import CallTally, MethodContext, MethodResult, format_passages, retrieve

STEP_TOKENS = 160  # a <= 200-character thought and a <= 80-character answer
MAX_PASSAGES = 15


class ReasoningStep(BaseModel):
    """One reasoning step, with the answer once the chain reaches it."""

    thought: str = Field(max_length=200)
    answer: str = Field(max_length=80)


class IRCoT:
    """Interleave one reasoning step and one retrieval until the chain answers, then read."""

    name = "ircot"

    def __init__(self, ctx: MethodContext) -> None:
        self.ctx = ctx

    def _add(self, passages: list[Passage], new: list[Passage]) -> None:
        seen = {(p.id, p.title, p.text) for p in passages}
        fresh = [p for p in new if (p.id, p.title, p.text) not in seen]
        passages.extend(fresh[: max(0, MAX_PASSAGES - len(passages))])

    def answer(self, question: str) -> MethodResult:
        """Up to ``max_retrieval_rounds`` reasoning steps, each unanswered one retrieving once more; then one read."""
        tally = CallTally()
        passages: list[Passage] = []
        self._add(passages, retrieve(self.ctx, question))
        steps: list[str] = []
        for _ in range(max(1, self.ctx.config.pipeline.max_retrieval_rounds)):
            messages = render_messages(
                PROMPTS,
                "ircot",
                question=question,
                passages=format_passages(passages, self.ctx.config.retrieval.passage_chars),
                steps="\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)) or "(none yet)",
            )
            try:
                result = self.ctx.llm.generate_json(messages, ReasoningStep, max_tokens=STEP_TOKENS)
            except LLMOutputError:
                tally.calls += 1  # a broken step ends the chain; the reader still gets what was found
                break
            tally.add(result.call)
            step = result.value
            steps.append(" ".join(step.thought.split()))
            if step.answer.strip() or len(passages) >= MAX_PASSAGES:
                break
            self._add(passages, retrieve(self.ctx, step.thought))
        result = read_passages(self.ctx, question, passages, tally)
        if result.reading is not None:
            result.reading["steps"] = len(steps)
        return result
