"""``reagent bench profile``'s Markdown: one section per method."""

from __future__ import annotations

from typing import Any

from .profile import NOTHING


def _num(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def method_lines(name: str, p: dict[str, Any]) -> list[str]:
    """The profile of one method."""
    s, c, t = p["seconds"], p["llm_calls"], p["tokens"]
    lines = [f"## {name}: {p['questions']} questions", "",
             f"- seconds/question: median {_num(s['median'])}, p90 {_num(s['p90'])}, mean {_num(s['mean'])}; "
             f"total {_num(s['total'] / 3600, 2)} h",
             f"- model calls/question: median {_num(c['median'])}, p90 {_num(c['p90'])}, mean {_num(c['mean'], 2)}; "
             f"tokens/question: mean {_num(t['mean'], 0)}"]
    again = p["answered_again"]
    if again["questions"]:
        lines.append(f"- answered again without backtracking (not in the cost above): {again['questions']} questions, "
                     f"{again['calls']} calls made, {again['replayed']} replayed, {_num(again['seconds'])} s")
    if "roles" in p:
        lines += [f"- outside the model (retrieval, checks, log): {_pct(p['outside_model_share'])} of the seconds of "
                  f"{p['logged_questions']} logged questions", "", "| role | calls | share of calls | model seconds "
                  "| share of model seconds | prompt tokens/call | completion tokens/call |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {role} | {r['calls']} | {_pct(r['calls_share'])} | {_num(r['seconds'])} | "
                  f"{_pct(r['seconds_share'])} | {_num(r['prompt_tokens'] / r['calls'], 0)} | "
                  f"{_num(r['completion_tokens'] / r['calls'], 0)} |" for role, r in p["roles"].items()]
    lines += ["", "By conflict signal (a question counts under every signal it raised; extra calls: beyond those the "
              "question needs with backtracking off, where that was measured):", "",
              "| signal | questions | calls | share of calls | calls/q (median) | seconds | share of seconds "
              "| extra calls |", "|---|---|---|---|---|---|---|---|"]
    for signal, r in p["signals"].items():
        extra = "-" if r["extra_calls"] is None else (f"{r['extra_calls']}" + (
            f" (of {r['extra_known']})" if r["extra_known"] != r["questions"] else ""))
        label = signal if signal != NOTHING else "nothing fired"
        lines.append(f"| {label} | {r['questions']} | {r['calls']} | {_pct(r['calls_share'])} | "
                     f"{_num(r['calls_median'])} | {_num(r['seconds'])} | {_pct(r['seconds_share'])} | {extra} |")
    if p.get("events"):
        lines += ["", "| in the event log | questions | times |", "|---|---|---|"]
        lines += [f"| {label} | {e['questions']} | {e['times']} |" for label, e in p["events"].items()]
    return lines


def markdown(profile: dict[str, Any]) -> str:
    """The whole profile of a run folder."""
    lines = [f"# Profile of {profile['folder']} ({profile.get('dataset') or '?'})"]
    if not profile["event_log"]:
        lines += ["", "No event log in the folder: the split by role and the event counts need its events.duckdb."]
    for name, p in profile["methods"].items():
        lines += ["", *method_lines(name, p)]
    return "\n".join(lines) + "\n"
