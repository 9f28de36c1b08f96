"""One question's run: who takes part, what happened so far, and the one place each kind of change is made.

The driver alone calls the methods that change the run (``take_plan``, ``roll_back``,
``doubt_all``, ``hold``); its helpers read the run and return decisions
(decisions.py). ``notes`` is a record, not the loop's state: the signals that fired and the whole
question's confidence, written by whoever checks them and read only when the run closes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..agents.assembler import StepResult
from ..agents.decomposer import AGENT as DECOMPOSER
from ..agents.supervisor import AGENT as SUPERVISOR, RoadsVerdict, RollbackPlan
from ..agents.verifier import AGENT as VERIFIER
from ..config import PipelineConfig
from ..core import events as ev
from ..core.channel import Channel, Message
from ..core.evidence import EvidencePassage, is_unknown
from ..core.knowledge import Statement
from ..core.messages import MessageBody
from ..core.plan import Plan, SubQuestion
from ..core.workspace import Workspace
from .steps import Step
from .team import Team


@dataclass
class Notes:
    """What the run reports beside its answer: the conflict signals checked."""

    ws: Workspace
    signals: list[str] = field(default_factory=list)  # conflict signals that fired
    whole_confidence: float | None = None  # the whole question's answer's token probability, once read

    def signal(self, name: str, fired: bool, detail: str, step: int | None = None, **values: Any) -> None:
        """Record a conflict signal the run checked (``fired``: it found a problem)."""
        if fired:
            self.signals.append(name)
        self.ws.record(SUPERVISOR, ev.Signal(signal=name, fired=fired, step=step, detail=detail, values=values))


@dataclass
class RunState:
    """The run's roles, log, channel and settings, and its facts so far (steps, counts, verdict)."""

    question: str
    team: Team
    ws: Workspace
    channel: Channel
    settings: PipelineConfig
    steps: list[Step] = field(default_factory=list)
    backtracks: dict[str, int] = field(default_factory=lambda: {"local": 0, "global": 0})
    challenges: int = 0
    fallback_cited: tuple[EvidencePassage, ...] = ()  # what a whole-question answer was read from
    first_answer: str | None = None  # the chain's first answer, before the roads were compared
    verdict: RoadsVerdict | None = None  # the supervisor's verdict when the two roads disagreed
    roads_rollbacks: int = 0  # global rollbacks the two roads caused (after the chain's first answer)
    notes: Notes = field(init=False)

    def __post_init__(self) -> None:
        self.notes = Notes(self.ws)

    # -- the changes: each kind made here, and only the driver calls them -----------------
    def take_plan(self, plan: Plan) -> None:
        """The plan's steps are the run's; a checkpoint marks the plan in the log."""
        self.steps = [Step(sub) for sub in plan.steps]
        self.ws.record(DECOMPOSER, ev.Plan(subquestions=tuple(s.text for s in plan.steps),
                                           depends_on=tuple(s.depends_on for s in plan.steps)))
        self.ws.checkpoint("plan")

    def roll_back(self, plan: RollbackPlan) -> Step:
        """A global rollback: every agent back to the supervisor's checkpoint, the discarded answer never again, what the
        conflict does not touch re-asserted, the affected steps reopened. Returns the step whose answer was given up."""
        self.ws.record(SUPERVISOR, ev.ConflictSet(
            statements=tuple(s.id for s in plan.conflict_set), texts=tuple(s.text for s in plan.conflict_set),
            discard=plan.discard.id, reason=plan.reason, checkpoint=plan.checkpoint.id,
            affected_steps=plan.affected_steps, reassert=tuple(s.id for s in plan.reassert), source=plan.source))
        self.ws.rollback_global(plan.checkpoint.id, f"conflict: {plan.reason}")
        self.team.controller.count_rollback()
        self.backtracks["global"] += 1
        self.team.controller.penalise(plan.discard.agent)
        culprit = self.steps[plan.discard.subquestion]
        culprit.discard_answer()
        for statement in plan.reassert:  # unaffected statements stand as they were
            stamped = self.hold(statement.agent, statement)
            if statement.agent == VERIFIER:
                self.steps[statement.subquestion].statement = stamped
        for index in plan.affected_steps:
            self.steps[index].reopen()
        return culprit

    def doubt_all(self) -> None:
        """Every step stands, uncertain (a conflict that could not be settled)."""
        for step in self.steps:
            step.uncertain = True

    def post(self, sender: str, recipients: Sequence[str], body: MessageBody,
             statements: Sequence[Statement] = ()) -> None:
        """Post a message for the next round."""
        self.channel.post(Message.of(body, sender, tuple(recipients), tuple(statements)))

    def hand(self, sender: str, recipients: Sequence[str], body: MessageBody,
             statements: Sequence[Statement] = ()) -> Message:
        """Hand an inform over at once (logged, no round): its recipient reads it now."""
        return self.channel.hand(Message.of(body, sender, tuple(recipients), tuple(statements)))

    def hold(self, agent: str, statement: Statement) -> Statement:
        """Put a statement into an agent's state (or return the copy it already holds)."""
        held = [s for s in self.ws.local_state(agent) if s.id == statement.id]
        return held[0] if held else self.ws.assert_statement(agent, statement)

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
