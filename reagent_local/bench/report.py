"""Summaries of a run folder's records: summary.json, a Markdown table, and a PNG chart.

Everything here is recomputed from ``records.jsonl`` and ``config.json``, so
``reagent bench report DIR`` re-renders the same files a run writes at its end.
"""

from __future__ import annotations

from pathlib import Path
from statistics import mean
from typing import Any, Sequence

from .records import RECORDS_FILE, check_unique, read_records
from .rundir import read_run_config, write_json

SUMMARY_FILE = "summary.json"
TABLE_FILE = "results.md"
CHART_FILE = "chart.png"


def _avg(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return mean(present) if present else None


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
        "seconds_total": sum(r["seconds"] for r in records),
        "errors": sum(1 for r in records if r.get("error")),
        "uncertain": sum(1 for r in records if r.get("uncertain")),
        "backtracks_local": sum((r.get("backtracks") or {}).get("local", 0) for r in records),
        "backtracks_global": sum((r.get("backtracks") or {}).get("global", 0) for r in records),
        # which code produced the records (several when a run was resumed after a commit)
        "code": sorted({r["code"] for r in records if r.get("code")}),
    }


def changed_answers(records: Sequence[dict[str, Any]], base: str, other: str) -> list[dict[str, Any]]:
    """Questions where two methods' predictions differ (e.g. reagent-none vs reagent-both)."""
    by_id = {r["id"]: r for r in records if r["method"] == base}
    out = []
    for record in records:
        if record["method"] != other or record["id"] not in by_id:
            continue
        before = by_id[record["id"]]
        if before["prediction"].strip().lower() != record["prediction"].strip().lower():
            out.append({
                "id": record["id"],
                "gold": record["answers"][0] if record["answers"] else "",
                base: before["prediction"],
                other: record["prediction"],
                "f1_change": round(record["f1"] - before["f1"], 3),
            })
    return out


BASELINES = ("rag", "ircot")


def head_to_head(records: Sequence[dict[str, Any]], method: str, other: str) -> dict[str, Any]:
    """Per-question EM of ``method`` against ``other`` on the questions both answered."""
    theirs = {r["id"]: r for r in records if r["method"] == other}
    wins, losses, both = [], [], 0
    for record in records:
        if record["method"] != method or record["id"] not in theirs:
            continue
        both += 1
        if record["em"] > theirs[record["id"]]["em"]:
            wins.append(record["id"])
        elif record["em"] < theirs[record["id"]]["em"]:
            losses.append(record["id"])
    return {"questions": both, "wins": wins, "losses": losses}


def summarize(run_config: dict[str, Any], records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The whole summary.json: run settings, per-method averages, backtracking changes."""
    methods = list(dict.fromkeys([*run_config.get("methods", []), *(r["method"] for r in records)]))
    per_method = {m: summarize_method([r for r in records if r["method"] == m]) for m in methods}
    changes = {}
    if any(r["method"] == "reagent-none" for r in records):
        for other in ("reagent-local", "reagent-global", "reagent-both"):
            if any(r["method"] == other for r in records):
                changes[other] = changed_answers(records, "reagent-none", other)
    present = {r["method"] for r in records}
    duels = {f"{m} vs {b}": head_to_head(records, m, b)
             for m in methods if m.startswith("reagent-") and m in present for b in BASELINES if b in present}
    return {
        "dataset": run_config.get("dataset"),
        "file": run_config.get("file"),
        "seed": run_config.get("seed"),
        "n": run_config.get("n"),
        "questions": len(run_config.get("question_ids", [])),
        "model": run_config.get("model", {}).get("id"),
        "seconds_total": sum(r["seconds"] for r in records),
        "methods": per_method,
        "backtracking_changed_answers": changes,
        "head_to_head": duels,
    }


def _fmt(value: float | None, digits: int = 3) -> str:
    """A cell: "-" for missing, ".460" for a 3-digit score, "8.4" otherwise."""
    if value is None:
        return "-"
    text = f"{value:.{digits}f}"
    return text[1:] if digits == 3 and text.startswith("0.") else text


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|") or '""'


def markdown_table(summary: dict[str, Any]) -> str:
    """results.md: the method table, how it was run, and where backtracking changed answers."""
    lines = [
        f"# {summary['dataset']}: {summary['questions']} questions (n={summary['n']}, seed={summary['seed']}), model {summary['model']}",
        "",
        "| method | n | EM | F1 | support P | support R | calls/q | tokens/q | s/q | errors |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in summary["methods"].items():
        lines.append(
            f"| {name} | {s['n']} | {_fmt(s['em'])} | {_fmt(s['f1'])} | {_fmt(s['support_precision'])} "
            f"| {_fmt(s['support_recall'])} | {_fmt(s['llm_calls_per_question'], 1)} | {_fmt(s['tokens_per_question'], 0)} "
            f"| {_fmt(s['seconds_per_question'], 1)} | {s['errors']} |"
        )
    hours = summary["seconds_total"] / 3600
    lines += [
        "",
        f"Total run time (sum of per-question seconds): {summary['seconds_total']:.0f} s ({hours:.2f} h). "
        f"File: `{summary['file']}`.",
        "Support P/R: the cited passages against the gold supporting paragraphs (RAG and IRCoT cite every passage they read;",
        "closed-book cites none). EM/F1: the official HotpotQA normalisation, best over aliases.",
    ]
    code = [f"{name} {', '.join(s['code'])}" for name, s in summary["methods"].items() if s.get("code")]
    if code:
        lines.append(f"Code: {'; '.join(code)}.")
    duels = summary.get("head_to_head", {})
    if duels:
        lines += ["", "## Head to head (exact match, same questions)", ""]
        for name, duel in duels.items():
            lines.append(f"- {name}: {len(duel['wins'])} won, {len(duel['losses'])} lost of {duel['questions']}"
                         + (f"; won {', '.join(duel['wins'])}" if duel["wins"] else "")
                         + (f"; lost {', '.join(duel['losses'])}" if duel["losses"] else ""))
    for other, changes in summary.get("backtracking_changed_answers", {}).items():
        lines += ["", f"## reagent-none -> {other}: {len(changes)} answer(s) changed", ""]
        if changes:
            lines += ["| question id | gold | reagent-none | " + other + " | F1 change |", "|---|---|---|---|---|"]
            lines += [
                f"| {c['id']} | {_cell(c['gold'])} | {_cell(c['reagent-none'])} | {_cell(c[other])} | {c['f1_change']:+.3f} |"
                for c in changes
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


def write_report(folder: Path) -> dict[str, Any]:
    """Recompute summary.json, results.md and chart.png of a run folder; returns the summary."""
    folder = Path(folder)
    run_config = read_run_config(folder)
    records = read_records(folder / RECORDS_FILE)
    check_unique(records, folder / RECORDS_FILE)
    summary = summarize(run_config, records)
    write_json(folder / SUMMARY_FILE, summary)
    (folder / TABLE_FILE).write_text(markdown_table(summary), encoding="utf-8")
    render_chart(summary, folder / CHART_FILE)
    return summary
