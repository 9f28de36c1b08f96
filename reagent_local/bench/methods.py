"""What a benchmark method is: a question in, a prediction with its cost and citations out.

A method only ever sees the question text (never the gold answer or the gold
paragraphs). Methods are built by factories from a ``MethodContext`` that holds the
shared model, retriever and event log, so every method of a run uses the same ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from ..config import Config
from ..runtime.llm import LLM, LLMCall
from ..retrieval.passages import Passage


class Retriever(Protocol):
    """What methods need from an index: ``Index.search`` returning hits with a ``.passage``."""

    def search(self, query: str, k: int = 5, mode: str = "hybrid") -> list[Any]:
        """Ranked hits for a query."""
        ...


@dataclass
class WithoutBacktracking:
    """The answer a ReAgent method's question gets with backtracking off, and what finding it cost beyond the run."""

    answer: str
    calls: int = 0  # model calls the second run made itself (those before the paths part are replayed)
    replayed: int = 0  # calls served from the first run's memory
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0  # wall time of the second run, kept out of the question's own seconds
    run_id: str | None = None  # the second run in the event log (None: no second run was needed)
    error: str | None = None

    def cost(self) -> dict[str, Any]:
        """The record's ``without_backtracking_cost`` field."""
        return {"calls": self.calls, "replayed": self.replayed, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "seconds": round(self.seconds, 3),
                "run_id": self.run_id, "error": self.error}


@dataclass
class MethodResult:
    """One method's answer to one question, with what it cost and what it cited."""

    prediction: str
    cited: list[Passage] = field(default_factory=list)
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    backtracks: dict[str, int] = field(default_factory=lambda: {"local": 0, "global": 0})
    run_id: str | None = None
    uncertain: bool | None = None
    error: str | None = None
    # Backtracking accounting (ReAgent fills these; baselines leave the defaults):
    answer_before_backtracking: str | None = None  # the answer held before the first rollback
    rules_fired: list[str] = field(default_factory=list)
    signals: list[str] = field(default_factory=list)  # names of the conflict signals that fired
    roads: dict[str, Any] | None = None  # the two roads and the verdict, when they disagreed
    # the same question with backtracking off (ReAgent methods; exact fixed/broken counts from one run)
    without_backtracking: WithoutBacktracking | None = None
    route: dict[str, Any] | None = None  # the adaptive baseline's learned decisions (and old ReAgent records')
    # what a router reads of a baseline's answer (rag, ircot): agents.router.Reading.to_json() and its steps
    reading: dict[str, Any] | None = None
    trust: dict[str, Any] | None = None  # the supervisor's trust score of the answer (ReAgent): agents.trust.Trust


class Method(Protocol):
    """A way of answering a question; ``answer`` must not raise on bad model output."""

    name: str

    def answer(self, question: str) -> MethodResult:
        """Answer one question."""
        ...


class MethodContext:
    """The model, retriever and event log shared by all methods of a run (opened lazily)."""

    def __init__(
        self,
        config: Config,
        llm: LLM,
        *,
        retriever: Retriever | None = None,
        open_retriever: Callable[[], Retriever] | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.config = config
        self.llm = llm
        self._retriever = retriever
        self._open_retriever = open_retriever
        self.log_path = log_path
        self._log: Any = None

    @property
    def retriever(self) -> Retriever:
        """The index every retrieving method searches (built or opened on first use)."""
        if self._retriever is None:
            if self._open_retriever is None:
                raise RuntimeError("this method needs a retriever but the run was given none")
            self._retriever = self._open_retriever()
        return self._retriever

    def event_log(self) -> Any:
        """The run's own DuckDB event log (one per run folder, shared by the ReAgent methods)."""
        if self._log is None:
            if self.log_path is None:
                raise RuntimeError("this method needs an event log but the run was given no log path")
            from ..core.log import EventLog  # deferred: only ReAgent methods log events

            self._log = EventLog(self.log_path)
        return self._log

    def close(self) -> None:
        """Close the event log, and the index if this context opened it."""
        if self._log is not None and hasattr(self._log, "close"):
            self._log.close()
        self._log = None
        if self._open_retriever is not None and self._retriever is not None and hasattr(self._retriever, "close"):
            self._retriever.close()
            self._retriever = None


MethodFactory = Callable[[MethodContext], Method]


@dataclass
class CallTally:
    """Adds up the LLM calls a method makes for one question."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, call: LLMCall) -> None:
        """Count one finished call."""
        self.calls += 1
        self.prompt_tokens += call.prompt_tokens
        self.completion_tokens += call.completion_tokens

    def result(self, prediction: str, cited: Sequence[Passage] = (), error: str | None = None) -> MethodResult:
        """A MethodResult carrying this tally."""
        return MethodResult(
            prediction=prediction,
            cited=list(cited),
            llm_calls=self.calls,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            error=error,
        )


def retrieve(ctx: MethodContext, query: str) -> list[Passage]:
    """The top-k passages for a query, with the run's retrieval settings."""
    settings = ctx.config.retrieval
    return [hit.passage for hit in ctx.retriever.search(query, k=settings.top_k, mode=settings.mode)]


def format_passages(passages: Sequence[Passage], max_chars: int, start: int = 1) -> str:
    """Numbered passages for a prompt, each cut to ``max_chars`` characters of text."""
    lines = []
    for number, passage in enumerate(passages, start):
        text = " ".join(passage.text.split())[:max_chars]
        lines.append(f"[{number}] {passage.title}: {text}")
    return "\n".join(lines)


def error_text(exc: Exception) -> str:
    """The error field of a record: the error's class and first line."""
    message = getattr(exc, "message", None) or str(exc)
    return f"{type(exc).__name__}: {message.splitlines()[0] if message else ''}"
