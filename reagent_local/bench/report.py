"""Summaries of a run folder's records: summary.json, a Markdown table, and a PNG chart.

Everything here is recomputed from ``records.jsonl`` and ``config.json``, so
``reagent bench report DIR`` re-renders the same files a run writes at its end.
The per-question comparisons (backtracking effects, pairs against reagent-none, head
to head with a sign test) live in compare.py.
"""

from __future__ import annotations

from pathlib import Path
from collections import Counter
from statistics import mean
from typing import Any, Iterable, Sequence

from .compare import (NONE_METHOD, against_none, backtracking_effect, by_signal, duel_pairs, has_backtracking,
                      head_to_head, roads_verdicts, same_answer)
from .provenance import check_single, describe, mix_line, origins
from .records import RECORDS_FILE, check_unique, read_records
from .rundir import folder_config_id, read_run_config, write_json
from .selective import trust_summary
from .stats import median, p90

SUMMARY_FILE = "summary.json"
TABLE_FILE = "results.md"
CHART_FILE = "chart.png"


def _avg(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return mean(present) if present else None


def _tally(names: Iterable[str]) -> dict[str, int]:
    """How often each name occurs, most frequent first."""
    return dict(Counter(names).most_common())


def summarize_method(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Averages over one method's records (precision over the questions where it cited anything)."""
    return {
        "n": len(records),
        "em": _avg([r["em"] for r in records]),
        "f1": _avg([r["f1"] for r in records]),
        "support_precision": _avg([r.get("support_precision") for r in records]),
        "support_recall": _avg([r.get("support_recall") for r in records]),
        "llm_calls_per_question": _avg([r["llm_calls"] for r in records]),
        "prompt_tokens_per_question": _avg([r["prompt_tokens"] for r in records]),
        "completion_tokens_per_question": _avg([r["completion_tokens"] for r in records]),
        "tokens_per_question": _avg([r["prompt_tokens"] + r["completion_tokens"] for r in records]),
        "seconds_per_question": _avg([r["seconds"] for r in records]),
        "seconds_median": median([r["seconds"] for r in records]),
        "seconds_p90": p90([r["seconds"] for r in records]),
        "llm_calls_median": median([r["llm_calls"] for r in records]),
        "llm_calls_p90": p90([r["llm_calls"] for r in records]),
        "seconds_total": sum(r["seconds"] for r in records),
        # questions whose seconds were measured while other processes used the machine (runtime/contention.py)
        "seconds_shared": sum(1 for r in records if (r.get("machine") or {}).get("shared")),
        # questions begun with an empty prompt cache (runner.answer_one): their seconds are the method's alone
        # (None: a model with no prompt cache, so nothing to borrow; a record without the field predates it)
        "cold_start": sum(1 for r in records if "cold_start" in r and r["cold_start"] is not False),
        # prompt tokens the question's own calls took from the cache (records that count them)
        "cached_prompt_tokens_per_question": _avg([r.get("cached_prompt_tokens") for r in records]),
        "errors": sum(1 for r in records if r.get("error")),
        "uncertain": sum(1 for r in records if r.get("uncertain")),
        "backtracks_local": sum((r.get("backtracks") or {}).get("local", 0) for r in records),
        "backtracks_global": sum((r.get("backtracks") or {}).get("global", 0) for r in records),
        "rules_fired": _tally(name for r in records for name in r.get("rules_fired") or []),
        "signals": _tally(name for r in records for name in r.get("signals") or []),
        # selective accuracy and AUROC of the answers' trust score (None: the records carry none)
        "trust": trust_summary(records),
        # which code produced the records (several when a run was resumed after a commit)
        "code": sorted({r["code"] for r in records if r.get("code")}),
    }


def changed_answers(records: Sequence[dict[str, Any]], base: str, other: str) -> list[dict[str, Any]]:
    """Questions where two methods' predictions differ after normalisation (e.g. reagent-none vs reagent-both)."""
    by_id = {r["id"]: r for r in records if r["method"] == base}
    out = []
    for record in records:
        if record["method"] != other or record["id"] not in by_id:
            continue
        before = by_id[record["id"]]
        if not same_answer(before["prediction"], record["prediction"]):
            out.append({
                "id": record["id"],
                "gold": record["answers"][0] if record["answers"] else "",
                base: before["prediction"],
                other: record["prediction"],
                "f1_change": round(record["f1"] - before["f1"], 3),
            })
    return out


def comparisons(methods: Sequence[str], records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The per-question comparison sections of summary.json, for the methods that have records."""
    present = [m for m in methods if any(r["method"] == m for r in records)]
    others = [m for m in present if m.startswith("reagent-") and m != NONE_METHOD]
    has_none = NONE_METHOD in present
    return {
        "backtracking": {m: backtracking_effect([r for r in records if r["method"] == m])
                         for m in present if has_backtracking(m, records)},
        "roads": {m: verdicts for m in present
                  if (verdicts := roads_verdicts([r for r in records if r["method"] == m]))["settled"]},
        "against_reagent_none": {m: against_none(records, m) for m in others} if has_none else {},
        "backtracking_changed_answers": {m: changed_answers(records, NONE_METHOD, m) for m in others} if has_none else {},
        "signals_against_reagent_none": {m: by_signal(records, m) for m in others} if has_none else {},
        "head_to_head": {f"{m} vs {o}": head_to_head(records, m, o) for m, o in duel_pairs(present)},
    }


def summarize(run_config: dict[str, Any], records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The whole summary.json: run settings, per-method averages, backtracking and head-to-head comparisons."""
    methods = list(dict.fromkeys([*run_config.get("methods", []), *(r["method"] for r in records)]))
    per_method = {m: summarize_method([r for r in records if r["method"] == m]) for m in methods}
    folder_config = folder_config_id(run_config)
    for m, s in per_method.items():
        s["origin"] = origins([r for r in records if r["method"] == m], folder_config)
    return {
        "dataset": run_config.get("dataset"),
        "file": run_config.get("file"),
        "seed": run_config.get("seed"),
        "n": run_config.get("n"),
        "questions": len(run_config.get("question_ids", [])),
        "model": run_config.get("model", {}).get("id"),
        "seconds_total": sum(r["seconds"] for r in records),
        "ids": run_config.get("ids"),
        "exclude_ids": run_config.get("exclude_ids"),
        "index": run_config.get("index"),
        "origin": origins(records, folder_config),  # which commits and configurations the records come from
        "methods": per_method,
        **comparisons(methods, records),
    }


def _fmt(value: float | None, digits: int = 3) -> str:
    """A cell: "-" for missing, ".460" for a 3-digit score, "8.4" otherwise."""
    if value is None:
        return "-"
    text = f"{value:.{digits}f}"
    return text[1:] if digits == 3 and text.startswith("0.") else text


def _spread(summary: dict[str, Any], what: str, digits: int) -> str:
    """'median, p90' of a method's per-question values ('-' for summaries written before they were kept)."""
    middle, high = summary.get(f"{what}_median"), summary.get(f"{what}_p90")
    return "-" if middle is None else f"{_fmt(middle, digits)}, {_fmt(high, digits)}"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|") or '""'


def _ids(label: str, ids: Sequence[str]) -> str:
    return f"; {label} {', '.join(ids)}" if ids else ""


def _selection_line(summary: dict[str, Any]) -> list[str]:
    """Which ids files filtered the questions and which index answered, when not the defaults."""
    parts = [f"{key} `{entry['file'] or 'a list'}` ({entry['count']} ids)"
             for key, entry in (("--ids", summary.get("ids")), ("--exclude-ids", summary.get("exclude_ids"))) if entry]
    if parts:
        return [f"Questions filtered by {' and '.join(parts)} before the draw."]
    return []


SHARED_MARK = " †"


def shared_lines(summary: dict[str, Any]) -> list[str]:
    """The note under the table when some seconds were measured on a shared machine."""
    shared = {name: s for name, s in summary["methods"].items() if s.get("seconds_shared")}
    if not shared:
        return []
    counts = ", ".join(f"{name} {s['seconds_shared']} of {s['n']}" for name, s in shared.items())
    return ["", f"{SHARED_MARK.strip()} Seconds measured under contention ({counts} questions): other processes took at "
            "least a quarter of the cores, another model process was busy, or the server's model was answering "
            "others; do not compare them with seconds of a quiet run."]


def seconds_note(summary: dict[str, Any]) -> list[str]:
    """What the seconds measured: each method's question begun cold, or (older records) maybe another method's cache."""
    methods = {name: s for name, s in summary["methods"].items() if s.get("n")}
    if not methods:
        return []
    cold = sum(s.get("cold_start", 0) for s in methods.values())
    total = sum(s["n"] for s in methods.values())
    if cold == total:
        cached = [f"{name} {s['cached_prompt_tokens_per_question']:,.0f}" for name, s in methods.items()
                  if s.get("cached_prompt_tokens_per_question") is not None]
        return ["", "Seconds: cold per method per question. Each method began each question with an empty prompt "
                "cache, as in a fresh process, so no method's seconds use prompts another method evaluated; within "
                "the question its own calls reuse their shared prompt prefixes, as in use."
                + (f" Prompt tokens per question taken from that cache: {', '.join(cached)}." if cached else "")]
    warm = "all" if cold == 0 else f"{total - cold} of {total}"
    return ["", f"Seconds: {warm} of these records were written before each method's question began with an empty "
            "prompt cache: a method's seconds may include prompt states that the methods answered before it on "
            "the same question left in the cache (later methods look faster than they are)."]


def method_lines(summary: dict[str, Any]) -> list[str]:
    """The title, the per-method table and how the run was made."""
    lines = [
        f"# {summary['dataset']}: {summary['questions']} questions (n={summary['n']}, seed={summary['seed']}), model {summary['model']}",
        "",
        "| method | n | EM | F1 | support P | support R | calls/q (median, p90) | tokens/q | s/q (median, p90) | errors |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in summary["methods"].items():
        lines.append(
            f"| {name} | {s['n']} | {_fmt(s['em'])} | {_fmt(s['f1'])} | {_fmt(s['support_precision'])} "
            f"| {_fmt(s['support_recall'])} | {_fmt(s['llm_calls_per_question'], 1)} ({_spread(s, 'llm_calls', 1)}) "
            f"| {_fmt(s['tokens_per_question'], 0)} | {_fmt(s['seconds_per_question'], 1)} ({_spread(s, 'seconds', 1)})"
            f"{SHARED_MARK if s.get('seconds_shared') else ''} | {s['errors']} |"
        )
    hours = summary["seconds_total"] / 3600
    lines += [
        *shared_lines(summary),
        *seconds_note(summary),
        "",
        f"Total run time (sum of per-question seconds): {summary['seconds_total']:.0f} s ({hours:.2f} h). "
        f"File: `{summary['file']}`." + (f" Index: `{summary['index']}`." if summary.get("index") else ""),
        *_selection_line(summary),
        "Support P/R: the cited passages against the gold supporting paragraphs (RAG and IRCoT cite every passage they read;",
        "closed-book cites none). EM/F1: the official HotpotQA normalisation, best over aliases.",
    ]
    origin = summary.get("origin")
    if origin and origin["mixed"]:
        lines += ["", mix_line(origin) or "", *[f"- {name}: {describe(s['origin'])}"
                                                 for name, s in summary["methods"].items() if s.get("n")]]
    elif origin and origin["commits"]:
        lines.append(f"Records: {describe(origin)}.")
    return lines


def _method_section(title: str, note: str, columns: Sequence[str], rows: dict[str, Sequence[Any]],
                    id_lines: dict[str, str]) -> list[str]:
    """A titled table with one row per method, then a line per method naming the questions it lists."""
    lines = ["", f"## {title}", "", note, "", f"| {' | '.join(columns)} |", "|" + "---|" * len(columns)]
    lines += [f"| {m} | {' | '.join(str(c) for c in cells)} |" for m, cells in rows.items()]
    lines += [f"- {m}{ids}" for m, ids in id_lines.items() if ids]
    return lines


def backtracking_lines(effects: dict[str, Any]) -> list[str]:
    """Per method with backtracking: where it fired, what it changed, what it fixed and broke, what that cost to know."""
    if not effects:
        return []
    return _method_section(
        "Backtracking",
        "Fixed / broken: wrong to right / right to wrong by EM, against the answer the same question gets with "
        "backtracking off (after a run where anything fired, the question is answered again with backtracking "
        "off: the calls before the paths part are replayed from memory, the rest are made and counted apart, "
        "never in the question's cost). Records written before that field fall back to the answer held before "
        "the first rollback; \"unknown\": fired, and neither is recorded.",
        ("method", "questions", "fired", "answer changed", "fixed", "broken", "unknown",
         "answered again: calls, s"),
        {m: (e["questions"], e["fired"], e["changed"], len(e["fixed"]), len(e["broken"]), e["unknown"],
             f"{e.get('shadow_calls', 0)}, {e.get('shadow_seconds', 0.0):.1f}")
         for m, e in effects.items()},
        {m: _ids("fixed", e["fixed"]) + _ids("broken", e["broken"]) for m, e in effects.items()})


def roads_lines(verdicts: dict[str, Any]) -> list[str]:
    """Per method: where the two roads disagreed, whether the supervisor kept the better answer (by F1)."""
    if not verdicts:
        return []
    return _method_section(
        "The two roads",
        "Where the chain's answer and the whole question's disagreed: the answer the supervisor kept against "
        "the one it dropped, by F1 against the gold answers (before any redo of the chain).",
        ("method", "disagreements", "chain kept", "judged by the model", "kept the better", "kept the worse", "equal"),
        {m: (v["settled"], v["chain_kept"], v["judged"], len(v["better"]), len(v["worse"]), v["equal"])
         for m, v in verdicts.items()},
        {m: _ids("kept the better", v["better"]) + _ids("kept the worse", v["worse"]) for m, v in verdicts.items()})


def trust_lines(per_method: dict[str, dict[str, Any]]) -> list[str]:
    """Per method whose records carry the trust score: selective accuracy (EM of the trusted, coverage) and AUROC."""
    rows = {m: s["trust"] for m, s in per_method.items() if s.get("trust")}
    if not rows:
        return []
    return _method_section(
        "Trust",
        "The supervisor's trust score (the probability an answer is right, fitted on train questions by "
        "`reagent bench fit-trust`): the answers marked trusted, their share of the questions and their EM; "
        "the AUROC of the score for EM (ties count half); the answers marked likely wrong (backtracking caught "
        "a problem it did not repair) and those not found in the index (no cited passage contains them).",
        ("method", "scored", "trusted", "coverage", "EM of trusted", "EM of the rest", "AUROC", "likely wrong (EM)",
         "not found"),
        {m: (t["n"], t["trusted"], _fmt(t["coverage"]), _fmt(t["em_trusted"]), _fmt(t["em_rest"]), _fmt(t["auroc"]),
             f"{t['likely_wrong']} ({_fmt(t['em_likely_wrong'])})", t["not_found"]) for m, t in rows.items()},
        {})


def against_none_lines(paired: dict[str, Any]) -> list[str]:
    """Each ReAgent setting against reagent-none on the same questions."""
    if not paired:
        return []
    lines = ["", f"## Against {NONE_METHOD} (same questions)", "",
             "| method | questions | answers changed | fixed | broken | F1 change |", "|---|---|---|---|---|---|"]
    for m, p in paired.items():
        delta = f"{p['delta_f1']:+.3f}" if p["delta_f1"] is not None else "-"
        lines.append(f"| {m} | {p['questions']} | {p['changed']} | {len(p['fixed'])} | {len(p['broken'])} | {delta} |")
    return lines


def signal_lines(per_method: dict[str, dict[str, Any]]) -> list[str]:
    """Per ReAgent setting and conflict signal: the questions that raised it, against reagent-none."""
    rows = [(m, name, row) for m, signals in per_method.items() for name, row in signals.items()]
    if not rows:
        return []
    lines = ["", f"## Conflict signals against {NONE_METHOD} (same questions)", "",
             "A question counts under every signal it raised. F1 sum: the summed per-question F1 change.", "",
             "| method | signal | questions | answers changed | won (F1) | lost (F1) | F1 sum |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {m} | {name} | {r['questions']} | {r['changed']} | {len(r['won'])} | {len(r['lost'])} | "
              f"{r['f1_sum']:+.2f} |" for m, name, r in rows]
    return lines


def duel_lines(duels: dict[str, Any]) -> list[str]:
    """Head to head by per-question F1 (and EM), with the sign test and the ids won and lost."""
    if not duels:
        return []
    lines = ["", "## Head to head (same questions; exact two-sided sign test over wins and losses, ties dropped)", ""]
    for name, d in duels.items():
        f1, em = d["f1"], d["em"]
        lines.append(f"- {name} ({d['questions']} questions): F1 {f1['wins']} won, {f1['losses']} lost, "
                     f"{f1['ties']} tied, p = {f1['p_value']:.3f}; EM {em['wins']} won, {em['losses']} lost, "
                     f"p = {em['p_value']:.3f}{_ids('won', f1['won'])}{_ids('lost', f1['lost'])}")
    return lines


def change_lines(changes: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The questions whose answer differs from reagent-none's, per ReAgent setting."""
    lines: list[str] = []
    for other, rows in changes.items():
        lines += ["", f"## {NONE_METHOD} -> {other}: {len(rows)} answer(s) changed", ""]
        if rows:
            lines += [f"| question id | gold | {NONE_METHOD} | {other} | F1 change |", "|---|---|---|---|---|"]
            lines += [f"| {c['id']} | {_cell(c['gold'])} | {_cell(c[NONE_METHOD])} | {_cell(c[other])} | {c['f1_change']:+.3f} |"
                      for c in rows]
    return lines


def markdown_table(summary: dict[str, Any]) -> str:
    """results.md: the method table, how it was run, backtracking effects and head-to-head comparisons."""
    lines = [
        *method_lines(summary),
        *backtracking_lines(summary.get("backtracking", {})),
        *roads_lines(summary.get("roads", {})),
        *trust_lines(summary.get("methods", {})),
        *against_none_lines(summary.get("against_reagent_none", {})),
        *signal_lines(summary.get("signals_against_reagent_none", {})),
        *duel_lines(summary.get("head_to_head", {})),
        *change_lines(summary.get("backtracking_changed_answers", {})),
    ]
    return "\n".join(lines) + "\n"


def render_chart(summary: dict[str, Any], path: Path) -> None:
    """chart.png: F1 and seconds per question, one bar per method."""
    import matplotlib

    matplotlib.use("Agg")  # no display; must precede pyplot
    import matplotlib.pyplot as plt

    names = list(summary["methods"])
    f1 = [summary["methods"][m]["f1"] or 0.0 for m in names]
    secs = [summary["methods"][m]["seconds_per_question"] or 0.0 for m in names]
    fig, (left, right) = plt.subplots(1, 2, figsize=(max(6.0, 1.3 * len(names) + 3), 3.8))
    left.bar(names, f1, color="#4C72B0")
    left.set_ylim(0, 1.1)
    right.margins(y=0.12)
    left.set_title("F1")
    right.bar(names, secs, color="#DD8452")
    right.set_title("seconds / question")
    for axis, values, fmt in ((left, f1, "{:.2f}"), (right, secs, "{:.1f}")):
        axis.tick_params(axis="x", labelrotation=30)
        for i, v in enumerate(values):
            axis.annotate(fmt.format(v), (i, v), ha="center", va="bottom", fontsize=8)
    fig.suptitle(f"{summary['dataset']}, {summary['questions']} questions, {summary['model']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(folder: Path, *, allow_mixed: bool = False) -> dict[str, Any]:
    """Recompute summary.json, results.md and chart.png of a run folder; returns the summary.

    Records of several commits, configurations or machines are refused unless ``allow_mixed``; then
    the table says where each method's records came from.
    """
    folder = Path(folder)
    run_config = read_run_config(folder)
    records = read_records(folder / RECORDS_FILE)
    check_unique(records, folder / RECORDS_FILE)
    summary = summarize(run_config, records)
    check_single(summary["origin"], f"{folder}", allow_mixed=allow_mixed)
    write_json(folder / SUMMARY_FILE, summary)
    (folder / TABLE_FILE).write_text(markdown_table(summary), encoding="utf-8")
    render_chart(summary, folder / CHART_FILE)
    return summary
