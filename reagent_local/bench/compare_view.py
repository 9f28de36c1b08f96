"""``reagent bench compare``: two sides read from run folders, compared, as JSON data or Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from .noise import noise_line, read_noise
from .paired import compare_records
from .provenance import UNKNOWN, check_one_machine, config_differences, describe
from .sides import Side, load_sides
from .stats import RESAMPLES, SEED


def comparison(folders: Sequence[Path], methods: Sequence[str] = (), *, allow_mixed: bool = False,
               resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, Any]:
    """The whole comparison: both sides (method, folders, origin), how their configurations differ, the statistics,
    and the noise floor measured on this package's machine (``noise.py``).

    Sides of different machines are refused unless ``allow_mixed`` (then ``machines_mixed`` says so).
    """
    a, b = load_sides(folders, methods, allow_mixed=allow_mixed)
    mixed = check_one_machine({"A": a.origin, "B": b.origin}, "this comparison", allow_mixed=allow_mixed)
    return {"a": _side(a), "b": _side(b), "config_changes": _changes(a, b), "machines_mixed": mixed,
            "noise_floor": read_noise(),
            **compare_records(a.records, b.records, resamples=resamples, seed=seed)}


def _side(side: Side) -> dict[str, Any]:
    return {"method": side.method, "folders": [str(f) for f in side.folders], "records": len(side.records),
            "origin": side.origin}


def _changes(a: Side, b: Side) -> list[str] | None:
    """The settings B changes from A, when each side is one known configuration."""
    if len(a.configs) != 1 or len(b.configs) != 1:
        return None
    return config_differences(next(iter(a.configs.values())), next(iter(b.configs.values())))


def score_text(value: float | None) -> str:
    """'.683', '-.250', '1.000'; '-' for none."""
    if value is None:
        return "-"
    text = f"{value:.3f}"
    return text.replace("0.", ".", 1) if text.startswith(("0.", "-0.")) else text


def diff_text(value: float | None, interval: list[float] | None) -> str:
    """'+.250 [-.133, +.667]': a signed difference with its interval."""
    if value is None:
        return "-"
    signed = lambda v: ("+" if v >= 0 else "-") + score_text(abs(v))  # noqa: E731
    return f"{signed(value)} [{signed(interval[0])}, {signed(interval[1])}]" if interval else signed(value)


def _row(name: str, s: dict[str, Any]) -> str:
    return (f"| {name} | {s['questions']} | {score_text(s['f1_a'])} | {score_text(s['f1_b'])} "
            f"| {diff_text(s['f1_diff'], s['f1_interval'])} | {score_text(s['em_a'])} | {score_text(s['em_b'])} "
            f"| {diff_text(s['em_diff'], s['em_interval'])} | {len(s['won'])} / {len(s['lost'])} / {s['tied']} "
            f"| {s['p_value']:.3f} | {len(s['fixed'])} / {len(s['broken'])} |")


def _ids(label: str, ids: Sequence[str]) -> list[str]:
    return [f"- {label} ({len(ids)}): {', '.join(ids)}"] if ids else []


def markdown(result: dict[str, Any]) -> str:
    """The comparison as Markdown: sides, what was left out, one table (all, by dataset, by type), the ids."""
    a, b, boot = result["a"], result["b"], result["bootstrap"]
    lines = [f"# {a['method']} (A) against {b['method']} (B)", "",
             f"- A: {a['method']} in {', '.join(a['folders'])}: {describe(a['origin'])}",
             f"- B: {b['method']} in {', '.join(b['folders'])}: {describe(b['origin'])}"]
    if result.get("config_changes"):
        lines.append(f"- B's configuration against A's: {'; '.join(result['config_changes'])}")
    if result.get("machines_mixed"):
        lines.append(f"- {result['machines_mixed']}")
    for label, who in (("A", "only_a"), ("B", "only_b")):
        if result[who]:
            lines.append(f"- left out, answered only in {label} ({len(result[who])}): {', '.join(result[who])}")
    lines += ["", f"Paired on {result['questions']} questions (dataset and id). Differences are A - B, with a "
              f"paired bootstrap {boot['level']:.0%} interval ({boot['resamples']:,} resamples, seed {boot['seed']}); "
              "won / lost / tied by F1, p: exact two-sided sign test over won and lost; fixed / broken: wrong in B "
              "and right in A / right in B and wrong in A, by EM.", "",
              "| questions | n | F1 A | F1 B | F1 A - B [95%] | EM A | EM B | EM A - B [95%] | won / lost / tied "
              "| p | fixed / broken |", "|---|---|---|---|---|---|---|---|---|---|---|",
              _row("all", result["all"])]
    if len(result["by_dataset"]) > 1:
        lines += [_row(name, s) for name, s in result["by_dataset"].items()]
    lines += [_row(name, s) for name, s in result["by_type"].items()]
    machines = [m for side in (a, b) for m in (side["origin"].get("machines") or {}) if m != UNKNOWN]
    noise = noise_line(result.get("noise_floor"), machines)
    if noise:
        lines += ["", noise]
    overall = result["all"]
    lines += ["", *_ids("won by A", overall["won"]), *_ids("lost by A", overall["lost"]),
              *_ids("fixed", overall["fixed"]), *_ids("broken", overall["broken"])]
    return "\n".join(lines).rstrip() + "\n"
