"""The ReAgent pipeline: one model (or one per role), one index, one event log; a QuestionRun per question.

Dependencies are explicit: ``Pipeline(config, llm=..., retriever=..., log=...)``. One
model serves every role unless ``role_llms`` names another for a role. Every LLM call,
message, checkpoint and rollback is an event in the run's log, so ``reagent trace``
can show exactly why an answer came out as it did. ``reagent_local.reasoning.wiring``
builds a Pipeline from configuration (models, index, knowledge graph, log).
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, Callable, Mapping

from ..agents.controller import Budget, RunCancelled
from ..agents.retriever import SearchIndex
from ..config import BACKTRACKING, Config
from ..core import events as ev
from ..core.channel import Channel
from ..core.conflicts import ConflictChecker
from ..core.log import EventLog
from ..core.workspace import Workspace
from ..errors import QuestionError
from ..rules import Firing, RuleSet
from ..rules.registry import STAGES
from ..runtime.llm import LLM
from .answer import Answer
from .calls import CallLedger
from .driver import QuestionRun
from .team import build_team


def validate_question(question: str, max_chars: int) -> str:
    """Collapse whitespace; refuse empty or huge questions with a message that says why."""
    if question is None or not str(question).strip():
        raise QuestionError("the question is empty", hint='ask something, e.g. reagent ask "Who directed Actrius?"')
    text = " ".join(str(question).split())
    if len(text) > max_chars:
        raise QuestionError(
            f"the question is {len(text):,} characters long; the limit is {max_chars:,}",
            hint="shorten it, or raise pipeline.max_question_chars in reagent.toml",
        )
    return text


class Pipeline:
    """ReAgent over one model (or one per role), one index and one event log."""

    def __init__(self, config: Config, *, llm: LLM, retriever: SearchIndex, log: EventLog,
                 kg: Any | None = None, role_llms: Mapping[str, LLM] | None = None) -> None:
        if config.pipeline.backtracking not in BACKTRACKING:
            raise ValueError(f"unknown backtracking mode {config.pipeline.backtracking!r}")
        self.config = config
        self.llm = llm
        self.retriever = retriever
        self.log = log
        self.kg = kg
        self.role_llms = dict(role_llms or {})

    def model_for(self, agent: str) -> LLM:
        """The model serving one role."""
        return self.role_llms.get(agent, self.llm)

    def ask(self, question: str, *, should_stop: Callable[[], str | None] | None = None,
            on_start: Callable[[Workspace], None] | None = None) -> Answer:
        """Answer one question; budgets bound the work and mark the answer uncertain.

        ``should_stop`` is checked before every LLM call and retrieval; when it returns a reason the
        run stops there, is closed as ``cancelled`` with that reason, and RunCancelled is raised.
        ``on_start`` logs what an entry point settled before the run (a follow-up's rewrite) as its first events.
        """
        text = validate_question(question, self.config.pipeline.max_question_chars)
        settings, llm = self.config.pipeline, self.config.llm
        workspace = Workspace(self.log, self.log.start_run(text, _config_dict(self.config)))
        if on_start is not None:
            on_start(workspace)
        budget = Budget(settings.max_llm_calls, settings.max_seconds, should_stop=should_stop)
        calls = CallLedger(self.log, workspace.run_id, workspace, budget, self.model_for,
                           temperature=llm.temperature, seed=llm.seed)

        def log_firing(firing: Firing) -> None:
            workspace.record(STAGES[firing.stage], ev.RuleFired(rule=firing.rule, stage=firing.stage,
                                                                     step=firing.step, detail=firing.detail))

        rules = RuleSet(settings.rules, on_fire=log_firing)
        team = build_team(self.config, calls, workspace, rules, self.retriever, self.kg, budget=budget)
        # the channel checks concurrent asserts with rules only; LLM judging is the verifier's job
        channel = Channel(workspace, ConflictChecker())
        run = QuestionRun(text, team=team, workspace=workspace, channel=channel, calls=calls, settings=settings)
        try:
            return run.execute()
        except KeyboardInterrupt:
            _close_unfinished(workspace, "interrupted", "stopped by the user (Ctrl-C)")
            raise
        except RunCancelled as exc:
            _close_unfinished(workspace, "cancelled", exc.reason)
            raise
        except Exception as exc:  # a model that fails to load, a broken index, ...: the run says why it ended
            _close_unfinished(workspace, "failed", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            raise


def _close_unfinished(workspace: Workspace, status: str, error: str) -> None:
    """Close a run that raised, unless it was already closed; never hide the original error."""
    try:
        if workspace.log.get_run(workspace.run_id)["status"] == "running":
            workspace.log.finish_run(workspace.run_id, None, status, {}, error=error)
    except Exception:  # noqa: BLE001 - the log itself may be what failed; the caller sees the first error
        pass


def _config_dict(config: Config) -> dict:
    """The configuration as logged with the run (paths and other objects as text)."""
    return {k: {kk: (str(vv) if not isinstance(vv, (int, float, str, bool, type(None), dict, list, tuple)) else vv)
                for kk, vv in v.items()} for k, v in asdict(config).items()}
