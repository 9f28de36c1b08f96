"""One-line plain-text summaries of events, shared by the terminal and HTML views and the scripts."""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from ..core import events as ev
from ..core.log import Checkpoint
from ..retrieval.passages import source_index
from .model import Entry, Item

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: Any, limit: int | None = None) -> str:
    """Text safe for one terminal line: control characters dropped, whitespace collapsed, cut to ``limit``."""
    out = " ".join(_CONTROL.sub("", str(text)).split())
    if limit is not None and len(out) > limit:
        out = out[: max(limit - 1, 0)] + "…"
    return out


def quoted(text: Any, limit: int = 90) -> str:
    """'"text"' cut to ``limit`` characters."""
    return f"\"{clean(text, limit)}\""


def _checkpoint(cid: int, checkpoints: Mapping[int, Checkpoint]) -> str:
    cp = checkpoints.get(cid)
    return f"checkpoint #{cid} \"{clean(cp.label)}\" (t={cp.time})" if cp else f"checkpoint #{cid}"


def _step(step: int | None) -> str:
    return f" step {step + 1}" if step is not None else ""


def _passage_name(passage: Mapping[str, Any]) -> str:
    """A passage in a one-line summary: its title, or for a passage of a folder its file and page or lines;
    its index in front when several were searched."""
    index = source_index(str(passage.get("id", "")))
    head = f"{index}: " if index else ""
    origin = passage.get("origin")
    if isinstance(origin, Mapping) and origin.get("path"):
        from ..core.evidence import Origin

        found = Origin.from_dict(origin)
        return clean(head + (f"{found.path} {found.place()}".strip() if found else str(origin["path"])), 60)
    return clean(head + passage.get("title", ""), 40)


def _message(m: ev.Message) -> str:
    body: Mapping[str, Any] = m.payload
    head = f"{m.kind} → {', '.join(m.recipients) or '?'}"
    texts = [quoted(s.text, 80) for s in m.statements]
    if "subquestions" in body:
        subs = "; ".join(f"{i}. {clean(q, 70)}" for i, q in enumerate(body["subquestions"], 1))
        return f"{head}: sub-questions {subs}"
    if "passages" in body:
        titles = ", ".join(_passage_name(x) for x in body["passages"]) or "none"
        step = body.get("step")
        where = f"step {step + 1}, " if isinstance(step, int) else ""
        line = f"{head}: {len(body['passages'])} passages ({where}query {quoted(body.get('query', ''), 70)}): {titles}"
        facts = body.get("facts") or []
        if facts:  # each fact a line of text (older logs) or a typed fact with its text
            texts = [f.get("text", "") if isinstance(f, Mapping) else f for f in facts[:4]]
            line += f"; {len(facts)} infobox facts: " + "; ".join(clean(t, 60) for t in texts)
            line += " ..." if len(facts) > 4 else ""
        return line
    if m.kind == "reject":
        reason = body.get("reason") or "; ".join(body.get("reasons") or []) or body.get("escalation") or ""
        return f"{head}: {' + '.join(texts)}" + (f" — {clean(reason, 120)}" if reason else "")
    if m.kind == "inform" and "answer" in body:  # the assembler's answer, with the statements it stood on
        return f"{head}: answer {quoted(body['answer'])}"
    if texts:
        return f"{head}: {' + '.join(texts)}"
    if "answer" in body:
        return f"{head}: answer {quoted(body['answer'])}"
    return f"{head}: {clean(json.dumps(body, ensure_ascii=False, default=str), 120)}"


def _plan(p: ev.Plan) -> str:
    steps = []
    for i, question in enumerate(p.subquestions):
        uses = p.depends_on[i] if i < len(p.depends_on) else ()
        steps.append(f"{i + 1}. {clean(question, 70)}" + (f" (uses {', '.join(f'#{k + 1}' for k in uses)})" if uses else ""))
    head = f"plan (attempt {p.attempt})" if p.attempt != 1 else "plan"
    return f"{head}: {'; '.join(steps) or 'no steps'}" + (f" — {clean(p.reason, 100)}" if p.reason else "")


def _signal(s: ev.Signal) -> str:
    detail = s.detail or (json.dumps(s.values, ensure_ascii=False, default=str) if s.values else "")
    head = f"signal {clean(s.signal)}{_step(s.step)}" + ("" if s.fired else " (no conflict)")
    return f"{head}: {clean(detail, 140)}" if detail else head


def trust_text(probability: float | None, threshold: float, label: str, grounded: bool) -> str:
    """The trust score in a few words: "trust 0.62, trusted (threshold 0.54)", and "not found in the index"."""
    head = "trust: no model" if probability is None else \
        f"trust {probability:.2f}, {label} (threshold {threshold:.2f})"
    return head + ("; not found in the index: no cited passage contains the answer" if not grounded else "")


def _trust(t: ev.TrustScored) -> str:
    """The supervisor's trust score, with the three features that pushed it most."""
    top = sorted(t.contributions.items(), key=lambda kv: -abs(kv[1]))[:3]
    why = ", ".join(f"{clean(k)} {v:+.2f}" for k, v in top)
    return trust_text(t.probability, t.threshold, clean(t.label), t.grounded) + (f" (most: {why})" if why else "")


def summarize(body: ev.Body, checkpoints: Mapping[int, Checkpoint] | None = None,
              retracted_text: str | None = None) -> str:
    """A one-line summary of a decoded event; ``checkpoints`` and ``retracted_text`` add names where known."""
    cps = checkpoints or {}
    match body:
        case ev.Message():
            return _message(body)
        case ev.Round():
            return f"round {body.round}: {len(body.applied)} applied, {len(body.escalated)} escalated"
        case ev.Checkpoint():
            return f"checkpoint #{body.checkpoint_id} \"{clean(body.label)}\""
        case ev.Assert():
            return f"holds {quoted(body.statement.text)} (confidence {body.statement.confidence:.2f})"
        case ev.Retract():
            what = quoted(retracted_text) if retracted_text is not None else body.statement_id
            return f"drops {what}: {clean(body.reason, 120)}"
        case ev.RollbackLocal() | ev.RollbackGlobal():
            scope = "LOCAL" if isinstance(body, ev.RollbackLocal) else "GLOBAL"
            return (f"{scope} ROLLBACK to {_checkpoint(body.checkpoint_id, cps)}, "
                    f"discards {len(body.discarded)}: {clean(body.reason, 140)}")
        case ev.Escalate():
            texts = " vs ".join(quoted(s.text, 60) for s in body.statements)
            why = "" if body.kind == "concurrent" else f" ({clean(body.kind)} from {clean(body.source)})"
            return f"escalates to {body.to}{why}: {texts}: {clean(body.reason, 100)}"
        case ev.Judgement():
            verdict = "CONFLICT" if body.conflict else "compatible"
            cached = " (cached)" if body.cached else ""
            return f"judge: {quoted(body.a_text, 50)} vs {quoted(body.b_text, 50)} → {verdict}{cached}"
        case ev.ConflictSet():
            texts = ", ".join(quoted(t, 70) for t in body.texts)
            source = f" (from {clean(body.source)})" if body.source else ""
            redo = f"; redoes step(s) {', '.join(str(s + 1) for s in body.affected_steps)}" if body.affected_steps else ""
            return (f"MINIMAL CONFLICT SET{source} {{{texts}}}; gives up {body.discard}: "
                    f"{clean(body.reason, 120)}{redo}")
        case ev.Override():
            answer = f" {quoted(body.answer)}" if body.answer else ""
            return f"override, step {body.step + 1}: {clean(body.decision)}{answer}"
        case ev.FallbackAnswer():
            if body.rejected:
                return (f"no answer through the plan; the whole question's answer {quoted(body.rejected)} "
                        f"was rejected: {clean(body.reason)}")
            return f"no answer through the plan; answered the whole question: {quoted(body.answer)}"
        case ev.Skipped():
            return f"skips step {body.step + 1}: {clean(body.reason)}"
        case ev.BudgetExhausted():
            return f"budget exhausted ({clean(body.what)}); best answer {quoted(body.answer)}"
        case ev.InvalidOutput() | ev.LLMError() | ev.DecompositionFailed():
            return f"{body.KIND.replace('_', ' ')}: {clean(body.error, 140)}"
        case ev.Plan():
            return _plan(body)
        case ev.Decision():
            reasons = f" — {clean('; '.join(body.reasons), 120)}" if body.reasons else ""
            return (f"decision step {body.step + 1}: {body.decision.replace('_', ' ')} {quoted(body.answer, 60)} "
                    f"(confidence {body.confidence:.2f}){reasons}")
        case ev.RuleFired():
            where = clean(body.stage) + (f", step {body.step + 1}" if body.step is not None else "")
            return f"rule {clean(body.rule)} fired ({where})" + (f": {clean(body.detail, 120)}" if body.detail else "")
        case ev.Signal():
            return _signal(body)
        case ev.TrustScored():
            return _trust(body)
        case ev.Rewrite():
            where = f"conversation {clean(body.conversation)}, turn {body.turn}" if body.conversation else f"turn {body.turn}"
            if body.error:
                return f"rewrite ({where}): kept {quoted(body.question)} as asked: {clean(body.error, 100)}"
            if body.standalone.strip() == body.question.strip():
                return f"rewrite ({where}): {quoted(body.question)} stands alone"
            return f"rewrite ({where}): {quoted(body.question)} → {quoted(body.standalone, 160)}"
        case ev.Answer():
            line = f"answer {quoted(body.answer)}"
            line += f" (uncertain: {clean(body.reason) or 'yes'})" if body.uncertain else ""
            return line + (f"; rules: {', '.join(clean(r) for r in body.rules)}" if body.rules else "")
        case ev.UnknownEvent():
            bad = f" (unreadable: {clean(body.error, 60)})" if body.error else ""
            return f"{body.kind}{bad}: {clean(json.dumps(body.payload, ensure_ascii=False, default=str), 140)}"
    return f"{body.KIND}: {clean(json.dumps(body.to_payload(), ensure_ascii=False, default=str), 140)}"


def describe(item: Item, entries: Mapping[int, Entry], checkpoints: Mapping[int, Checkpoint]) -> str:
    """A one-line summary of a trace item (its event decoded, with the names the trace knows)."""
    body = ev.decode(item)
    entry = entries.get(item.entries[0]) if item.entries else None
    text = entry.text if isinstance(body, ev.Retract) and entry is not None else None
    return summarize(body, checkpoints, text)
