"""What `reagent mcp` offers an MCP client (an editor, a desktop assistant): ask, search, index_list, trace.

The tools are plain methods of ``ReagentTools`` that return JSON-ready values (or text), so they
are tested without a transport; ``reagent_local.serve.mcp_server`` registers them with the official
``mcp`` SDK and serves them over stdio. ``ask`` goes through ``ReAgent``: when a `reagent serve` of
the same home runs with the same model, index and settings, the question goes there and no model
is loaded here; otherwise the model is loaded on the first question and kept for the next.
"""

from __future__ import annotations

import io
import threading
from dataclasses import replace
from typing import Any, Callable

from ..config import Config
from ..errors import ReagentError

MODES = ("dense", "sparse", "hybrid")
TRACE_WIDTH = 110  # columns of the plain-text timeline


class ReagentTools:
    """The MCP tools over one home's configuration; one ReAgent per index spec, kept for the server's life."""

    def __init__(self, config: Config, *, make_agent: Callable[[Config], Any] | None = None) -> None:
        self.config = config
        self._make_agent = make_agent or _load_agent
        self._agents: dict[str, Any] = {}
        self._lock = threading.Lock()  # one question at a time: one model, one pipeline

    def _config_for(self, index: str | None) -> Config:
        if not index:
            return self.config
        return replace(self.config, retrieval=replace(self.config.retrieval, index=index))

    def ask(self, question: str, index: str | None = None) -> dict[str, Any]:
        """Answer a question with the six agents: answer, trust, sub-questions, citations and run id."""
        from ..reasoning.pipeline import validate_question

        config = self._config_for(index)
        validate_question(question, config.pipeline.max_question_chars)
        with self._lock:
            agent = self._agents.get(config.retrieval.index)
            if agent is None:
                agent = self._agents[config.retrieval.index] = self._make_agent(config)
            answer = agent.ask(question)
            served = agent.route.note("this question") if agent.served else None
        return answer_payload(answer, served)

    def search(self, query: str, index: str | None = None, k: int = 5, mode: str = "hybrid") -> list[dict[str, Any]]:
        """The k best passages for a query (several indexes, "a,b": rankings fused; each hit names its index)."""
        from ..retrieval import open_search_index

        if mode not in MODES:
            raise ReagentError(f"unknown search mode {mode!r}", hint=f"choose one of {', '.join(MODES)}")
        config = self._config_for(index)
        with open_search_index(config.retrieval.index, config) as opened:
            hits = opened.search(query, k=k, mode=mode)
        return [{"rank": h.rank, "id": h.passage.id, "title": h.passage.title, "score": round(float(h.score), 6),
                 **({"index": h.index} if h.index else {}), "text": h.passage.text,
                 **({"source": h.passage.origin.label()} if h.passage.origin else {})} for h in hits]

    def index_list(self) -> list[dict[str, Any]]:
        """The home's built indexes: name, passages, embedder, source, and which one is the default."""
        from ..retrieval import list_indexes

        default = self.config.retrieval.index
        return [{"name": m["name"], "passages": m.get("passages"), "documents": m.get("documents"),
                 "embedder": (m.get("embedder") or {}).get("name"),
                 "source": (m.get("source") or {}).get("path"), "kg": bool(m.get("kg")),
                 "default": m["name"] == default} for m in list_indexes(self.config)]

    def trace(self, run_id: str = "last") -> str:
        """A run's timeline as plain text (what `reagent trace show` prints, without colour)."""
        from rich.console import Console

        from ..core.log import EventLog
        from ..trace import load_trace, resolve_run_id
        from ..trace.terminal import render

        with EventLog(self.config.paths.log, read_only=True) as log:
            run = load_trace(log, resolve_run_id(log, run_id))
        out = io.StringIO()
        render(run, Console(file=out, width=TRACE_WIDTH, no_color=True, color_system=None, force_terminal=False,
                            highlight=False, emoji=False))
        return out.getvalue()

    def close(self) -> None:
        """Release every loaded model and index."""
        for agent in self._agents.values():
            agent.close()
        self._agents.clear()


def _load_agent(config: Config) -> Any:
    from ..api import ReAgent

    return ReAgent.load(config=config)


def answer_payload(answer: Any, served: str | None = None) -> dict[str, Any]:
    """An Answer as the ask tool returns it: what a client needs to show it and to judge it."""
    def cite(p: Any) -> dict[str, Any]:
        return {"id": p.id, "title": p.title, **({"index": p.index} if p.index else {}),
                **({"source": p.source()} if p.source() else {})}

    return {
        "answer": answer.answer,
        "trusted": not answer.uncertain,
        "uncertain_reason": answer.uncertain_reason or None,
        "subquestions": [{"question": s.question, "answer": s.answer, "verified": not s.uncertain,
                          "citations": [cite(p) for p in s.passages]} for s in answer.subquestions],
        "citations": [cite(p) for p in answer.passages],
        "run_id": answer.run_id,
        "trace": f"call the trace tool with run_id {answer.run_id}",
        **({"served_by": served} if served else {}),
    }
