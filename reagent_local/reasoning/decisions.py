"""What the loop's helper (the second road, roads.py) returns: the next thing the driver does.

A helper reads the run and decides; the driver carries the decision out (rounds on the
channel, rollbacks: every change of the run's state) and, where the decision
says ``then``, asks the helper what comes next with what happened. No helper calls the driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

from ..agents.assembler import Assembly
from ..agents.messages import Road
from ..agents.supervisor import RoadsVerdict
from ..core.evidence import Evidence, EvidencePassage


@dataclass(frozen=True)
class Done:
    """The run's answer; ``cited``: the passages a whole-question answer was read from (None: the steps')."""

    answer: Assembly
    cited: tuple[EvidencePassage, ...] | None = None


@dataclass(frozen=True)
class Meet:
    """The two roads assert their answers in one round; a disagreement reaches the supervisor, whose verdict
    (None: they did not meet as a conflict) goes to ``then``."""

    chain: Road
    whole: Road
    evidence: Evidence | None
    then: Callable[[RoadsVerdict | None], "Decision"]


@dataclass(frozen=True)
class Redo:
    """The chain was rolled back at its weakest step: solve the reopened steps, assemble, and give ``then`` the answer."""

    then: Callable[[Assembly], "Decision"]


Decision = Union[Done, Meet, Redo]
