"""The Python API: ``ReAgent.load(index=..., model=...).ask("...")``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

from .reasoning.answer import Answer
from .config import Config, load_config
from .core.log import EventLog
from .runtime.llm import LLM
from .reasoning.pipeline import Pipeline
from .reasoning.wiring import build_pipeline


class ReAgent:
    """A ready-to-ask pipeline: model, index, knowledge graph and event log wired together."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline

    @classmethod
    def load(cls, index: str | None = None, model: str | None = None, *, backtracking: str | None = None,
             config: Config | None = None, llm: LLM | None = None, log_path: str | Path | None = None) -> "ReAgent":
        """Open everything lazily (the model loads on the first question)."""
        config = config or load_config({"retrieval.index": index, "llm.model": model,
                                        "pipeline.backtracking": backtracking})
        if index is not None and config.retrieval.index != index:
            config = replace(config, retrieval=replace(config.retrieval, index=index))
        if model is not None and config.llm.model != model:
            config = replace(config, llm=replace(config.llm, model=model))
        if backtracking is not None and config.pipeline.backtracking != backtracking:
            config = replace(config, pipeline=replace(config.pipeline, backtracking=backtracking))
        log = EventLog(Path(log_path)) if log_path else None
        return cls(build_pipeline(config, llm=llm, log=log))

    def ask(self, question: str, *, should_stop: Callable[[], str | None] | None = None) -> Answer:
        """Answer one question; ``should_stop`` (a reason or None, checked between steps) cancels the run."""
        return self.pipeline.ask(question, should_stop=should_stop)

    def close(self) -> None:
        """Release the model, the index and the log."""
        for closable in (self.pipeline.llm, self.pipeline.retriever, self.pipeline.log, self.pipeline.kg,
                         *self.pipeline.role_llms.values()):
            if closable is not None and hasattr(closable, "close"):
                closable.close()

    def __enter__(self) -> "ReAgent":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
