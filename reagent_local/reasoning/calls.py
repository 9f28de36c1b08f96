"""LLM calls on behalf of agents: charged to the controller's budget, counted and logged (the agents' ``Caller``)."""

from __future__ import annotations

from typing import Callable, Protocol, Sequence

from ..core import events as ev
from ..core.log import EventLog
from ..core.workspace import Workspace
from ..errors import LLMOutputError
from ..runtime.llm import LLM, JsonResult, Message


class Charges(Protocol):
    """What the ledger needs of a budget (the controller's ``Budget`` fits)."""

    llm_calls: int

    def charge_call(self) -> None: ...


class CallLedger:
    """Makes every model call of one run: charges the budget, logs the prompt and output, adds up the cost."""

    def __init__(self, log: EventLog, run_id: str, workspace: Workspace, budget: Charges,
                 model_for: Callable[[str], LLM], *, temperature: float, seed: int) -> None:
        self.log = log
        self.run_id = run_id
        self.workspace = workspace
        self.budget = budget
        self.model_for = model_for
        self.temperature = temperature
        self.seed = seed
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.llm_seconds = 0.0

    @property
    def calls(self) -> int:
        """Calls made so far."""
        return self.budget.llm_calls

    def __call__(self, agent: str, messages: Sequence[Message], schema: type, *, max_tokens: int) -> JsonResult:
        """One call for ``agent``; an unusable output is logged with its raw text, then raised."""
        self.budget.charge_call()
        model = self.model_for(agent)
        try:
            result = model.generate_json(messages, schema, max_tokens=max_tokens, temperature=self.temperature,
                                         seed=self.seed)
        except LLMOutputError as exc:
            self.log.record_llm_call(self.run_id, agent=agent, model=getattr(model, "model_id", "?"),
                                     prompt=list(messages), output=exc.raw, prompt_tokens=None,
                                     completion_tokens=None, seconds=None)
            self.workspace.record(agent, ev.LLMError(error=str(exc).splitlines()[0], raw=exc.raw[:2000]))
            raise
        call = result.call
        self.prompt_tokens += call.prompt_tokens
        self.completion_tokens += call.completion_tokens
        self.llm_seconds += call.seconds
        self.log.record_llm_call(self.run_id, agent=agent, model=call.model_id, prompt=list(call.messages),
                                 output=call.raw, prompt_tokens=call.prompt_tokens,
                                 completion_tokens=call.completion_tokens, seconds=call.seconds)
        return result
