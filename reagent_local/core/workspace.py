"""One run's reversible state: the event log, a logical clock, checkpoints and rollbacks.

Every change is an event appended to the log and then applied to the live state with
the same :class:`~reagent_local.core.knowledge.StateFolder` that :func:`replay` uses, so
the live state is, by construction, the fold of what was logged. A rollback is a new
event pointing at a checkpoint; nothing is deleted, so abandoned branches stay in
the log for traces.
"""

from __future__ import annotations

import threading
from typing import Any, Iterable, Mapping

from . import events as ev
from .clock import LogicalClock
from .conflicts import Verdict
from .knowledge import STATE_EVENTS, KnowledgeState, Statement, StateFolder, discarded_between, fold, with_time
from .log import Checkpoint, Event, EventLog

SYSTEM = "system"


class Workspace:
    """The facade the pipeline uses for one run; build with ``start`` (new run) or the constructor (resume)."""

    def __init__(self, log: EventLog, run_id: str) -> None:
        log.get_run(run_id)  # RunNotFoundError with a hint when it does not exist
        self.log = log
        self.run_id = run_id
        self._lock = threading.RLock()
        self._events: list[Event] = log.events(run_id)
        self._folder = StateFolder()
        for event in self._events:
            self._folder.apply(event)
        self._checkpoints: dict[int, Checkpoint] = {c.id: c for c in log.checkpoints(run_id)}
        self.clock = LogicalClock(self._events[-1].time if self._events else 0)
        if not self._checkpoints and not log.read_only:
            self.checkpoint("start", agent=SYSTEM)

    @classmethod
    def start(cls, log: EventLog, question: str, config: Mapping[str, Any], run_id: str | None = None) -> "Workspace":
        """Create a run in the log and its workspace (with a 'start' checkpoint at time 1)."""
        return cls(log, log.start_run(question, config, run_id))

    # -- events ----------------------------------------------------------------
    def _append(self, kind: str, agent: str, payload: Mapping[str, Any], parent_seq: int | None,
                time: int | None = None) -> Event:
        event = self.log.append(self.run_id, kind, agent=agent, payload=payload,
                                time=self.clock.tick() if time is None else time, parent_seq=parent_seq)
        self._folder.apply(event)
        self._events.append(event)
        return event

    def _log(self, agent: str, body: ev.EventBody, parent_seq: int | None, time: int | None = None) -> Event:
        return self._append(body.KIND, agent, body.to_payload(), parent_seq, time)

    def record(self, agent: str, body: ev.EventBody, parent_seq: int | None = None) -> Event:
        """Log a typed event that does not change the knowledge state (see core/events.py)."""
        if not isinstance(body, ev.EventBody) or ev.EVENT_TYPES.get(body.KIND) is not type(body):
            raise TypeError(f"record() takes a typed event of reagent_local.core.events, got {body!r}")
        if body.KIND in STATE_EVENTS:
            raise ValueError(f"{body.KIND!r} changes the state: use the Workspace method for it")
        with self._lock:
            return self._log(agent, body, parent_seq)

    def record_judgement(self, agent: str, a: Statement, b: Statement, verdict: Verdict, cached: bool) -> Event:
        """Log one judge result (a ConflictChecker ``on_judgement`` hook: ``partial(ws.record_judgement, agent)``)."""
        return self.record(agent, ev.Judgement(a=(a.agent, a.id), b=(b.agent, b.id), a_text=a.text, b_text=b.text,
                                               conflict=verdict.conflict, reason=verdict.reason, cached=cached))

    def events(self) -> list[Event]:
        """Every event of this run so far, in order."""
        return list(self._events)

    # -- state changes -----------------------------------------------------------
    def assert_statement(self, agent: str, statement: Statement, parent_seq: int | None = None) -> Statement:
        """Put a statement into ``agent``'s local state; returns it stamped with agent and logical time."""
        with self._lock:
            if self._folder.holds(agent, statement.id):
                raise ValueError(f"{agent} already holds statement {statement.id} ({statement.text!r})")
            stamped = with_time(statement, agent, self.clock.tick())
            self._log(agent, ev.Assert(statement=stamped), parent_seq, time=stamped.time)
            return stamped

    def retract(self, agent: str, statement_id: str, reason: str, parent_seq: int | None = None) -> Statement:
        """Take a statement out of ``agent``'s local state; returns the retracted statement."""
        with self._lock:
            if not self._folder.holds(agent, statement_id):
                raise ValueError(f"{agent} does not hold statement {statement_id}")
            statement = self._folder.get(agent, statement_id)
            self._log(agent, ev.Retract(statement_id=statement_id, reason=reason), parent_seq)
            return statement

    def checkpoint(self, label: str, agent: str = SYSTEM) -> Checkpoint:
        """Record the current logical time and a snapshot of every local state."""
        with self._lock:
            event, checkpoint = self.log.add_checkpoint(
                self.run_id, time=self.clock.tick(), label=label, snapshot=self._folder.state().to_snapshot(),
                agent=agent)
            # EventLog writes this payload inside its transaction: check it still fits the typed event
            ev.decode(event, strict=True)
            self._folder.apply(event)
            self._events.append(event)
            self._checkpoints[checkpoint.id] = checkpoint
            return checkpoint

    def _target(self, checkpoint_id: int) -> KnowledgeState:
        if checkpoint_id not in self._folder.snapshots:
            raise ValueError(f"checkpoint {checkpoint_id} is not a checkpoint of run {self.run_id}")
        return self._folder.snapshots[checkpoint_id]

    def rollback_local(self, agent: str, checkpoint_id: int, reason: str, parent_seq: int | None = None) -> list[Statement]:
        """Revert one agent's local state to a checkpoint's snapshot; returns the statements it discarded."""
        with self._lock:
            target = self._target(checkpoint_id).local(agent)
            before = self._folder.local(agent)
            ids_after = {s.id for s in target}
            ids_before = {s.id for s in before}
            discarded = [s for s in before if s.id not in ids_after]
            self._log(agent, ev.RollbackLocal(
                checkpoint_id=checkpoint_id, reason=reason, discarded=tuple(s.id for s in discarded),
                restored=tuple(s.id for s in target if s.id not in ids_before)), parent_seq)
            return discarded

    def rollback_global(self, checkpoint_id: int, reason: str, agent: str = "supervisor",
                        parent_seq: int | None = None) -> list[Statement]:
        """Revert every agent to a checkpoint's snapshot; returns every statement discarded."""
        with self._lock:
            target, before = self._target(checkpoint_id), self._folder.state()
            discarded = discarded_between(before, target)
            restored = discarded_between(target, before)
            self._log(agent, ev.RollbackGlobal(
                checkpoint_id=checkpoint_id, reason=reason, discarded=tuple((s.agent, s.id) for s in discarded),
                restored=tuple((s.agent, s.id) for s in restored)), parent_seq)
            return discarded

    # -- reading -------------------------------------------------------------------
    def state(self) -> KnowledgeState:
        """Every agent's local state now."""
        return self._folder.state()

    def local_state(self, agent: str) -> tuple[Statement, ...]:
        """The statements ``agent`` holds now, in the order they entered."""
        return self._folder.local(agent)

    def global_state(self) -> tuple[Statement, ...]:
        """The union of all local states now, ordered by logical time."""
        return self._folder.state().global_state()

    def holds(self, agent: str, statement_id: str) -> bool:
        """True when ``agent`` holds that statement now."""
        return self._folder.holds(agent, statement_id)

    def holders(self, statement_id: str) -> list[str]:
        """The agents holding that statement now, sorted."""
        return sorted(a for a in self._folder.agents() if self._folder.holds(a, statement_id))

    def checkpoints(self) -> list[Checkpoint]:
        """This run's checkpoints in order."""
        return sorted(self._checkpoints.values(), key=lambda c: c.seq)

    def state_at(self, time: int) -> KnowledgeState:
        """The state right after logical ``time``: the last snapshot at or before it, plus the events after it."""
        with self._lock:
            base = [c for c in self.checkpoints() if c.time <= time]
            start = self._folder.snapshots[base[-1].id] if base else KnowledgeState()
            after = base[-1].time if base else 0
            earlier = {c.id: self._folder.snapshots[c.id] for c in base}
            folder = StateFolder(start, earlier)
            for event in self._events:
                if after < event.time <= time:
                    folder.apply(event)
            return folder.state()

    def checkpoint_before(self, statements: Iterable[Statement]) -> Checkpoint:
        """The last checkpoint taken before the earliest of these statements entered."""
        times = [s.time for s in statements]
        if not times or any(t is None for t in times):
            raise ValueError("checkpoint_before needs asserted statements (with a logical time)")
        earlier = [c for c in self.checkpoints() if c.time < min(times)]
        if not earlier:
            raise ValueError(f"no checkpoint before time {min(times)} in run {self.run_id}")
        return earlier[-1]

    def finish(self, answer: str | None, status: str, stats: Mapping[str, Any], **kwargs: Any) -> None:
        """Close the run in the log (see EventLog.finish_run)."""
        self.log.finish_run(self.run_id, answer, status, stats, **kwargs)


def replay(log: EventLog, run_id: str, until: int | None = None) -> KnowledgeState:
    """Rebuild a run's state purely from its logged events (the fold), optionally up to a logical time."""
    log.get_run(run_id)
    return fold(log.events(run_id), until=until)
