"""The rule stages: for each, the role that consults it and the type every rule of it has (a Protocol).

A rule answers with a value, or with None (a ``trust`` rule: False) when it has nothing to
say; :meth:`~reagent_local.rules.registry.RuleSet.first` runs a stage's rules in order and
takes the first answer.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, Sequence, TypeVar, Union

if TYPE_CHECKING:  # annotations only
    from ..core.evidence import BuiltOn, EvidencePassage
    from ..core.plan import StepLike, SubQuestion

R = TypeVar("R")


@dataclass(frozen=True)
class SendBack:
    """A plan check's finding: what is wrong with the plan's shape (the model is asked for a new plan)."""

    what: str


class PlanCheck(Protocol):
    """``plan-check``: why the model's plan must be written again, or None."""

    def __call__(self, question: str, plan: Sequence[SubQuestion]) -> SendBack | None: ...


class PlanReshape(Protocol):
    """``plan-reshape``: the plan reshaped (its steps), or None."""

    def __call__(self, question: str, plan: list[SubQuestion]) -> list[SubQuestion] | None: ...


class AnswerCheck(Protocol):
    """``check``: why an answer's type does not fit its question, or None."""

    def __call__(self, question: str, answer: str) -> str | None: ...


class Doubt(Protocol):
    """``doubt``: why an answer may have been read in the wrong place (worth one retry), or None."""

    def __call__(self, cited: Sequence[EvidencePassage], about: Sequence[BuiltOn]) -> str | None: ...


class Trust(Protocol):
    """``trust``: whether the question's shape lets a chain be trusted at a lower bar."""

    def __call__(self, question: str) -> bool: ...


class Assemble(Protocol):
    """``assemble``: the final answer decided in code instead of asking the model, or None."""

    def __call__(self, question: str, steps: Sequence[StepLike]) -> str | None: ...


class Constrain(Protocol):
    """``constrain``: what the model may answer (a grammar's two options), or None."""

    def __call__(self, question: str, steps: Sequence[StepLike]) -> tuple[str, str] | None: ...


RuleFn = Union[PlanCheck, PlanReshape, AnswerCheck, Doubt, Trust, Assemble, Constrain]  # what a rule is


@dataclass(frozen=True)
class Stage(Generic[R]):
    """A rule stage: its name, the role that consults it (and logs its firings), and its rules' type."""

    name: str
    role: str
    protocol: type

    @property
    def arity(self) -> int:
        """How many arguments a rule of this stage takes."""
        return len(inspect.signature(self.protocol.__call__).parameters) - 1  # less self


PLAN_CHECK: Stage[SendBack] = Stage("plan-check", "decomposer", PlanCheck)
PLAN_RESHAPE: Stage[list[SubQuestion]] = Stage("plan-reshape", "decomposer", PlanReshape)
CHECK: Stage[str] = Stage("check", "verifier", AnswerCheck)
DOUBT: Stage[str] = Stage("doubt", "verifier", Doubt)
TRUST: Stage[bool] = Stage("trust", "supervisor", Trust)
ASSEMBLE: Stage[str] = Stage("assemble", "assembler", Assemble)
CONSTRAIN: Stage[tuple[str, str]] = Stage("constrain", "assembler", Constrain)

BY_NAME: dict[str, Stage[Any]] = {s.name: s for s in (PLAN_CHECK, PLAN_RESHAPE, CHECK, DOUBT, TRUST, ASSEMBLE,
                                                      CONSTRAIN)}
