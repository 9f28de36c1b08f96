"""Cost of the reversible core: append, fold, checkpoint and rollback on a state of N statements.

Usage: .venv/bin/python scripts/bench_core.py [--statements 1000] [--repeats 5] [--log DIR]

Prints microseconds per appended event (raw EventLog.append, and Workspace.assert_statement
which also applies the event to the live state), per folded event, and the cost of one
checkpoint, one global and one local rollback, a replay from the log and a consistency
check, all on a state holding ``--statements`` statements. The log is a DuckDB file in a
temporary folder (or --log), as in a real run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reagent_local.core.conflicts import ConflictChecker  # noqa: E402
from reagent_local.core.knowledge import fold, make_statement  # noqa: E402
from reagent_local.core.log import EventLog  # noqa: E402
from reagent_local.core.workspace import Workspace, replay  # noqa: E402

AGENTS = ("retriever", "verifier", "assembler")


def timed(fn: Callable[[], object], repeats: int) -> float:
    """Median seconds of ``repeats`` calls."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def statement(i: int):
    return make_statement(subject=f"Entity {i}", relation="population", value=f"{1000 + i:,}", subquestion=i % 4,
                          provenance=[(f"passage-{i}", 0.5)], confidence=0.8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--statements", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--log", type=Path, default=None, help="folder for the DuckDB file (default: a temp dir)")
    args = parser.parse_args()
    if args.log is not None:
        bench(args.log, args.statements, args.repeats)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-core-") as tmp:
            bench(Path(tmp), args.statements, args.repeats)


def bench(folder: Path, n: int, repeats: int) -> None:
    """Run every measurement with the log in ``folder`` and print the table."""
    rows: list[tuple[str, float, str]] = []

    with EventLog(folder / "bench.duckdb") as log:
        run = log.start_run("raw appends", {})
        start = time.perf_counter()
        for t in range(1, n + 1):
            log.append(run, "note", agent="bench", payload={"t": t, "text": "x" * 200}, time=t)
        rows.append(("EventLog.append (file, committed)", (time.perf_counter() - start) / n * 1e6, "us/event"))

        ws = Workspace.start(log, "bench", {})
        start = time.perf_counter()
        for i in range(n):
            ws.assert_statement(AGENTS[i % 3], statement(i))
        rows.append(("Workspace.assert_statement", (time.perf_counter() - start) / n * 1e6, "us/event"))

        events = ws.events()
        per_fold = timed(lambda: fold(events), repeats)
        rows.append((f"fold over {len(events)} events (in memory)", per_fold / len(events) * 1e6, "us/event"))

        cp_seconds = []
        for _ in range(repeats):
            start = time.perf_counter()
            cp = ws.checkpoint("bench")
            cp_seconds.append(time.perf_counter() - start)
        rows.append((f"checkpoint, state of {len(ws.global_state())} statements", statistics.median(cp_seconds) * 1e3, "ms"))

        for i in range(n, n + 100):  # a branch to abandon
            ws.assert_statement("verifier", statement(i))
        glob, local = [], []
        for _ in range(repeats):
            start = time.perf_counter()
            ws.rollback_global(cp.id, "bench")
            glob.append(time.perf_counter() - start)
            for i in range(n, n + 100):
                ws.assert_statement("verifier", statement(i))
            start = time.perf_counter()
            ws.rollback_local("verifier", cp.id, "bench")
            local.append(time.perf_counter() - start)
            for i in range(n, n + 100):
                ws.assert_statement("verifier", statement(i))
        rows.append((f"rollback_global to {n} statements (discards 100)", statistics.median(glob) * 1e3, "ms"))
        rows.append((f"rollback_local to {n} statements (discards 100)", statistics.median(local) * 1e3, "ms"))

        total = len(ws.events())
        rows.append((f"replay from the log ({total} events)", timed(lambda: replay(log, ws.run_id), repeats) * 1e3, "ms"))
        rows.append(("state_at (snapshot + tail)", timed(lambda: ws.state_at(ws.clock.now - 50), repeats) * 1e3, "ms"))
        def read_during_run() -> None:
            with EventLog(folder / "bench.duckdb", read_only=True) as reader:
                assert len(reader.events(ws.run_id)) == total

        size_kb = (folder / "bench.duckdb").stat().st_size // 1024
        rows.append((f"read-only open and read during the run ({size_kb} KB log)",
                     timed(read_during_run, repeats) * 1e3, "ms"))
        sample = list(ws.global_state())[:200]
        rows.append(("is_consistent, 200 statements (rules)",
                     timed(lambda: ConflictChecker().is_consistent(sample), repeats) * 1e3, "ms"))

    width = max(len(r[0]) for r in rows)
    print(f"reversible core, {n} statements, median of {repeats} where repeated; log in {folder}")
    for name, value, unit in rows:
        print(f"  {name:<{width}}  {value:10.1f} {unit}")


if __name__ == "__main__":
    main()
