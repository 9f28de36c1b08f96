"""IRCoT-style interleaved retrieval and chain of thought (Trivedi et al., 2023), on a budget.

Retrieve top-k for the question; then, turn by turn, the model writes one reasoning
step and, once it can, the answer. A step without an answer becomes the next search
query and its new passages are appended after the old ones (so llama.cpp reuses the
cached prompt prefix). The number of turns is ``pipeline.max_retrieval_rounds``; the
last turn must answer. The passages it cites are all the passages it was shown.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..errors import LLMOutputError
from ..prompts import render_messages
from ..retrieval.passages import Passage
from .baselines import PROMPTS
from .methods import CallTally, MethodContext, MethodResult, error_text, format_passages, retrieve

STEP_TOKENS = 160  # a <= 200-character thought and a <= 80-character answer
CONTINUE = "Write the next step. Give the answer only if the question is now answered; otherwise leave it empty."
FINISH = "This is the last step: write it and give your best answer (never empty)."


class ReasoningStep(BaseModel):
    """One reasoning step, with the answer once it is known."""

    thought: str = Field(max_length=200)
    answer: str = Field(max_length=80)


class FinalStep(BaseModel):
    """The last reasoning step, which must carry an answer."""

    thought: str = Field(max_length=200)
    answer: str = Field(min_length=1, max_length=80)


class IRCoT:
    """Interleave one reasoning step and one retrieval until the model answers."""

    name = "ircot"

    def __init__(self, ctx: MethodContext) -> None:
        self.ctx = ctx

    def _add(self, passages: list[Passage], new: list[Passage]) -> None:
        seen = {(p.id, p.title, p.text) for p in passages}
        passages.extend(p for p in new if (p.id, p.title, p.text) not in seen)

    def answer(self, question: str) -> MethodResult:
        """Up to ``max_retrieval_rounds`` steps; each unanswered step retrieves once more."""
        tally = CallTally()
        turns = max(1, self.ctx.config.pipeline.max_retrieval_rounds)
        passages: list[Passage] = []
        self._add(passages, retrieve(self.ctx, question))
        steps: list[str] = []
        for turn in range(turns):
            last = turn == turns - 1
            messages = render_messages(
                PROMPTS,
                "ircot",
                question=question,
                passages=format_passages(passages, self.ctx.config.retrieval.passage_chars),
                steps="\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)) or "(none yet)",
                instruction=FINISH if last else CONTINUE,
            )
            try:
                result = self.ctx.llm.generate_json(messages, FinalStep if last else ReasoningStep, max_tokens=STEP_TOKENS)
            except LLMOutputError as exc:
                tally.calls += 1
                return tally.result("", passages, error=error_text(exc))
            tally.add(result.call)
            step = result.value
            steps.append(" ".join(step.thought.split()))
            if step.answer.strip() or last:
                return tally.result(step.answer.strip(), passages)
            self._add(passages, retrieve(self.ctx, step.thought))
        raise AssertionError("unreachable: the last turn always returns")
