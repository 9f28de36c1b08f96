"""``reagent bench repairs``' Markdown: a table per dataset, one pooled, and the questions one a line."""

from __future__ import annotations

from typing import Any

from .repairs import NEEDS_LOG, NOT_RETRIEVED


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _cell(value: Any) -> str:
    text = "-" if value is None or value == "" else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def table_lines(title: str, t: dict[str, Any]) -> list[str]:
    """One table: the categories, their counts, shares of the questions where it fired, and answers changed."""
    lines = [f"### {title}: fired on {t['fired']} of {t['questions']} questions; wrong without backtracking on "
             f"{t['wrong_without']}", ""]
    if not t["fired"]:
        return lines + ["Backtracking fired on no question."]
    lines += ["| category | questions | share | answer changed |", "|---|---|---|---|"]
    lines += [f"| {name} | {c['count']} | {_pct(c['share'])} | {c['changed']} |" for name, c in t["categories"].items()]
    if NOT_RETRIEVED in t["categories"]:
        lines += ["", f"Of the {t['categories'][NOT_RETRIEVED]['count']} never retrieved, {t['none_retrieved']} had "
                      "no gold paragraph retrieved at all (the others missed one of several)."]
    return lines


def _detail(row: dict[str, Any]) -> str:
    if row["category"] == NEEDS_LOG:
        return row.get("note", "")
    if "gold_retrieved" not in row:
        return ""
    parts = [f"gold retrieved {row['gold_retrieved']}, cited {row['gold_cited']}",
             f"plan {row['plan_steps'] if row['plan_steps'] is not None else 'none'} / {row['hops']} hops"]
    if row.get("missing_steps"):
        parts.append("no step found: " + "; ".join(row["missing_steps"]))
    return ", ".join(parts)


def markdown(report: dict[str, Any]) -> str:
    """The whole report."""
    lines = [f"# Why repairs fail: {report['method']}", ""]
    for f in report["folders"]:
        log = "with its event log" if f["event_log"] else "records only (no events.duckdb)"
        lines.append(f"- {f['folder']} ({f['dataset']}, {', '.join(f['commits'])}): {f['questions']} questions, "
                     f"fired on {f['fired']}; {log}")
    lines += ["", *table_lines("Pooled", report["pooled"])]
    if len(report["tables"]) > 1:
        for name, t in report["tables"].items():
            lines += ["", *table_lines(name, t)]
    lines += ["", "### The questions", "",
              "| id | dataset | category | signals | without backtracking | before the first rollback | answer | gold "
              "| detail |", "|---|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        lines.append(" | ".join(["", _cell(r["id"]), _cell(r["dataset"]), r["category"],
                                 _cell(", ".join(r["signals"])), _cell(r["answer_without"]), _cell(r["answer_before"]),
                                 _cell(r["answer"]), _cell(r["gold"]), _cell(_detail(r)), ""]).strip())
    return "\n".join(lines) + "\n"
