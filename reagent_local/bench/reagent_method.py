"""ReAgent as a benchmark method: one pipeline per backtracking setting, wired as ``ask`` wires it.

The pipeline comes from ``wiring.build_pipeline`` with the run's shared model, index and
event log, so a benchmark gets the index's knowledge graph and the per-role models of
the configuration exactly as ``reagent ask`` does.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ..config import BACKTRACKING
from ..errors import LLMOutputError, QuestionError
from .methods import MethodContext, MethodResult, WithoutBacktracking, error_text
from .without_backtracking import ShadowRun


class ReagentMethod:
    """Answers with ``Pipeline.ask`` under one backtracking mode (``reagent-<mode>``), optionally without some rules."""

    def __init__(self, ctx: MethodContext, backtracking: str, without_rules: Sequence[str] = ()) -> None:
        if backtracking not in BACKTRACKING:
            raise ValueError(f"backtracking must be one of {tuple(BACKTRACKING)}, got {backtracking!r}")
        from ..reasoning.wiring import build_pipeline  # deferred: the baselines do not need it

        self.name = f"reagent-{backtracking}"
        rules = tuple(ctx.config.pipeline.rules) + tuple(f"-{name}" for name in without_rules)
        settings = replace(ctx.config.pipeline, backtracking=backtracking, rules=rules)
        config = replace(ctx.config, pipeline=settings)
        self.pipeline = build_pipeline(config, llm=ctx.llm, index=ctx.retriever, log=ctx.event_log())
        self.shadow = ShadowRun(self.pipeline, config) if backtracking != "none" else None

    def answer(self, question: str) -> MethodResult:
        """Run the pipeline; a model failure or a refused question becomes an error record, not a crash."""
        try:
            answer = self.pipeline.ask(question)
            if self.shadow is not None:
                without = self.shadow.answer(question, answer)
            else:  # backtracking off: the answer is its own answer without backtracking
                without = WithoutBacktracking(answer=answer.answer.strip())
        except (LLMOutputError, QuestionError) as exc:
            return MethodResult(prediction="", error=error_text(exc))
        finally:
            if self.shadow is not None:
                self.shadow.forget()  # one question's calls at a time
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
            rules_fired=list(answer.rules_fired),
            signals=list(answer.signals),
            answer_before_backtracking=answer.answer_before_backtracking,
            roads=answer.roads,
            trust=answer.trust,
            without_backtracking=without,
        )
