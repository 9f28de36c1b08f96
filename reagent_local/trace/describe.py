"""One-line plain-text summaries of events, shared by the terminal and HTML views."""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from ..core.log import Checkpoint
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


def _checkpoint(cid: Any, checkpoints: Mapping[int, Checkpoint]) -> str:
    cp = checkpoints.get(int(cid)) if cid is not None else None
    return f"checkpoint #{cid} \"{clean(cp.label)}\" (t={cp.time})" if cp else f"checkpoint #{cid}"


def _message(item: Item) -> str:
    p = item.payload
    body: dict[str, Any] = p.get("payload") or {}
    to = ", ".join(p.get("recipients") or []) or "?"
    head = f"{item.kind} → {to}"
    texts = [quoted(s.get("text", ""), 80) for s in p.get("statements") or []]
    if "subquestions" in body:
        subs = "; ".join(f"{i}. {clean(q, 70)}" for i, q in enumerate(body["subquestions"], 1))
        return f"{head}: sub-questions {subs}"
    if "passages" in body:
        titles = ", ".join(clean(x.get("title", ""), 40) for x in body["passages"]) or "none"
        step = body.get("step")
        where = f"step {step + 1}, " if isinstance(step, int) else ""
        line = f"{head}: {len(body['passages'])} passages ({where}query {quoted(body.get('query', ''), 70)}): {titles}"
        facts = body.get("facts") or []
        if facts:
            line += f"; {len(facts)} infobox facts: " + "; ".join(clean(f, 60) for f in facts[:4])
            line += " ..." if len(facts) > 4 else ""
        return line
    if item.kind == "reject":
        reason = body.get("reason") or body.get("escalation") or ""
        return f"{head}: {' + '.join(texts)}" + (f" — {clean(reason, 120)}" if reason else "")
    if texts:
        return f"{head}: {' + '.join(texts)}"
    if "answer" in body:
        return f"{head}: answer {quoted(body['answer'])}"
    return f"{head}: {clean(json.dumps(body, ensure_ascii=False), 120)}"


def describe(item: Item, entries: Mapping[int, Entry], checkpoints: Mapping[int, Checkpoint]) -> str:
    """A one-line summary of an event."""
    p, kind = item.payload, item.type
    if kind == "message":
        return _message(item)
    if kind == "round":
        applied, escalated = len(p.get("applied") or []), len(p.get("escalated") or [])
        return f"round {p.get('round')}: {applied} applied, {escalated} escalated"
    if kind == "checkpoint":
        return f"checkpoint #{p.get('checkpoint_id')} \"{clean(p.get('label', ''))}\""
    if kind == "assert":
        s = p.get("statement") or {}
        return f"holds {quoted(s.get('text', ''))} (confidence {float(s.get('confidence', 1.0)):.2f})"
    if kind == "retract":
        entry = entries.get(item.entries[0]) if item.entries else None
        what = quoted(entry.text) if entry else str(p.get("statement_id"))
        return f"drops {what}: {clean(p.get('reason', ''), 120)}"
    if kind in ("rollback_local", "rollback_global"):
        scope = "LOCAL" if kind == "rollback_local" else "GLOBAL"
        return (f"{scope} ROLLBACK to {_checkpoint(p.get('checkpoint_id'), checkpoints)}, "
                f"discards {len(item.entries)}: {clean(p.get('reason', ''), 140)}")
    if kind == "escalate":
        texts = " vs ".join(quoted(s.get("text", ""), 60) for s in p.get("statements") or [])
        return f"escalates to {p.get('to', 'supervisor')}: {texts}: {clean(p.get('reason', ''), 100)}"
    if kind == "judgement":
        verdict = "CONFLICT" if p.get("conflict") else "compatible"
        cached = " (cached)" if p.get("cached") else ""
        return f"judge: {quoted(p.get('a_text', ''), 50)} vs {quoted(p.get('b_text', ''), 50)} → {verdict}{cached}"
    if kind == "conflict_set":
        texts = ", ".join(quoted(t, 70) for t in p.get("texts") or [])
        return (f"MINIMAL CONFLICT SET {{{texts}}}; gives up {p.get('discard')}: {clean(p.get('reason', ''), 120)}")
    if kind == "override":
        answer = f" {quoted(p['answer'])}" if p.get("answer") else ""
        return f"override, step {int(p.get('step', 0)) + 1}: {clean(p.get('decision', ''))}{answer}"
    if kind == "fallback_answer":
        if p.get("rejected"):
            return f"no answer through the plan; the whole question's answer {quoted(p['rejected'])} was rejected: {clean(p.get('reason', ''))}"
        return f"no answer through the plan; answered the whole question: {quoted(p.get('answer', ''))}"
    if kind == "skipped":
        return f"skips step {int(p.get('step', 0)) + 1}: {clean(p.get('reason', ''))}"
    if kind == "budget_exhausted":
        return f"budget exhausted ({clean(p.get('what', ''))}); best answer {quoted(p.get('answer', ''))}"
    if kind in ("invalid_output", "llm_error", "decomposition_failed"):
        return f"{kind.replace('_', ' ')}: {clean(p.get('error', ''), 140)}"
    return f"{kind}: {clean(json.dumps(p, ensure_ascii=False), 140)}"
