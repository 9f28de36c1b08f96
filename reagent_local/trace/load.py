"""Load one run from the event log into a :class:`~reagent_local.trace.model.Trace`.

Every event is read through ``core.events.decode``; an event it cannot read (a foreign
kind, a payload that does not fit) still becomes an item, shown generically.

The statement entries come from a fold of the state events that mirrors
``knowledge.StateFolder`` but remembers *which* assert event each held statement
came from, so a rollback can name the entries it discarded. LLM calls are logged
without the event they led to (``llm_calls.seq`` is empty), so they are linked by
wall time: a call belongs to the next event of the same agent (a judge call to the
next ``judgement`` or ``llm_error`` event, any other call to the next event that is
not a ``judgement``).
"""

from __future__ import annotations

import json
from typing import Any

from ..core import events as ev
from ..core.log import Checkpoint, Event, EventLog
from ..core.evidence import Origin
from .describe import summarize
from .model import (
    AGENT_ORDER, DISCARDED, HELD, RETRACTED, CheckpointMark, ConflictSet, Entry, FinalAnswer, Item, LLMCallInfo,
    Passage, Rollback, RunSummary, Trace,
)

Key = tuple[str, str]  # (agent, statement id)


def load_trace(log: EventLog, run_id: str) -> Trace:
    """Read a run's events, checkpoints and LLM calls and build its trace."""
    row = log.get_run(run_id)
    events = log.events(run_id)
    checkpoints = log.checkpoints(run_id)
    builder = _Builder(checkpoints)
    for event in events:
        builder.add(event)
    calls = link_calls(log.llm_calls(run_id), events)
    for call in calls:
        if call.event_seq is not None:
            builder.items[call.event_seq].calls.append(call.id)
    stats = row.get("stats") or {}
    final = FinalAnswer(answer=row.get("answer"), uncertain=row.get("uncertain"),
                        reason=str(stats.get("uncertain_reason") or ""),
                        subquestions=list(stats.get("subquestions") or []),
                        held=sorted(e.seq for e in builder.held.values()),
                        passages=list(stats.get("passages") or []),
                        rules=list(builder.answer.rules) if builder.answer else [],
                        trust=builder.trust.to_payload() if builder.trust else None)
    items = list(builder.items.values())
    return Trace(run=RunSummary.from_row(row), items=items, entries=builder.entries,
                 checkpoints=[_checkpoint_mark(c, builder.cp_agent.get(c.id, "system")) for c in checkpoints],
                 rollbacks=builder.rollbacks, conflict_sets=builder.conflict_sets(), passages=builder.passages,
                 calls=calls, final=final, agents=_lanes(items), stats=stats)


class _Builder:
    """Folds events into items and entries."""

    def __init__(self, checkpoints: list[Checkpoint]) -> None:
        self.items: dict[int, Item] = {}
        self.entries: dict[int, Entry] = {}
        self.held: dict[Key, Entry] = {}
        self.snapshots: dict[int, dict[Key, Entry]] = {}
        self.cp_rows = {c.id: c for c in checkpoints}
        self.cp_agent: dict[int, str] = {}
        self.rollbacks: list[Rollback] = []
        self.passages: dict[str, Passage] = {}
        self.round_of: dict[int, int] = {}
        self._conflicts: list[tuple[Item, ev.ConflictSet]] = []
        self.answer: ev.Answer | None = None
        self.trust: ev.TrustScored | None = None

    def add(self, e: Event) -> None:
        body = ev.decode(e)
        item = Item(seq=e.seq, time=e.time, agent=e.agent, type=e.type,
                    kind=body.kind if isinstance(body, ev.Message) else e.type, summary="", payload=e.payload,
                    parent_seq=e.parent_seq)
        self.items[e.seq] = item
        handler = getattr(self, "_on_" + e.type, None)
        if handler is not None and not isinstance(body, ev.UnknownEvent):
            handler(e, body, item)
        retracted = self.entries[item.entries[0]].text if isinstance(body, ev.Retract) and item.entries else None
        item.summary = summarize(body, self.cp_rows, retracted)

    # -- state events ------------------------------------------------------------
    def _on_assert(self, e: Event, body: ev.Assert, item: Item) -> None:
        s = body.statement
        entry = Entry(seq=e.seq, time=e.time, agent=e.agent, id=s.id, text=s.text, subquestion=s.subquestion,
                      subject=s.subject, relation=s.relation, value=s.value, confidence=s.confidence,
                      provenance=list(s.provenance), message_seq=e.parent_seq)
        self.entries[e.seq] = entry
        self.held[(e.agent, entry.id)] = entry
        item.entries.append(e.seq)
        item.passages = [pid for pid, _ in entry.provenance]
        if e.parent_seq in self.items:
            self.items[e.parent_seq].entries.append(e.seq)

    def _on_retract(self, e: Event, body: ev.Retract, item: Item) -> None:
        entry = self.held.pop((e.agent, body.statement_id), None)
        if entry is not None:
            entry.fate, entry.ended_seq, entry.ended_reason = RETRACTED, e.seq, body.reason
            item.entries.append(entry.seq)

    def _on_checkpoint(self, e: Event, body: ev.Checkpoint, item: Item) -> None:
        cid = body.checkpoint_id
        self.snapshots[cid] = dict(self.held)
        self.cp_agent[cid] = e.agent
        item.checkpoint_id = cid

    def _on_rollback_local(self, e: Event, body: ev.RollbackLocal, item: Item) -> None:
        self._rollback(e, body, item, lambda key: key[0] == e.agent, "local")

    def _on_rollback_global(self, e: Event, body: ev.RollbackGlobal, item: Item) -> None:
        self._rollback(e, body, item, lambda key: True, "global")

    def _rollback(self, e: Event, body: ev.RollbackLocal | ev.RollbackGlobal, item: Item, affected, scope: str) -> None:
        cid, reason = body.checkpoint_id, body.reason
        target = {k: v for k, v in self.snapshots.get(cid, {}).items() if affected(k)}
        discarded = [v for k, v in self.held.items() if affected(k) and target.get(k) is not v]
        restored = [v for k, v in target.items() if self.held.get(k) is not v]
        for entry in discarded:
            entry.fate, entry.ended_seq, entry.ended_reason = DISCARDED, e.seq, reason
            self._mark_abandoned(entry)
        for entry in restored:
            entry.fate, entry.ended_seq, entry.ended_reason = HELD, None, ""
            self.items[entry.seq].abandoned = False
        self.held = {k: v for k, v in self.held.items() if not affected(k)} | target
        cp = self.cp_rows.get(cid)
        item.checkpoint_id = cid
        item.entries = [x.seq for x in discarded]
        self.rollbacks.append(Rollback(seq=e.seq, time=e.time, scope=scope, agent=e.agent, checkpoint_id=cid,
                                       checkpoint_label=cp.label if cp else "?", checkpoint_time=cp.time if cp else 0,
                                       reason=reason, discarded=[x.seq for x in discarded],
                                       restored=[x.seq for x in restored]))

    def _mark_abandoned(self, entry: Entry) -> None:
        self.items[entry.seq].abandoned = True
        message = self.items.get(entry.message_seq) if entry.message_seq is not None else None
        if message is not None and all(self.entries[s].fate == DISCARDED for s in message.entries):
            message.abandoned = True

    # -- other events ----------------------------------------------------------------
    def _on_message(self, e: Event, body: ev.Message, item: Item) -> None:
        for p in body.payload.get("passages") or []:
            pid = str(p.get("id"))
            item.passages.append(pid)
            if pid not in self.passages:
                origin = Origin.from_dict(p.get("origin"))
                self.passages[pid] = Passage(id=pid, title=str(p.get("title", "")), text=str(p.get("text", "")),
                                             score=p.get("score"), suspicious=bool(p.get("suspicious")),
                                             origin=origin.to_dict() if origin else None)
        if not item.passages:
            item.passages = [pid for s in body.statements for pid, _ in s.provenance]

    def _on_round(self, e: Event, body: ev.Round, item: Item) -> None:
        number = body.round
        for seq in body.messages:
            self.round_of[seq] = number
            if seq in self.items:
                self.items[seq].round = number
        item.round = number

    def _on_conflict_set(self, e: Event, body: ev.ConflictSet, item: Item) -> None:
        self._conflicts.append((item, body))
        item.checkpoint_id = body.checkpoint

    def _on_answer(self, e: Event, body: ev.Answer, item: Item) -> None:
        self.answer = body

    def _on_trust(self, e: Event, body: ev.TrustScored, item: Item) -> None:
        self.trust = body

    def conflict_sets(self) -> list[ConflictSet]:
        """Conflict sets, each with the global rollback that followed it (if any)."""
        out = []
        for it, c in self._conflicts:
            after = next((r.seq for r in self.rollbacks if r.scope == "global" and r.seq > it.seq), None)
            out.append(ConflictSet(seq=it.seq, time=it.time, statement_ids=list(c.statements), texts=list(c.texts),
                                   discard_id=c.discard, reason=c.reason, checkpoint_id=c.checkpoint,
                                   rollback_seq=after, source=c.source, affected_steps=list(c.affected_steps),
                                   reassert=list(c.reassert)))
        return out


def _checkpoint_mark(c: Checkpoint, agent: str) -> CheckpointMark:
    held = [(a, s["id"], s["text"]) for a, stmts in (c.snapshot.get("agents") or {}).items() for s in stmts]
    return CheckpointMark(id=c.id, seq=c.seq, time=c.time, label=c.label, agent=agent, held=held)


def _lanes(items: list[Item]) -> list[str]:
    present = {it.agent for it in items if it.type not in ("round", "checkpoint")}
    known = [a for a in AGENT_ORDER if a in present]
    return known + sorted(present - set(known))


def call_purpose(output: str) -> str:
    """What a call was for, from the keys of its JSON output (the schemas are fixed)."""
    try:
        keys = set(json.loads(output))
    except (ValueError, TypeError):
        return "call"
    for purpose, key in (("decompose", "subquestions"), ("judge", "contradict"), ("reformulate", "query"),
                         ("answer", "passages")):
        if key in keys:
            return purpose
    if keys == {"question"}:
        return "rewrite"  # a follow-up made standalone (agents/rewriter.py)
    return "assemble" if keys == {"answer"} else "call"


def link_calls(rows: list[dict[str, Any]], events: list[Event]) -> list[LLMCallInfo]:
    """LLM calls with the event each one led to (see the module docstring for the rule)."""
    out = []
    for r in rows:
        purpose = call_purpose(r["output"])
        seq = r.get("seq")
        if seq is None:
            for e in events:
                if e.agent != r["agent"] or e.wall_time < r["wall_time"]:
                    continue
                judged = e.type == ev.Judgement.KIND
                if (judged or e.type == ev.LLMError.KIND) if purpose == "judge" else not judged:
                    seq = e.seq
                    break
        prompt = r["prompt"] if isinstance(r["prompt"], list) else [{"role": "user", "content": str(r["prompt"])}]
        out.append(LLMCallInfo(id=r["id"], agent=r["agent"], model=r["model"], purpose=purpose,
                               prompt=[{"role": str(m.get("role", "")), "content": str(m.get("content", ""))}
                                       for m in prompt],
                               output=r["output"], prompt_tokens=r["prompt_tokens"],
                               completion_tokens=r["completion_tokens"], seconds=r["seconds"], event_seq=seq))
    return out
