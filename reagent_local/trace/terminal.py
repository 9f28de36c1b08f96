"""The terminal views: the run list and a run's timeline, drawn with rich.

All text from the log goes into ``rich.text.Text`` objects (never markup strings),
with control characters removed, so a passage cannot style or move the terminal.
Colours come from rich's terminal detection (none when piped or with NO_COLOR).
"""

from __future__ import annotations

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ..core import events as ev
from .describe import clean, trust_text
from .model import DISCARDED, RETRACTED, Item, RunSummary, Trace

AGENT_STYLE = {"decomposer": "blue", "retriever": "cyan", "verifier": "green", "assembler": "magenta",
               "supervisor": "red", "controller": "yellow"}
GLYPH = {"checkpoint": ("◆", "bold cyan"), "rollback_local": ("↶", "bold yellow"),
         "rollback_global": ("↶", "bold red"), "conflict_set": ("⊗", "bold red"), "escalate": ("⚠", "red"),
         "assert": ("+", "green"), "retract": ("−", "yellow"), "judgement": ("?", ""),
         "assert_msg": ("●", ""), "inform": ("○", ""), "reject": ("✗", "red"), "challenge": ("!", "yellow"),
         "plan": ("≡", "blue"), "rule_fired": ("§", "magenta"), "signal": ("≠", "bold red"), "signal_quiet": ("=", "dim"),
         "trust": ("◆", "bold magenta"),
         "rewrite": ("✎", "bold blue"),
         "answer": ("★", "bold green"), "accept": ("✓", "green"), "retry": ("↻", "yellow"), "give_up": ("✗", "red")}
HIDDEN = {"round"}  # a round's effects are shown as the events that follow it


_STATUS_STYLE = {"ok": "green", "running": "cyan", "interrupted": "red", "failed": "red", "cancelled": "magenta"}
_UNFINISHED = ("running", "interrupted", "failed", "cancelled")  # statuses of runs that ended without an answer


def _unfinished(r: RunSummary) -> str:
    """The answer cell of a run without an answer: how far it got."""
    return f"- ({r.progress})" if r.status in _UNFINISHED else "-"


def runs_table(runs: list[RunSummary]) -> Table:
    """The `trace list` table."""
    table = Table(box=None, header_style="bold", pad_edge=False, expand=True)  # ratio columns need expand
    for name, kw in (("run", {"no_wrap": True, "min_width": 22}), ("status", {"no_wrap": True}),
                     ("s", {"justify": "right"}), ("calls", {"justify": "right"}), ("back l/g", {"justify": "right"}),
                     ("question", {"overflow": "ellipsis", "no_wrap": True, "ratio": 3, "min_width": 12}),
                     ("answer", {"overflow": "ellipsis", "no_wrap": True, "ratio": 1, "min_width": 8})):
        table.add_column(name, **kw)
    for r in runs:
        status = Text(r.status, style=_STATUS_STYLE.get(r.status, "yellow"))
        if r.uncertain:
            status.append("?", style="yellow")
        back = "-" if r.backtracks_local is None else f"{r.backtracks_local}/{r.backtracks_global}"
        table.add_row(r.run_id, status, "-" if r.seconds is None else f"{r.seconds:.1f}",
                      "-" if r.llm_calls is None else str(r.llm_calls), back, Text(clean(r.question)),
                      Text(clean(r.answer) if r.answer is not None else _unfinished(r)))
    return table


def _header(trace: Trace) -> Text:
    r, s = trace.run, trace.stats
    text = Text()
    text.append("run ", style="dim").append(r.run_id, style="bold").append("  ")
    text.append(r.status, style=_STATUS_STYLE.get(r.status, "yellow"))
    if r.status in _UNFINISHED:
        text.append(f" ({r.progress})", style="dim")
    if r.error:
        text.append(f"  {clean(r.error)}", style="red")
    if r.seconds is not None:
        text.append(f"  {r.seconds:.1f} s")
    if r.llm_calls is not None:
        text.append(f"  {r.llm_calls} LLM calls, {s.get('prompt_tokens', 0)}+{s.get('completion_tokens', 0)} tokens")
    local = sum(1 for b in trace.rollbacks if b.scope == "local")
    discarded = sum(len(b.discarded) for b in trace.rollbacks)
    plural = "s" if discarded != 1 else ""
    text.append(f"\nrollbacks: {local} local, {len(trace.rollbacks) - local} global ({discarded} statement{plural} "
                f"discarded); conflict sets: {len(trace.conflict_sets)}\n")
    text.append("Q ", style="bold").append(clean(r.question))
    return text


def _glyph(item: Item) -> Text:
    key = "assert_msg" if item.type == "message" and item.kind == "assert" else (
        item.kind if item.type == "message" else item.type)
    if item.type in (ev.Decision.KIND, ev.Signal.KIND):
        body = ev.decode(item)
        if isinstance(body, ev.Decision):
            key = body.decision
        elif isinstance(body, ev.Signal) and not body.fired:
            key = "signal_quiet"
    glyph, style = GLYPH.get(key, ("·", "dim"))
    return Text(glyph, style=style)


def _folded(item: Item, trace: Trace) -> bool:
    """An assert applied from a message is shown on the message's row."""
    return item.type == "assert" and item.parent_seq is not None and any(
        it.seq == item.parent_seq and it.type == "message" for it in trace.items)


def _fate(item: Item, trace: Trace) -> Text:
    """What became of the statements an assert (message) put into a state."""
    text = Text()
    for seq in item.entries if item.type in ("message", "assert") else ():
        e = trace.entries[seq]
        text.append(f"  ⇒ held by {e.agent} from t={e.time}", style="green")
        if e.fate == DISCARDED:
            text.append(f"; abandoned: discarded by the rollback at t={trace.item(e.ended_seq).time}",
                        style="bold yellow")
        elif e.fate == RETRACTED:
            text.append(f"; retracted at t={trace.item(e.ended_seq).time}", style="yellow")
    return text


def _body(item: Item, trace: Trace) -> Text:
    style = {"rollback_local": "bold yellow", "rollback_global": "bold red", "conflict_set": "bold red",
             "checkpoint": "cyan", "answer": "bold"}.get(item.type, "")
    text = Text(item.summary, style=style)
    if item.abandoned:
        text.stylize("dim strike")
    text.append_text(_fate(item, trace))
    for line in _details(item, trace):
        text.append("\n")
        text.append_text(line)
    return text


def _num(value: int | None) -> str:
    return "?" if value is None else str(value)


def _details(item: Item, trace: Trace) -> list[Text]:
    lines: list[Text] = []
    if item.type in ("rollback_local", "rollback_global"):
        for seq in item.entries:
            e = trace.entries[seq]
            lines.append(Text(f"  discarded {e.agent} {e.id} (t={e.time}): \"{clean(e.text, 110)}\"", style="yellow"))
        if not item.entries:
            lines.append(Text("  discarded nothing", style="dim"))
    elif item.type == "conflict_set":
        c = next((c for c in trace.conflict_sets if c.seq == item.seq), None)
        for sid, txt in zip(c.statement_ids, c.texts) if c else ():
            mark = "  ✗ given up " if sid == c.discard_id else "  • kept     "
            lines.append(Text(f"{mark}{sid}: \"{clean(txt, 100)}\"", style="red" if sid == c.discard_id else ""))
        if c is not None and c.checkpoint_id is not None:
            cp = trace.checkpoint(c.checkpoint_id)
            label = f" \"{clean(cp.label)}\" (t={cp.time})" if cp else ""
            lines.append(Text(f"  target: checkpoint #{c.checkpoint_id}{label}", style="dim"))
    for cid in item.calls:
        call = trace.call(cid)
        if call is not None:
            cost = f"{call.seconds:.1f} s, " if call.seconds is not None else ""
            tokens = f"{_num(call.prompt_tokens)}+{_num(call.completion_tokens)} tok"
            lines.append(Text(f"  llm #{call.id} {call.purpose} ({cost}{tokens}): {clean(call.output, 100)}",
                              style="dim"))
    return lines


def timeline(trace: Trace) -> Table:
    """One row per event (rounds folded into their messages): time, round, agent, mark, what happened."""
    table = Table.grid(padding=(0, 1))
    table.add_column("t", justify="right", width=3, style="dim")
    table.add_column("round", width=3, style="dim")
    table.add_column("agent", width=10, no_wrap=True, overflow="ellipsis")
    table.add_column("mark", width=1)
    table.add_column("what", ratio=1, overflow="fold")
    for item in trace.items:
        if item.type in HIDDEN or _folded(item, trace):
            continue
        agent = Text(item.agent, style=AGENT_STYLE.get(item.agent, "dim"))
        table.add_row(str(item.time), f"r{item.round}" if item.round else "", agent, _glyph(item), _body(item, trace))
    return table


def _indented(rows: list[tuple[Text, Text]]) -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=1)
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    for head, body in rows:
        grid.add_row("", head, body)
    return grid


def final_block(trace: Trace) -> Group:
    """The answer, the statements held at the end, and the passages that support it."""
    f = trace.final
    if f.answer is None:
        return Group(Text("No answer: the run has not finished (still running, or interrupted).", style="yellow"))
    head = Text("Answer: ", style="bold").append(clean(f.answer), style="bold green")
    if f.uncertain:
        head.append(f"  (uncertain: {clean(f.reason) or 'yes'})", style="yellow")
    parts: list = [head]
    if f.trust is not None:
        t = f.trust
        style = {"trusted": "green", "likely wrong": "bold red"}.get(str(t.get("label")), "yellow")
        parts.append(Text(trust_text(t.get("probability"), float(t.get("threshold", 1.0)), str(t.get("label", "")),
                                     bool(t.get("grounded", True))), style=style))
    held = [trace.entries[s] for s in f.held]
    if held:
        parts.append(Text("Held at the end:", style="bold"))
        parts.append(_indented([(Text(e.agent, style=AGENT_STYLE.get(e.agent, "")),
                                 Text(f"\"{clean(e.text)}\" ").append(
                                     f"[{clean(', '.join(pid for pid, _ in e.provenance) or 'no passage')}]",
                                     style="dim")) for e in held]))
    if f.passages:
        parts.append(Text("Supporting passages:", style="bold"))
        rows = []
        for pid in f.passages:
            p = trace.passages.get(pid)
            body = (Text(f"{clean(p.title, 40)}: {clean(p.text, 200)}") if p
                    else Text("(text not in the log)", style="dim"))
            if p and p.origin:
                body = Text(f"{clean(p.origin.get('label', ''), 160)}\n", style="magenta").append(body)
            rows.append((Text(f"[{clean(pid, 40)}]", style="cyan"), body))
        parts.append(_indented(rows))
    return Group(*parts)


def render(trace: Trace, console: Console) -> None:
    """Print a run's header, timeline and final answer."""
    console.print(Group(_header(trace), Text(""), timeline(trace), Text(""), final_block(trace)))
