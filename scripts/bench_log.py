"""Cost of one logged event: alone, in bursts, and with several processes writing one log.

    python scripts/bench_log.py [--events 200] [--writers 4]

Prints a table (milliseconds per event, median and p90 of each append's latency) for:
- a burst: appends back to back (the connection stays open between them);
- isolated: each append after the file was released (open, insert, close: the cost a
  run pays for an event that follows an LLM call);
- N writer processes appending to one log at once (10 ms apart each, so their events
  interleave), plus a reader listing runs in a loop.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reagent_local.core import log as logmod  # noqa: E402
from reagent_local.core.log import EventLog  # noqa: E402

mp = multiprocessing.get_context("spawn")  # fresh interpreters, like separate `reagent` commands
PAYLOAD = {"kind": "assert", "text": "Sacramento is the capital of California " * 4}


def _append_many(path: str, run_id: str, n: int, pause: float) -> list[float]:
    log = EventLog(path)
    run = log.start_run("q", {}, run_id=run_id)
    latencies = []
    for t in range(n):
        start = time.perf_counter()
        log.append(run, "message", agent="verifier", payload=PAYLOAD, time=t)
        latencies.append(time.perf_counter() - start)
        if pause:
            time.sleep(pause)
    log.finish_run(run, "a", "ok", {})
    log.close()
    return latencies


def _writer(args: tuple[str, str, int, float]) -> list[float]:
    return _append_many(*args)


def _reader(path: str, stop, out) -> None:
    reads = 0
    while not stop.is_set():
        with EventLog(path, read_only=True) as log:
            log.runs(last=20)
        reads += 1
    out.put(reads)


def _row(name: str, latencies: list[float]) -> tuple[str, float, float, int]:
    ms = sorted(x * 1e3 for x in latencies)
    return name, statistics.median(ms), ms[int(0.9 * (len(ms) - 1))], len(ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--writers", type=int, default=4)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "log.duckdb")
        rows.append(_row("burst (one process)", _append_many(path, "burst", args.events, 0.0)))
        isolated = _append_many(path, "isolated", max(20, args.events // 10), logmod.HOLD_SECONDS * 1.5)
        rows.append(_row("isolated (file released between events)", isolated))
        stop, out = mp.Event(), mp.Queue()
        reader = mp.Process(target=_reader, args=(path, stop, out))
        reader.start()
        start = time.perf_counter()
        with mp.Pool(args.writers) as pool:
            # a short pause after each event, so the writers' events interleave and the file changes hands
            results = pool.map(_writer, [(path, f"w{i}", args.events, 0.01) for i in range(args.writers)])
        wall = time.perf_counter() - start
        stop.set()
        reads = out.get(timeout=60)
        reader.join()
        every = [x for r in results for x in r]
        rows.append(_row(f"{args.writers} writer processes at once (+1 reader)", every))
        with EventLog(path, read_only=True) as log:
            total = sum(len(log.events(f"w{i}")) for i in range(args.writers))
    print(f"{'case':<44} {'median ms':>10} {'p90 ms':>8} {'events':>7}")
    for name, median, p90, n in rows:
        print(f"{name:<44} {median:10.2f} {p90:8.2f} {n:7d}")
    print(f"\n{args.writers} writers: {total} of {args.writers * args.events} events logged, "
          f"{total / wall:.0f} events/s together; the reader listed runs {reads} times meanwhile")


if __name__ == "__main__":
    main()
