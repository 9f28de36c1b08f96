"""The questions of a finished `reagent-both` run that the round 3 changes could touch (a superset).

    .venv/bin/python scripts/round3_rerun_set.py bench-runs/test2-hotpotqa > ids.txt

Round 3 (after 97ad9aa) changed five things; each leaves a trace in a run's event log
when it can matter, so a question whose log shows none of them takes the same path at
the new code (greedy decoding, same machine) and keeps its answer:
- `anchor-each-step`: a decomposer output (first plan, retry or new plan) with a later
  step that names nothing and uses no earlier answer;
- `number-answer` for "what is the date of ...": the question or a step matches it;
- a new plan that only fills in an answer is not solved again: the run made a new plan;
- the controller never keeps an answer the supervisor gave up: a kept candidate after a
  global rollback;
- an either-or chain is trusted only when every step found its fact: an either-or
  question whose chain was trusted while a step was skipped or overridden.
Prints "id reasons" per line (the first column is an --ids file); the count on stderr.
Rerun these with the new code (both and none), and a few others as controls.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import duckdb

from reagent_local.bench.records import read_records
from reagent_local.reasoning.plan import plan_from
from reagent_local.rules.plan_rules import unanchored_steps
from reagent_local.rules.shapes import asks_number, either_or_options

# number-answer's question shape before round 3
OLD_NUMBER = re.compile(r"^(when|what year|in what year|in which year|which year|what date|on what date|how many"
                        r"|how much|how old|how long|what is the population|what was the population)\b", re.I)


def reasons(con: duckdb.DuckDBPyConnection, run: str, question: str) -> list[str]:
    """Why the round 3 code could take another path on this run's question."""
    def payloads(kind: str) -> list[dict]:
        rows = con.execute("select payload from events where run_id = ? and type = ?", [run, kind]).fetchall()
        return [json.loads(p) for (p,) in rows]

    why = []
    outputs = con.execute("select output from llm_calls where run_id = ? and agent = 'decomposer'", [run]).fetchall()
    for (output,) in outputs:
        try:
            subquestions = json.loads(output)["subquestions"]
        except (ValueError, KeyError, TypeError):
            continue
        if unanchored_steps(question, plan_from(subquestions, 4)):
            why.append("anchor-each-step")
    plans = payloads("plan")
    texts = [question] + [s for p in plans for s in p["subquestions"]]
    if any(asks_number(t) != bool(OLD_NUMBER.match(t.strip())) for t in texts):
        why.append("date-shape")
    if any(p["attempt"] > 1 for p in plans):
        why.append("new-plan")
    overrides = payloads("override")
    kinds = {t for (t,) in con.execute("select distinct type from events where run_id = ?", [run]).fetchall()}
    if "rollback_global" in kinds and any(o["decision"] == "keep best candidate" for o in overrides):
        why.append("override-after-rollback")
    trusted = any("trusted" in s.get("detail", "") for s in payloads("signal"))
    if either_or_options(question) and trusted and (overrides or "skipped" in kinds):
        why.append("options-trust")
    return sorted(set(why))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a bench run folder with reagent-both records and events.duckdb")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:  # a copy: the run's own log may still be open for writing
        copy = Path(tmp) / "events.duckdb"
        shutil.copy(args.run / "events.duckdb", copy)
        con = duckdb.connect(str(copy), read_only=True)
        both = [r for r in read_records(args.run / "records.jsonl") if r["method"] == "reagent-both"]
        touched = 0
        for record in both:
            why = reasons(con, record["run_id"], record["question"])
            if why:
                touched += 1
                print(record["id"], ",".join(why))
        con.close()
    print(f"{touched} of {len(both)} questions", file=sys.stderr)


if __name__ == "__main__":
    main()
