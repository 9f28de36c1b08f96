"""The answer a question gets with backtracking off, found after the run with it on, at the cost of what differs.

``ShadowRun`` wraps a ReAgent pipeline's models in ``MemoLLM``s that remember the question's
calls, and builds a second pipeline of the same class from the same configuration with
``pipeline.backtracking = "none"``, the same index, graph and log, over replaying wrappers of
the same models. When backtracking (or any conflict signal) fired, the question is answered
again by that pipeline: the calls before the paths part come from memory, only the later
ones reach the model. The answer is what a ``reagent-none`` run gives, so one run yields exact
fixed / broken counts. When nothing fired, the paths never part: the answer is the run's own,
found at no cost.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from ..config import Config
from ..errors import LLMOutputError, QuestionError
from .memo_llm import CallMemo, MemoLLM, ReplayTally
from .methods import WithoutBacktracking, error_text


def fired(answer: Any) -> bool:
    """Whether a run did anything a run without backtracking would not: a rollback, a signal, the two roads."""
    return any(int(n) > 0 for n in dict(answer.backtracks).values()) or bool(answer.signals) or bool(answer.roads)


class ShadowRun:
    """Makes ``pipeline`` remember its calls and answers its questions again with backtracking off on demand."""

    def __init__(self, pipeline: Any, config: Config) -> None:
        self.memo = CallMemo()
        models = {"": pipeline.llm, **pipeline.role_llms}
        pipeline.llm = MemoLLM(models[""], self.memo)
        pipeline.role_llms = {role: MemoLLM(model, self.memo) for role, model in pipeline.role_llms.items()}
        self.replayers = {role: MemoLLM(model, self.memo, replay=True) for role, model in models.items()}
        off = replace(config, pipeline=replace(config.pipeline, backtracking="none"))
        self.pipeline = type(pipeline)(off, llm=self.replayers[""], retriever=pipeline.retriever, log=pipeline.log,
                                       kg=pipeline.kg, role_llms={r: m for r, m in self.replayers.items() if r})

    def forget(self) -> None:
        """Drop the remembered calls (before and after each question)."""
        self.memo.clear()

    def answer(self, question: str, answer: Any) -> WithoutBacktracking:
        """The answer without backtracking to a question the pipeline just answered as ``answer``."""
        if not fired(answer):
            return WithoutBacktracking(answer=answer.answer.strip())
        for replayer in self.replayers.values():
            replayer.tally = ReplayTally()
        start = time.perf_counter()
        try:
            shadow = self.pipeline.ask(question)
            text, run_id, error = shadow.answer.strip(), shadow.run_id, None
        except (LLMOutputError, QuestionError) as exc:  # as reagent-none records it: no answer, the error
            text, run_id, error = "", None, error_text(exc)
        seconds = time.perf_counter() - start
        tallies = [r.tally for r in self.replayers.values()]
        return WithoutBacktracking(
            answer=text, calls=sum(t.calls for t in tallies), replayed=sum(t.replayed for t in tallies),
            prompt_tokens=sum(t.prompt_tokens for t in tallies),
            completion_tokens=sum(t.completion_tokens for t in tallies), seconds=seconds, run_id=run_id, error=error)
