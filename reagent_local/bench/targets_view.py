"""``reagent bench targets``' Markdown: one line per target, met or missed, with what the records came from."""

from __future__ import annotations

from typing import Any

from .provenance import describe


def _verdict(met: bool | None) -> str:
    return "-" if met is None else "**met**" if met else "**missed**"


def _cell(value: Any) -> str:
    return ("-" if value in (None, "") else str(value)).replace("|", "\\|")


def markdown(report: dict[str, Any]) -> str:
    """The targets table, then the origin of each side (commit, configuration, machine)."""
    lines = [f"# Targets: {report['method']}", "",
             f"Runs: {', '.join(report['folders'])}"
             + (f"; time: {', '.join(report['time_folders'])}" if report["time_folders"] else "; no time runs given"),
             "", "| target | scope | value | needs | verdict | detail |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['target']} | {r['scope']} | {_cell(r['value'])} | {r['need']} | {_verdict(r['met'])} "
              f"| {_cell(r['detail'])} |" for r in report["rows"]]
    lines += ["", "Intervals: paired bootstrap 95% over questions. Records:"]
    lines += [f"- {side}: {describe(origin)}" for side, origin in report["origins"].items()]
    if report.get("mixed"):
        lines += ["", report["mixed"]]
    return "\n".join(lines) + "\n"
