"""The Python API: ``ReAgent.load(index=..., model=...).ask("...")``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

from .reasoning.answer import Answer
from .config import Config, load_config
from .core.log import EventLog
from .runtime.llm import LLM
from .reasoning.pipeline import Pipeline
from .reasoning.wiring import build_pipeline
from .share.route import Route, choose_route
from .reasoning.conversation import Turn, ask_in_conversation


class ReAgent:
    """A ready-to-ask pipeline: model, index, knowledge graph and event log wired together.

    Loaded with ``ReAgent.load``, it sends its questions to a `reagent serve` of the same home when
    one runs with the same model, index and settings (``route`` says where they go, or why not),
    and otherwise builds its own pipeline; a question whose server went away fails once, and the
    next question looks again (a new server, or its own model).
    """

    def __init__(self, pipeline: Pipeline | None = None, *, config: Config | None = None, route: Route | None = None,
                 on_event: Callable[[str, Any], None] | None = None) -> None:
        if pipeline is None and config is None:
            raise ValueError("give a pipeline, or a configuration to build one from")
        self._pipeline = pipeline
        self._config = config if config is not None else pipeline.config  # type: ignore[union-attr]
        self.route = route or Route()
        self._on_event = on_event
        self._remote: Any = None
        if self.route.server is not None:
            from .share.remote import RemoteAsker

            self._remote = RemoteAsker(self.route.server, self._config, on_event)

    @classmethod
    def load(cls, index: str | Sequence[str] | None = None, model: str | None = None, *, backtracking: str | None = None,
             config: Config | None = None, llm: LLM | None = None, log_path: str | Path | None = None,
             use_server: bool | None = None, on_event: Callable[[str, Any], None] | None = None) -> "ReAgent":
        """Open everything lazily (the model loads on the first question), or find a server to ask.

        ``index`` may name several indexes (``["notes", "enwiki-sample"]`` or ``"notes,enwiki-sample"``): each is
        searched and the rankings fused, and each cited passage's id starts with its index's name (``PassageRef.index``).
        ``use_server`` False never sends questions to a `reagent serve` (default: ``llm.use_server``);
        ``on_event(kind, data)`` sees a served question's ``queued``, ``run`` and log ``event`` updates.
        """
        if index is not None and not isinstance(index, str):
            index = ",".join(str(name) for name in index)
        config = config or load_config({"retrieval.index": index, "llm.model": model,
                                        "pipeline.backtracking": backtracking})
        if index is not None and config.retrieval.index != index:
            config = replace(config, retrieval=replace(config.retrieval, index=index))
        if model is not None and config.llm.model != model:
            config = replace(config, llm=replace(config.llm, model=model))
        if backtracking is not None and config.pipeline.backtracking != backtracking:
            config = replace(config, pipeline=replace(config.pipeline, backtracking=backtracking))
        if use_server is not None and config.llm.use_server != use_server:
            config = replace(config, llm=replace(config.llm, use_server=use_server))
        route = choose_route(config, log_path=log_path) if llm is None else Route()
        if route.server is not None:
            return cls(config=config, route=route, on_event=on_event)
        log = EventLog(Path(log_path)) if log_path else None
        return cls(build_pipeline(config, llm=llm, log=log), config=config, route=route)

    @property
    def pipeline(self) -> Pipeline:
        """This process's own pipeline (built on first use when questions went to a server)."""
        if self._pipeline is None:
            self._pipeline = build_pipeline(self._config)
        return self._pipeline

    @property
    def served(self) -> bool:
        """Whether the next question goes to a server."""
        return self._remote is not None

    def ask(self, question: str, *, should_stop: Callable[[], str | None] | None = None,
            history: Sequence[Turn] = (), conversation: str = "") -> Answer:
        """Answer one question; ``should_stop`` (a reason or None, checked between steps) cancels the run.

        ``history``: the conversation's earlier turns (``reagent_local.reasoning.conversation.turn_of(answer)``); a
        follow-up is then rewritten to stand alone before the agents read it (``answer.extra["rewrite"]``).
        ``conversation`` names the conversation in the log (its runs' ``rewrite`` events).
        """
        if self._remote is None and self._pipeline is None:
            self._reroute()
        if self._remote is not None:
            from .share.client import ServerFailed, ServerUnavailable

            try:
                return self._remote.ask(question, should_stop=should_stop, history=history, conversation=conversation)
            except ServerUnavailable as exc:  # nothing started there: answer here instead
                self.route = Route(reason=f"{self._remote.server.describe()} could not take it ({exc.message})")
                self._remote = None
                if self._on_event is not None:
                    self._on_event("local", {"line": self.route.note()})
            except ServerFailed:
                self._remote = None  # the next question looks for a server again
                raise
        return ask_in_conversation(self.pipeline, question, history, conversation=conversation, should_stop=should_stop)

    def _reroute(self) -> None:
        """After a server went away: a new compatible server, or this process's own pipeline."""
        self.route = choose_route(self._config)
        if self.route.server is not None:
            from .share.remote import RemoteAsker

            self._remote = RemoteAsker(self.route.server, self._config, self._on_event)

    def close(self) -> None:
        """Release the model, the index and the log."""
        self._remote = None
        if self._pipeline is None:
            return
        for closable in (self._pipeline.llm, self._pipeline.retriever, self._pipeline.log, self._pipeline.kg,
                         *self._pipeline.role_llms.values()):
            if closable is not None and hasattr(closable, "close"):
                closable.close()

    def __enter__(self) -> "ReAgent":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
