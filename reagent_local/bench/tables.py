"""Result tables from run folders (docs/benchmarks.md): one Markdown table per folder, one row per method.

Each row: EM (the best in bold), F1, support precision and recall, calls, tokens and seconds
per question (mean, then median and p90 as ``stats`` defines them), and the commit the
records came from, and what the seconds measured (``report.seconds_note``). A folder whose
records mix commits, configurations or machines is refused unless mixing is allowed; then the
table says so. Tables of several folders are published side by side, so their records must come
from one machine too (``provenance.check_one_machine``; all-unknown folders count as one).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from .provenance import check_one_machine, check_single, mix_line
from .records import RECORDS_FILE, check_unique, read_records
from .report import SHARED_MARK, seconds_note, shared_lines, summarize
from .rundir import read_run_config

LABELS = {
    "closed-book": "closed-book",
    "rag": "single-step RAG",
    "ircot": "IRCoT-style",
    "adaptive": "adaptive (learned: RAG, or IRCoT)",
    "reagent-both": "ReAgent, backtracking both",
    "reagent-none": "ReAgent, backtracking none",
    "reagent-local": "ReAgent, backtracking local",
    "reagent-global": "ReAgent, backtracking global",
    "reagent-collect": "ReAgent, collecting both roads",  # records of the removed router's train runs
}


def _score(value: float | None) -> str:
    if value is None:
        return "-"
    text = f"{value:.3f}"
    return text[1:] if text.startswith("0.") else text


def _spread(m: dict[str, Any], what: str, digits: int) -> str:
    return f" ({m[what + '_median']:.{digits}f}, {m[what + '_p90']:.{digits}f})" if m.get(what + "_median") is not None else ""


def _commits(m: dict[str, Any]) -> str:
    return ", ".join(code.split("+g")[-1] for code in m["origin"]["commits"]) or "-"


def table(summary: dict[str, Any]) -> str:
    """One folder's table from its summary (``report.summarize``)."""
    methods = {name: m for name, m in summary["methods"].items() if m["n"]}
    best = max(((m["em"] or 0.0) for m in methods.values()), default=None)
    configs = ", ".join(summary["origin"]["configs"])
    lines = [f"**{summary['dataset']}**: {summary['questions']} questions, seed {summary['seed']}, "
             f"total {summary['seconds_total'] / 3600:.2f} h of question time; configuration {configs}", "",
             "| method | EM | F1 | support P | support R | LLM calls/q (median, p90) | tokens/q | s/q (median, p90) "
             "| code |", "|---|---|---|---|---|---|---|---|---|"]
    for name, m in methods.items():
        em = _score(m["em"])
        lines.append(
            f"| {LABELS.get(name, name)} | {f'**{em}**' if m['em'] == best else em} | {_score(m['f1'])} "
            f"| {_score(m['support_precision'])} | {_score(m['support_recall'])} "
            f"| {m['llm_calls_per_question']:.1f}{_spread(m, 'llm_calls', 1)} | {m['tokens_per_question']:,.0f} "
            f"| {m['seconds_per_question']:.1f}{_spread(m, 'seconds', 1)}{SHARED_MARK if m.get('seconds_shared') else ''} "
            f"| {_commits(m)} |")
    mixed = mix_line(summary["origin"])
    return "\n".join(lines + (["", mixed] if mixed else []) + shared_lines(summary) + seconds_note(summary)
                     + trust_line(methods))


def trust_line(methods: dict[str, Any]) -> list[str]:
    """Under the table, per method whose records carry the trust score: selective accuracy and AUROC."""
    parts = [f"{LABELS.get(name, name)}: trusted {t['trusted']} of {t['n']} ({_score(t['coverage'])}), EM of the "
             f"trusted {_score(t['em_trusted'])}, AUROC {_score(t['auroc'])}"
             for name, m in methods.items() if (t := m.get("trust"))]
    return ["", "Trust score: " + "; ".join(parts) + "."] if parts else []


def folder_summary(folder: Path, *, allow_mixed: bool = False) -> dict[str, Any]:
    """One run folder's summary, recomputed from its records; a mix refused unless allowed."""
    folder = Path(folder)
    records = read_records(folder / RECORDS_FILE)
    check_unique(records, folder / RECORDS_FILE)
    summary = summarize(read_run_config(folder), records)
    check_single(summary["origin"], str(folder), allow_mixed=allow_mixed)
    return summary


def folder_table(folder: Path, *, allow_mixed: bool = False) -> str:
    """The table of one run folder, recomputed from its records."""
    return table(folder_summary(folder, allow_mixed=allow_mixed))


def tables(folders: Sequence[Path], *, allow_mixed: bool = False) -> str:
    """The tables of several run folders, in order; folders of different machines refused unless allowed."""
    summaries = [folder_summary(f, allow_mixed=allow_mixed) for f in folders]
    mixed = check_one_machine({str(f): s["origin"] for f, s in zip(folders, summaries)}, "these tables",
                              allow_mixed=allow_mixed) if len(summaries) > 1 else None
    return "\n\n".join([table(s) for s in summaries] + ([mixed] if mixed else [])) + "\n"
