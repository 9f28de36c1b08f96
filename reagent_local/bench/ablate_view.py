"""``reagent bench ablate`` as Markdown: one section per ablation, and the summary table for docs/benchmarks.md."""

from __future__ import annotations

from typing import Any, Sequence

from .compare_view import diff_text, score_text

Record = dict[str, Any]
HOW = ("Differences are baseline - ablated (what the part adds), paired over every baseline question; where "
       "the part did not act the ablated answer is the baseline's, carried over. Interval: paired bootstrap 95%; "
       "won / lost / tied by F1 with the exact two-sided sign test (p); fixed / broken: answers the part makes "
       "right / wrong, by EM; calls and seconds a question: medians, baseline / ablated († seconds measured while "
       "other processes used the machine: not comparable with a quiet run's).")


def _num(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _cost(row: Record, what: str, digits: int) -> str:
    """'baseline / ablated'; seconds measured on a shared machine are marked † (not comparable with quiet ones)."""
    cost = row["cost"]

    def one(side: str) -> str:
        mark = " †" if what.startswith("seconds") and cost[side].get("seconds_shared") else ""
        return _num(cost[side][what], digits) + mark

    return f"{one('baseline')} / {one('ablated')}"


def _cells(row: Record) -> list[str]:
    """The comparison cells every table shares: differences, duel, fixed / broken, cost, verdict."""
    s = row["stats"]
    return [diff_text(s["f1_diff"], s["f1_interval"]), diff_text(s["em_diff"], s["em_interval"]),
            f"{len(s['won'])} / {len(s['lost'])} / {s['tied']}", f"{s['p_value']:.3f}",
            f"{len(s['fixed'])} / {len(s['broken'])}", _cost(row, "calls_median", 1), _cost(row, "seconds_median", 1),
            f"**{row['verdict']}**"]


def _rows(result: Record) -> list[tuple[str, Record, int, int]]:
    """(name, row, affected, reran): each baseline, then the pooled row when there are several."""
    rows = [(r["label"], r, len(r["affected"]), r["reran"]) for r in result["datasets"]]
    if len(rows) > 1:
        pooled = result["pooled"]
        rows.append(("pooled", pooled, pooled["affected"], pooled["reran"]))
    return rows


def carry_over(result: Record) -> str:
    """What the --check found: identical, NOT EXACT with the differences, or not checked."""
    checks = [(r["label"], r["check"]) for r in result["datasets"] if r["check"]["ids"]]
    if not checks:
        return "not checked (`--check N` answers N carried-over questions again)"
    n = sum(len(c["ids"]) for _, c in checks)
    differ = [(label, d) for label, c in checks for d in c["differ"]]
    if not differ:
        return f"{n} carried-over question(s) answered again: identical ({', '.join(result['checked_fields'])})"
    shown = "; ".join(f"{label} {d['id']}: " + ", ".join(f"{f} {a!r} -> {b!r}" for f, (a, b) in d["fields"].items())
                      for label, d in differ[:5])
    return (f"**NOT EXACT**: {len(differ)} of {n} carried-over question(s) answered again differ from the baseline "
            f"({shown}{'; ...' if len(differ) > 5 else ''}); the carried-over answers are not what the ablation gives")


def markdown(result: Record) -> str:
    """One ablation: what was compared, where it acted, the carry-over check, the table and the verdict."""
    pooled = result["pooled"]
    stats = pooled["stats"]
    lines = [f"## {result['spec']}", "",
             f"- {result['baseline_method']} (baseline) against {result['ablated_method']} (ablated), commit "
             f"{', '.join(result['commit']['baseline'])} (ablated runs: {result['commit']['ablated']}), configuration "
             f"{result['configuration']}; answered again in {result['folder']}/",
             f"- answered again where it acted: {result['acted_where']}",
             f"- carried over from the baseline: {pooled['carried_over']} of {pooled['questions']} questions "
             f"(`carried_over` in {result['folder']}/paired.jsonl)",
             f"- carry-over: {carry_over(result)}"]
    if result["config_changes"]:
        lines.append(f"- settings changed: {'; '.join(result['config_changes'])}")
    lines += [f"- **{label}**" for label in result["labels"]]
    lines += ["", "| questions | n | affected | reran | F1 base | F1 ablated | F1 base - ablated [95%] "
              "| EM base - ablated [95%] | won / lost / tied | p | fixed / broken | calls/q | s/q | verdict |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, row, affected, reran in _rows(result):
        s = row["stats"]
        lines.append(f"| {name} | {row['questions']} | {affected} | {reran} | {score_text(s['f1_a'])} "
                     f"| {score_text(s['f1_b'])} | " + " | ".join(_cells(row)) + " |")
    lines += ["", f"Verdict: **{pooled['verdict']}** ({_why(pooled['verdict'])})."]
    for label, ids in (("fixed by it", stats["fixed"]), ("broken by it", stats["broken"])):
        if ids:
            lines.append(f"- {label} ({len(ids)}): {', '.join(ids)}")
    return "\n".join(lines) + "\n"


def _why(verdict: str) -> str:
    return {"pays": "the F1 interval of baseline - ablated lies above 0",
            "hurts": "the F1 interval of baseline - ablated lies below 0"}.get(
        verdict, "the F1 interval of baseline - ablated holds 0")


def markdown_summary(results: Sequence[Record]) -> str:
    """Every ablation in one table (each baseline and the pooled row), ready for docs/benchmarks.md."""
    if not results:
        return "No ablations.\n"
    first = results[0]
    folders = ", ".join(r["baseline"] for r in first["datasets"])
    lines = ["# Ablations", "",
             f"Baseline: {first['baseline_method']} in {folders} (commit {', '.join(first['commit']['baseline'])}, "
             f"configuration {first['configuration']}). {HOW}", "",
             "| ablated | questions | n | affected | F1 base - ablated [95%] | EM base - ablated [95%] "
             "| won / lost / tied | p | fixed / broken | calls/q | s/q | verdict | carry-over |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for result in results:
        exact = {None: "not checked", True: "checked: identical", False: "**NOT EXACT**"}[result["exact"]]
        for n, (name, row, affected, _) in enumerate(_rows(result)):
            spec = f"`{result['spec']}`" if n == 0 else ""
            lines.append(f"| {spec} | {name} | {row['questions']} | {affected} | " + " | ".join(_cells(row))
                         + f" | {exact if n == 0 else ''} |")
    notes = sorted({label for r in results for label in r["labels"]})
    lines += [""] + [f"- **{label}**" for label in notes]
    return "\n".join(lines).rstrip() + "\n"
