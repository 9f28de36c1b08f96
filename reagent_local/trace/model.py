"""The plain data model of one run's trace: what the terminal and HTML views draw.

Built from the event log by :func:`reagent_local.trace.load.load_trace`; every class
here is a dataclass of plain values, and ``Trace.to_dict()`` is the JSON the HTML page
embeds. An *entry* is one statement entering one agent's state (one ``assert`` event,
keyed by that event's seq); the same statement asserted again after a rollback is a
new entry, so an abandoned branch and its redo stay distinguishable.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

HELD, DISCARDED, RETRACTED = "held", "discarded", "retracted"
# Lane order of the agents (others follow, sorted).
AGENT_ORDER = ("decomposer", "retriever", "verifier", "assembler", "supervisor", "controller", "channel", "kg",
               "system")


@dataclass(frozen=True)
class RunSummary:
    """One run as `reagent trace list` shows it."""

    run_id: str
    question: str
    status: str
    answer: str | None
    uncertain: bool | None
    started_at: float
    finished_at: float | None
    seconds: float | None
    llm_calls: int | None
    backtracks_local: int | None
    backtracks_global: int | None
    events: int
    error: str | None = None  # why a failed or interrupted run ended
    last_event: str | None = None  # "agent type" of its last event: how far it got

    @property
    def progress(self) -> str:
        """How far a run got, e.g. "12 events, last: verifier message"."""
        return f"{self.events} events" + (f", last: {self.last_event}" if self.last_event else "")

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> "RunSummary":
        """Build from an ``EventLog.runs()`` / ``get_run()`` row."""
        stats = row.get("stats") or {}
        backtracks = stats.get("backtracks") or {}
        seconds = stats.get("seconds")
        if seconds is None and row.get("finished_at") is not None:
            seconds = row["finished_at"] - row["started_at"]
        return cls(run_id=row["run_id"], question=row["question"], status=row["status"], answer=row.get("answer"),
                   uncertain=row.get("uncertain"), started_at=row["started_at"], finished_at=row.get("finished_at"),
                   seconds=seconds, llm_calls=stats.get("llm_calls"), backtracks_local=backtracks.get("local"),
                   backtracks_global=backtracks.get("global"), events=int(row.get("events") or 0),
                   error=row.get("error"), last_event=row.get("last_event"))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict."""
        return asdict(self)


@dataclass
class Entry:
    """One statement entering one agent's local state, and what became of it."""

    seq: int  # the assert event
    time: int
    agent: str
    id: str
    text: str
    subquestion: Any = None
    subject: str | None = None
    relation: str | None = None
    value: str | None = None
    confidence: float = 1.0
    provenance: list[tuple[str, float]] = field(default_factory=list)
    message_seq: int | None = None  # the message it was applied from
    fate: str = HELD  # held | discarded (by a rollback) | retracted
    ended_seq: int | None = None  # the rollback or retract that took it out
    ended_reason: str = ""


@dataclass
class Item:
    """One logged event as the trace shows it."""

    seq: int
    time: int
    agent: str
    type: str
    kind: str  # the message kind for messages, else the event type
    summary: str  # one line of plain text
    payload: dict[str, Any]
    parent_seq: int | None = None
    round: int | None = None  # the delivery round a message went out in
    entries: list[int] = field(default_factory=list)  # entries it created, took out, or concerns
    passages: list[str] = field(default_factory=list)  # passage ids it carries or cites
    calls: list[int] = field(default_factory=list)  # LLM calls behind it
    checkpoint_id: int | None = None  # a checkpoint's own id, or a rollback's target
    abandoned: bool = False  # its statements were later discarded by a rollback


@dataclass(frozen=True)
class CheckpointMark:
    """A checkpoint and the statements held when it was taken."""

    id: int
    seq: int
    time: int
    label: str
    agent: str
    held: list[tuple[str, str, str]]  # (agent, statement id, text)


@dataclass(frozen=True)
class Rollback:
    """A local or global rollback with its target checkpoint and what it discarded."""

    seq: int
    time: int
    scope: str  # local | global
    agent: str
    checkpoint_id: int
    checkpoint_label: str
    checkpoint_time: int
    reason: str
    discarded: list[int]  # entry seqs
    restored: list[int]


@dataclass(frozen=True)
class ConflictSet:
    """A minimal conflict set the supervisor found, the statement it gave up and the rollback that followed."""

    seq: int
    time: int
    statement_ids: list[str]
    texts: list[str]
    discard_id: str | None
    reason: str
    checkpoint_id: int | None
    rollback_seq: int | None
    source: str = ""  # who found it (channel, assembler, two-roads, ...); "" in older logs
    affected_steps: list[int] = field(default_factory=list)  # 0-based steps solved again
    reassert: list[str] = field(default_factory=list)  # statement ids re-asserted after the rollback


@dataclass(frozen=True)
class Passage:
    """A passage a retriever handed on, as first seen in the run."""

    id: str
    title: str
    text: str
    score: float | None
    suspicious: bool
    origin: dict[str, Any] | None = None  # Origin.to_dict(): file, heading, page or lines, label (folders)


@dataclass(frozen=True)
class LLMCallInfo:
    """One logged LLM call: the rendered prompt, the raw output and the event it led to."""

    id: int
    agent: str | None
    model: str
    purpose: str  # decompose | answer | judge | reformulate | assemble | call
    prompt: list[dict[str, str]]
    output: str
    prompt_tokens: int | None
    completion_tokens: int | None
    seconds: float | None
    event_seq: int | None


@dataclass(frozen=True)
class FinalAnswer:
    """The run's answer, the statements still held at the end and the passages cited."""

    answer: str | None
    uncertain: bool | None
    reason: str
    subquestions: list[str]
    held: list[int]  # entry seqs held at the end
    passages: list[str]
    rules: list[str] = field(default_factory=list)  # question-shape rules named by the 'answer' event
    # the supervisor's trust score (the 'trust' event's payload); None in logs written before it
    trust: dict[str, Any] | None = None


@dataclass
class Trace:
    """Everything the views need about one run."""

    run: RunSummary
    items: list[Item]
    entries: dict[int, Entry]
    checkpoints: list[CheckpointMark]
    rollbacks: list[Rollback]
    conflict_sets: list[ConflictSet]
    passages: dict[str, Passage]
    calls: list[LLMCallInfo]
    final: FinalAnswer
    agents: list[str]
    stats: dict[str, Any] = field(default_factory=dict)

    def item(self, seq: int) -> Item:
        """The item of one event seq (KeyError if none)."""
        for it in self.items:
            if it.seq == seq:
                return it
        raise KeyError(seq)

    def checkpoint(self, checkpoint_id: int) -> CheckpointMark | None:
        """A checkpoint by id, or None."""
        return next((c for c in self.checkpoints if c.id == checkpoint_id), None)

    def call(self, call_id: int) -> LLMCallInfo | None:
        """An LLM call by id, or None."""
        return next((c for c in self.calls if c.id == call_id), None)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (entry keys become strings)."""
        data = asdict(self)
        data["entries"] = {str(k): v for k, v in data["entries"].items()}
        data["format"] = "reagent-trace"
        data["version"] = 1
        return data
