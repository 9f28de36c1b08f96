"""Questions asked in a conversation: a follow-up is made standalone first, and every turn is kept in the log.

``ask_in_conversation`` is what the entry points that hold a conversation call (``reagent chat``,
the serve page and the OpenAI endpoint through the server, ``ReAgent.ask(history=...)``): with
earlier turns the rewriter (agents/rewriter.py) writes the question as it reads alone, then the
pipeline answers that. The run's first event is a ``rewrite`` (core/events.py) with the question
as asked, as read, the conversation id and the turn's number, so `reagent trace show` shows it and
``conversation_turns`` finds a conversation's turns again in the log. Without an earlier turn and
without a conversation id it is a plain ``Pipeline.ask``: no extra call, no extra event.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any, Callable, Sequence

from ..agents.rewriter import AGENT, Rewrite, Turn, rewrite
from ..core import events as ev
from ..core.log import EventLog
from ..core.workspace import Workspace
from .answer import Answer

__all__ = ["Turn", "ask_in_conversation", "conversation_turns", "new_conversation_id", "turn_of"]


def new_conversation_id() -> str:
    """A fresh conversation id (``c-`` and 10 hex digits)."""
    return "c-" + uuid.uuid4().hex[:10]


def turn_of(answer: Answer, asked: str | None = None) -> Turn:
    """The turn an answer makes for the next question: the question as asked, the answer, the cited titles."""
    titles = tuple(dict.fromkeys(p.title for p in answer.passages))
    rewrite_info = answer.extra.get("rewrite") or {}
    return Turn(asked or rewrite_info.get("question") or answer.question, answer.answer, titles)


def ask_in_conversation(pipeline: Any, question: str, turns: Sequence[Turn] = (), *, conversation: str = "",
                        should_stop: Callable[[], str | None] | None = None) -> Answer:
    """Answer ``question`` after the earlier ``turns``: rewritten to stand alone when there are some.

    The answer's ``extra["rewrite"]`` says what was asked and what the agents read; its ``question``
    is the standalone one (the run's question in the log).
    """
    if not turns and not conversation:
        return pipeline.ask(question, should_stop=should_stop)
    llm_settings = pipeline.config.llm
    made = rewrite(pipeline.model_for(AGENT), question, turns, temperature=llm_settings.temperature,
                   seed=llm_settings.seed)
    event = ev.Rewrite(question=made.question, standalone=made.standalone, conversation=conversation,
                       turn=len(turns) + 1, earlier=tuple(t.question for t in turns), error=made.error)

    def log_rewrite(workspace: Workspace) -> None:
        workspace.record(AGENT, event)
        if made.call is not None:
            call = made.call
            workspace.log.record_llm_call(workspace.run_id, agent=AGENT, model=call.model_id,
                                          prompt=list(call.messages), output=call.raw,
                                          prompt_tokens=call.prompt_tokens, completion_tokens=call.completion_tokens,
                                          seconds=call.seconds)

    answer = pipeline.ask(made.standalone, should_stop=should_stop, on_start=log_rewrite)
    return with_rewrite(answer, made, conversation, len(turns) + 1)


def with_rewrite(answer: Answer, made: Rewrite, conversation: str, turn: int) -> Answer:
    """The answer with its rewrite said in ``extra`` (and the rewrite's call counted in its account: calls, tokens,
    and its seconds, spent before the run started)."""
    call = made.call
    info = {"question": made.question, "standalone": made.standalone, "changed": made.changed,
            "conversation": conversation, "turn": turn, **({"error": made.error} if made.error else {})}
    if call is None:
        return replace(answer, extra={**answer.extra, "rewrite": info})
    return replace(answer, extra={**answer.extra, "rewrite": info}, llm_calls=answer.llm_calls + 1,
                   prompt_tokens=answer.prompt_tokens + call.prompt_tokens,
                   completion_tokens=answer.completion_tokens + call.completion_tokens,
                   llm_seconds=answer.llm_seconds + call.seconds, seconds=answer.seconds + call.seconds)


def conversation_turns(log: EventLog, conversation: str, *, last_runs: int = 500) -> list[tuple[str, Turn]]:
    """A conversation's finished turns in the log, oldest first: (run id, turn), from its runs' rewrite events."""
    found: list[tuple[int, str, Turn]] = []
    for run in log.runs(last_runs):
        if run.get("status") != "ok":
            continue
        for event in log.events(run["run_id"], types=[ev.Rewrite.KIND]):
            body = ev.decode(event)
            if isinstance(body, ev.Rewrite) and body.conversation == conversation:
                titles = _cited_titles(log, run["run_id"])
                found.append((body.turn, run["run_id"], Turn(body.question, run.get("answer") or "", titles)))
    found.sort(key=lambda item: item[0])
    return [(run_id, turn) for _, run_id, turn in found]


def _cited_titles(log: EventLog, run_id: str) -> tuple[str, ...]:
    """The titles of the passages the run's final answer cited (from its answer event's statements, if any)."""
    from ..trace import load_trace

    try:
        trace = load_trace(log, run_id)
    except Exception:  # noqa: BLE001 - titles only help the rewrite; a run that does not load gives none
        return ()
    return tuple(dict.fromkeys(trace.passages[pid].title for pid in trace.final.passages if pid in trace.passages))
