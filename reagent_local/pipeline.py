"""The ReAgent loop: decompose, then per sub-question retrieve and verify with local
backtracking, then assemble with global backtracking under the supervisor.

Dependencies are explicit: ``Pipeline(config, llm=..., retriever=..., log=...)``. One
model serves every role unless ``role_llms`` names another for a role. Every LLM call,
message, checkpoint and rollback is an event in the run's log, so ``reagent trace``
can show exactly why an answer came out as it did.
"""

from __future__ import annotations

from typing import Any, Mapping

from .agents.retriever import SearchIndex
from .answer import Answer
from .config import Config
from .errors import QuestionError
from .llm import LLM
from .core.log import EventLog
from .run import QuestionRun

MODES = {"none": (False, False), "local": (True, False), "global": (False, True), "both": (True, True)}


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
        if config.pipeline.backtracking not in MODES:
            raise ValueError(f"unknown backtracking mode {config.pipeline.backtracking!r}")
        self.config = config
        self.llm = llm
        self.retriever = retriever
        self.log = log
        self.kg = kg
        self.role_llms = dict(role_llms or {})

    @property
    def local_backtracking(self) -> bool:
        return MODES[self.config.pipeline.backtracking][0]

    @property
    def global_backtracking(self) -> bool:
        return MODES[self.config.pipeline.backtracking][1]

    def model_for(self, agent: str) -> LLM:
        """The model serving one role."""
        return self.role_llms.get(agent, self.llm)

    def ask(self, question: str) -> Answer:
        """Answer one question; budgets bound the work and mark the answer uncertain."""
        text = validate_question(question, self.config.pipeline.max_question_chars)
        run = QuestionRun(self, text)
        return run.execute()
