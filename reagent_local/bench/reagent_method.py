"""ReAgent as a benchmark method: one ``Pipeline`` per backtracking setting, sharing the run's log."""

from __future__ import annotations

from dataclasses import replace

from ..errors import BudgetExceededError, LLMOutputError, QuestionError
from .methods import MethodContext, MethodResult, error_text

BACKTRACKING = ("none", "local", "global", "both")


class ReagentMethod:
    """Answers with ``Pipeline.ask`` under one backtracking mode (``reagent-<mode>``)."""

    def __init__(self, ctx: MethodContext, backtracking: str) -> None:
        if backtracking not in BACKTRACKING:
            raise ValueError(f"backtracking must be one of {BACKTRACKING}, got {backtracking!r}")
        from ..pipeline import Pipeline  # deferred: the baselines do not need it

        self.name = f"reagent-{backtracking}"
        config = replace(ctx.config, pipeline=replace(ctx.config.pipeline, backtracking=backtracking))
        self.pipeline = Pipeline(config, llm=ctx.llm, retriever=ctx.retriever, log=ctx.event_log())

    def answer(self, question: str) -> MethodResult:
        """Run the pipeline; a model or budget failure becomes an error record, not a crash."""
        try:
            answer = self.pipeline.ask(question)
        except (LLMOutputError, BudgetExceededError, QuestionError) as exc:
            return MethodResult(prediction="", error=error_text(exc))
        backtracks = dict(answer.backtracks)
        return MethodResult(
            prediction=answer.answer.strip(),
            cited=list(answer.passages),
            llm_calls=answer.llm_calls,
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            backtracks={"local": int(backtracks.get("local", 0)), "global": int(backtracks.get("global", 0))},
            run_id=answer.run_id,
            uncertain=answer.uncertain,
        )
