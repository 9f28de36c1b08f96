"""One question's run as the driver and its collaborators share it: who takes part, and what happened so far."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence

from ..agents.assembler import Assembly, StepResult
from ..agents.evidence import EvidencePassage, is_unknown
from ..agents.router import RouteDecision
from ..agents.supervisor import AGENT as SUPERVISOR, RoadsVerdict
from ..config import PipelineConfig
from ..core import events as ev
from ..core.channel import Channel, Message, RoundResult
from ..core.knowledge import Statement
from ..core.log import Checkpoint
from ..core.messages import MessageBody
from ..core.workspace import Workspace
from .plan import Plan, SubQuestion
from .steps import Step
from .team import Team


@dataclass
class RunState:
    """The run's roles, log, channel and settings, and its facts so far (steps, counts, signals, verdict)."""

    question: str
    team: Team
    ws: Workspace
    channel: Channel
    settings: PipelineConfig
    steps: list[Step] = field(default_factory=list)
    backtracks: dict[str, int] = field(default_factory=lambda: {"local": 0, "global": 0})
    challenges: int = 0
    signals: list[str] = field(default_factory=list)  # conflict signals that fired
    failed: tuple[Step, str] | None = None  # the first step of the plan that found no usable answer
    plan_checkpoint: Checkpoint | None = None  # taken after the first plan: where a new plan starts
    replanned: bool = False  # the plan was made again after a step failed
    earlier_cited: tuple[EvidencePassage, ...] = ()  # what the first plan's answers were read from
    fallback_cited: tuple[EvidencePassage, ...] = ()  # what a whole-question answer was read from
    first_answer: str | None = None  # the chain's first answer, before the roads were compared
    verdict: RoadsVerdict | None = None  # the supervisor's verdict when the two roads disagreed
    roads_rollbacks: int = 0  # global rollbacks the two roads caused (after the chain's first answer)
    # the learned router's decisions ({"router": ..., "stop": ..., "choose": ...}); None without a router
    route: dict[str, Any] | None = None
    whole_confidence: float | None = None  # the whole question's answer's token probability, once read

    def routed(self, decision: RouteDecision, reason: str) -> None:
        """Record one of the learned router's decisions: in the log (a ``route`` event) and for the Answer."""
        self.ws.record(SUPERVISOR, ev.Route(stage=decision.stage, probability=decision.probability,
                                            threshold=decision.threshold, taken=decision.taken, reason=reason,
                                            features=decision.features, contributions=decision.contributions))
        if self.route is not None:
            self.route[decision.stage] = {**decision.to_json(), "reason": reason}

    def post(self, sender: str, recipients: Sequence[str], body: MessageBody,
             statements: Sequence[Statement] = ()) -> None:
        """Post a message for the next round."""
        self.channel.post(Message.of(body, sender, tuple(recipients), tuple(statements)))

    def hold(self, agent: str, statement: Statement) -> Statement:
        """Put a statement into an agent's state (or return the copy it already holds)."""
        held = [s for s in self.ws.local_state(agent) if s.id == statement.id]
        return held[0] if held else self.ws.assert_statement(agent, statement)

    def signal(self, name: str, fired: bool, detail: str, step: int | None = None, **values: Any) -> None:
        """Record a conflict signal the run checked (``fired``: it found a problem)."""
        if fired:
            self.signals.append(name)
        self.ws.record(SUPERVISOR, ev.Signal(signal=name, fired=fired, step=step, detail=detail, values=values))

    def plan(self) -> list[SubQuestion]:
        """The steps of the current plan."""
        return [s.sub for s in self.steps]

    def answers(self) -> dict[int, str]:
        """The answers of the steps solved so far, by step."""
        return {s.index: s.answer for s in self.steps if s.done and s.answer}

    def results(self) -> list[StepResult]:
        """What the assembler reads of the steps solved so far."""
        return [s.result() for s in self.steps if s.done]

    def held(self) -> list[Statement]:
        """The statements of the steps solved so far (what the chain's answer stands on)."""
        return [s.statement for s in self.steps if s.done and s.statement is not None]

    def best_answer(self) -> str:
        """Best-supported answer so far: the latest answered step's answer."""
        answered = [s for s in self.steps if s.done and s.answer and not is_unknown(s.answer)]
        return answered[-1].answer if answered else "unknown"


class Loop(Protocol):
    """What the collaborators (global backtracking, the second road) ask of the driver."""

    def start(self, plan: Plan) -> None:
        """Take a plan: its steps replace the run's."""

    def solve_pending(self) -> None:
        """Solve every step not yet done."""

    def deliver(self) -> RoundResult:
        """Deliver a round and let each role act on its inbox."""

    def assemble(self) -> Assembly:
        """The assembler's answer from the steps solved."""
