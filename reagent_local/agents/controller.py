"""Controller (A_C): the per-question budgets, reliability scores, skips, overrides and challenges.

It owns the budgets: the run's :class:`Budget` of LLM calls and seconds (every model call
is charged to it), the retries a step gets (:meth:`Controller.retries`), the global
rollbacks a question gets. Its decisions are values the loop carries out:

- :meth:`Controller.skip`: a step whose input step found no answer is not attempted;
- :meth:`Controller.override`: when a retried step has no new query left, keep its surest
  attempt (marked uncertain, its confidence capped);
- :meth:`Controller.challenges`: after ``challenge_after`` conflicts on one step, the
  statements that won them are checked again with fresh evidence;
- :meth:`Controller.may_roll_back`: global rollbacks are bounded per question.

Reliability starts at 1.0 for every agent, drops when a statement of that agent is
discarded and recovers a little when one survives to the final answer (it reads the
assembler's answer in its inbox); the supervisor weighs confidence by it. When the budget
runs out the loop stops and returns the best-supported answer marked uncertain.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from ..core.channel import Message
from ..core.knowledge import Statement
from ..core.plan import SubQuestion
from ..rules import RuleSet
from ..core.evidence import is_unknown
from .messages import AnswerMade
from .verifier import Attempt

AGENT = "controller"
OVERRIDE_CONFIDENCE = 0.4  # a kept candidate (its retry found no new query) is never trusted more than this


class BudgetExhausted(Exception):
    """Raised inside the loop when a per-question budget is spent (not a user error)."""

    def __init__(self, what: str) -> None:
        self.what = what
        super().__init__(what)


class RunCancelled(Exception):
    """Raised inside the loop when the caller's ``should_stop`` hook asks the run to stop (a client went away)."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


@dataclass
class Budget:
    """Per-question limits: LLM calls and wall seconds; and the caller's stop hook, checked with them."""

    max_llm_calls: int
    max_seconds: float
    started: float = field(default_factory=time.monotonic)
    llm_calls: int = 0
    # called before every LLM call and every retrieval: a reason to stop the run, or None to go on
    should_stop: Callable[[], str | None] | None = None

    def charge_call(self) -> None:
        """Count one LLM call, or raise when the budget is already spent."""
        self.check()
        self.llm_calls += 1

    @classmethod
    def unlimited(cls) -> "Budget":
        """No limit (a controller used on its own, in tests)."""
        return cls(max_llm_calls=1 << 62, max_seconds=float("inf"))

    @property
    def elapsed(self) -> float:
        """Seconds since the run started."""
        return time.monotonic() - self.started

    def check(self) -> None:
        """Raise RunCancelled when the stop hook gives a reason, BudgetExhausted when calls or seconds are spent."""
        if self.should_stop is not None and (reason := self.should_stop()):
            raise RunCancelled(reason)
        if self.llm_calls >= self.max_llm_calls:
            raise BudgetExhausted(f"{self.max_llm_calls} LLM calls")
        if time.monotonic() - self.started > self.max_seconds:
            raise BudgetExhausted(f"{self.max_seconds:.0f} seconds")


@dataclass(frozen=True)
class Skip:
    """Do not attempt a step: an answer it needs is missing."""

    step: int
    reason: str


@dataclass(frozen=True)
class Override:
    """What to keep of a step whose retry found no new query: an attempt, uncertain."""

    step: int
    attempt: Attempt
    decision: str

    @property
    def statement(self) -> Statement:
        """The kept attempt's statement, its confidence capped."""
        capped = min(self.attempt.confidence, OVERRIDE_CONFIDENCE)
        return self.attempt.candidate.to_statement(capped)


@dataclass(frozen=True)
class Challenge:
    """Re-check a statement that keeps winning conflicts, with fresh evidence."""

    step: int
    statement: Statement


@dataclass
class Controller:
    """Keeps reliability scores and decides when to skip, override, challenge or stop."""

    rules: RuleSet
    budget: Budget = field(default_factory=Budget.unlimited)
    challenge_after: int = 2
    max_rollbacks: int = 2
    max_retries: int = 2  # retries of one step (a step solved again after a rollback gets at most one)
    reliability: dict[str, float] = field(default_factory=dict)
    conflicts_per_step: Counter = field(default_factory=Counter)
    challenged: set[int] = field(default_factory=set)
    rollbacks: int = 0

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

    def check_budget(self) -> None:
        """Stop the run (an exception) when its budget is spent or its caller asks it to stop."""
        self.budget.check()

    def retries(self, fresh: bool) -> int:
        """How many times a step may be retried: fewer for one solved again after a rollback or a challenge."""
        return min(1, self.max_retries) if fresh else self.max_retries

    def read(self, inbox: Sequence[Message]) -> None:
        """Reward the agents whose statements the assembler's answer stood on."""
        for message in inbox:
            if isinstance(message.body, AnswerMade):
                self.credit(message.statements)

    def credit(self, statements: Sequence[Statement]) -> None:
        """Reward the agents whose statements an answer stood on (the loop calls it with the assembler's answer)."""
        for statement in statements:
            self.reward(statement.agent)

    def skip(self, sub: SubQuestion, answers: Mapping[int, str]) -> Skip | None:
        """Skip a step that uses an answer no step found ("Where was unknown born?")."""
        unanswered = [k + 1 for k in sub.depends_on if is_unknown(answers.get(k, ""))]
        if unanswered:
            return Skip(sub.index, f"depends on unanswered step(s) {unanswered}")
        return None

    def override(self, attempts: Sequence[Attempt], *, step: int) -> Override:
        """No new query left: keep the most confident attempt.

        Every attempt of a step sent back for a retry passed its checks: the verifier retries only a sound answer
        (not unknown, of a type that fits, not one the supervisor gave up, no graph conflict; one that fails a check
        is accepted or stands uncertain, never retried), so there is always one to keep.
        """
        return Override(step, max(attempts, key=lambda a: a.confidence), "keep best candidate")

    def may_roll_back(self) -> bool:
        """A global rollback is allowed (each question gets at most ``max_rollbacks``)."""
        return self.rollbacks < self.max_rollbacks

    def count_rollback(self) -> None:
        """A global rollback happened."""
        self.rollbacks += 1

    def challenges(self, step: int, kept: Sequence[Statement]) -> list[Challenge]:
        """Count a conflict on ``step``; after repeated ones, challenge the statements that won them."""
        self.conflicts_per_step[step] += 1
        if self.conflicts_per_step[step] < self.challenge_after:
            return []
        out = []
        for statement in kept:
            target = statement.subquestion
            if isinstance(target, int) and target not in self.challenged:
                self.challenged.add(target)
                out.append(Challenge(target, statement))
        return out
