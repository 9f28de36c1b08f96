"""Markdown result tables for the README from benchmark run folders (their summary.json and records).

    .venv/bin/python scripts/results_tables.py bench-runs/hotpotqa-n30-v2 bench-runs/2wiki-n30 bench-runs/musique-n30

One table per folder: each method's EM, F1, supporting-passage precision and recall,
calls, tokens and seconds per question, and the commit its records came from; the best
EM in bold. Run `reagent bench report DIR` first if the records changed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

LABELS = {
    "closed-book": "closed-book",
    "rag": "single-step RAG",
    "ircot": "IRCoT-style",
    "reagent-both": "ReAgent, backtracking both",
    "reagent-none": "ReAgent, backtracking none",
    "reagent-local": "ReAgent, backtracking local",
    "reagent-global": "ReAgent, backtracking global",
}


def score(value: float | None) -> str:
    if value is None:
        return "-"
    text = f"{value:.3f}"
    return text[1:] if text.startswith("0.") else text


def spread(m: dict, what: str, digits: int) -> str:
    """' (median, p90)' when the summary keeps them."""
    if m.get(f"{what}_median") is None:
        return ""
    return f" ({m[what + '_median']:.{digits}f}, {m[what + '_p90']:.{digits}f})"


def table(folder: Path) -> str:
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    methods = summary["methods"]
    best = max((m["em"] or 0.0) for m in methods.values())
    lines = [
        f"**{summary['dataset']}**: {summary['questions']} questions, seed {summary['seed']}, "
        f"total {summary['seconds_total'] / 3600:.2f} h of question time",
        "",
        "| method | EM | F1 | support P | support R | LLM calls/q (median, p90) | tokens/q | s/q (median, p90) | code |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, m in methods.items():
        if not m["n"]:
            continue
        em = score(m["em"])
        if m["em"] == best:
            em = f"**{em}**"
        code = ", ".join(c.split("+g")[-1] for c in m.get("code", [])) or "-"
        lines.append(
            f"| {LABELS.get(name, name)} | {em} | {score(m['f1'])} | {score(m['support_precision'])} "
            f"| {score(m['support_recall'])} | {m['llm_calls_per_question']:.1f}{spread(m, 'llm_calls', 0)} "
            f"| {m['tokens_per_question']:,.0f} | {m['seconds_per_question']:.1f}{spread(m, 'seconds', 1)} | {code} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", type=Path)
    args = parser.parse_args()
    print("\n\n".join(table(folder) for folder in args.folders))


if __name__ == "__main__":
    main()
