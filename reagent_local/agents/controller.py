"""Controller (A_C): reliability scores, challenges, overrides and the per-question budget.

Reliability starts at 1.0 for every agent, drops when a statement of that agent is
discarded and recovers a little when one survives to the final answer. After
``challenge_after`` conflicts on one sub-question the controller challenges it: a
fresh retrieval and verification of that step. When the budget runs out it stops
the loop and the pipeline returns the best-supported answer marked uncertain.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

AGENT = "controller"


class BudgetExhausted(Exception):
    """Raised inside the pipeline when a per-question budget is spent (not a user error)."""

    def __init__(self, what: str) -> None:
        self.what = what
        super().__init__(what)


@dataclass
class Budget:
    """Per-question limits: LLM calls and wall seconds."""

    max_llm_calls: int
    max_seconds: float
    started: float = field(default_factory=time.monotonic)
    llm_calls: int = 0

    def charge_call(self) -> None:
        """Count one LLM call, or raise when the budget is already spent."""
        self.check()
        self.llm_calls += 1

    def check(self) -> None:
        """Raise BudgetExhausted when calls or seconds are spent."""
        if self.llm_calls >= self.max_llm_calls:
            raise BudgetExhausted(f"{self.max_llm_calls} LLM calls")
        if time.monotonic() - self.started > self.max_seconds:
            raise BudgetExhausted(f"{self.max_seconds:.0f} seconds")


@dataclass
class Controller:
    """Keeps reliability scores and decides when to challenge or stop."""

    challenge_after: int = 2
    reliability: dict[str, float] = field(default_factory=dict)
    conflicts_per_step: Counter = field(default_factory=Counter)
    challenged: set[int] = field(default_factory=set)

    def score(self, agent: str) -> float:
        """An agent's reliability in (0, 1]."""
        return self.reliability.get(agent, 1.0)

    def penalise(self, agent: str) -> float:
        """A statement of this agent was discarded."""
        self.reliability[agent] = round(max(0.1, self.score(agent) * 0.8), 4)
        return self.reliability[agent]

    def reward(self, agent: str) -> float:
        """A statement of this agent survived to the final answer."""
        self.reliability[agent] = round(min(1.0, self.score(agent) + 0.05), 4)
        return self.reliability[agent]

    def record_conflict(self, step: int) -> int:
        """Count a conflict on a step; returns how many it has had."""
        self.conflicts_per_step[step] += 1
        return self.conflicts_per_step[step]

    def should_challenge(self, step: int) -> bool:
        """Repeated conflicts on a step not challenged yet."""
        return self.conflicts_per_step[step] >= self.challenge_after and step not in self.challenged
