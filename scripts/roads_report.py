"""How the conflict signals did on a benchmark run: the two roads, confidences, re-plans.

    python scripts/roads_report.py bench-runs/tune-hotpotqa [--method reagent-both]

For every question of the method: the chain's answer and the whole question's answer with
their confidences, which the supervisor kept and how (evidence or a model choice), and the
F1 of each against the gold answers. Then totals: how often the roads disagreed, how often
the kept answer was the better one, and what the F1 would be with each road alone and with
an oracle choice. Read tune runs with it; report on test runs with `bench report`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reagent_local.bench.metrics import best_em_f1  # noqa: E402
from reagent_local.bench.records import read_records  # noqa: E402
from reagent_local.core import events as ev  # noqa: E402
from reagent_local.core.log import EventLog  # noqa: E402


def road_rows(folder: Path, method: str) -> list[dict]:
    """One row per question: both roads, the verdict and each road's F1."""
    records = [r for r in read_records(folder / "records.jsonl") if r["method"] == method and r.get("run_id")]
    rows = []
    with EventLog(folder / "events.duckdb", read_only=True) as log:
        for record in records:
            bodies = [ev.decode(e) for e in log.events(record["run_id"])]
            signals = [b for b in bodies if isinstance(b, ev.Signal)]
            roads = [s for s in signals if s.signal == "two-roads" and s.fired]
            decisions = [b for b in bodies if isinstance(b, ev.Decision)]
            row = {"id": record["id"], "f1": record["f1"], "prediction": record["prediction"],
                   "signals": sorted({s.signal for s in signals if s.fired}),
                   "low_confidence_retries": sum("unsure" in " ".join(d.reasons) for d in decisions if
                                                 d.decision == "retry"),
                   "min_step_confidence": min((d.confidence for d in decisions if d.decision == "accept"),
                                              default=None)}
            if roads:
                first = roads[0].values
                row.update(chain=first.get("chain"), whole=first.get("whole"), winner=first.get("winner"),
                           judged=first.get("judged"), reason=roads[0].detail,
                           chain_f1=best_em_f1(first.get("chain", ""), record["answers"])[1],
                           whole_f1=best_em_f1(first.get("whole", ""), record["answers"])[1])
            rows.append(row)
    return rows


def summary(rows: list[dict]) -> dict:
    """Totals over the rows."""
    disagreed = [r for r in rows if "chain" in r]
    kept_better = sum((r["winner"] == "chain") == (r["chain_f1"] >= r["whole_f1"]) for r in disagreed
                      if r["chain_f1"] != r["whole_f1"])
    decided = sum(r["chain_f1"] != r["whole_f1"] for r in disagreed)
    routes = Counter("model choice" if r["judged"] else "evidence" for r in disagreed)
    n = len(rows) or 1
    chain_only = sum(r.get("chain_f1", r["f1"]) for r in rows) / n
    whole_only = sum(r.get("whole_f1", r["f1"]) for r in rows) / n
    oracle = sum(max(r.get("chain_f1", r["f1"]), r.get("whole_f1", r["f1"])) for r in rows) / n
    return {"questions": len(rows), "roads disagreed": len(disagreed), "settled by": dict(routes),
            "kept the better answer": f"{kept_better} of {decided} where the two differ in F1",
            "F1 as run": round(sum(r["f1"] for r in rows) / n, 3),
            "F1 first disagreement, chain kept": round(chain_only, 3),
            "F1 first disagreement, whole question kept": round(whole_only, 3),
            "F1 oracle choice": round(oracle, 3),
            "signals fired": dict(Counter(s for r in rows for s in r["signals"]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--method", default="reagent-both")
    parser.add_argument("--json", action="store_true", help="print the rows and totals as JSON")
    args = parser.parse_args()
    rows = road_rows(args.folder, args.method)
    if args.json:
        print(json.dumps({"rows": rows, "summary": summary(rows)}, indent=2, ensure_ascii=False))
        return
    for r in rows:
        if "chain" in r:
            mark = "judged" if r["judged"] else "evidence"
            print(f"{r['id']}  chain {r['chain']!r} ({r['chain_f1']:.2f})  whole {r['whole']!r} ({r['whole_f1']:.2f})"
                  f"  -> {r['winner']} [{mark}] final F1 {r['f1']:.2f}: {r['reason']}")
    for key, value in summary(rows).items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
