"""One machine, one model: measure what sharing the cores costs, with the real commands, and print the table.

Sections (``--only`` picks some; all by default, about 25 minutes with the 1.5B model on 2 cores):

- ``solo``: one `reagent ask --local` on quiet cores, with OpenMP's waiting threads sleeping at once
  (PASSIVE, the default now) and spinning first (``GOMP_SPINCOUNT=300000``: GNU OpenMP's own default,
  what every ask did before): does PASSIVE slow a lone process?
- ``pair``: two `reagent ask --local` started together, under four settings: spinning waits and
  every process using all cores (before), each change alone, and both (now); each ask's seconds
  over its solo seconds.
- ``bench``: an ask started beside a running `reagent bench run --local`, before and now.
- ``served``: a `reagent serve --background` and an ask that it answers: the client's wall time over
  the run's own seconds (the overhead), the client's peak memory against a local ask's, and the
  answer and the trace against a local run's; then the server killed mid-question (the client's
  error, the run's status) and the next ask (it loads its own model).

Needs a quiet machine for the contention sections (`uptime` near 0): the script refuses to start
when the 1-minute load is over ``--max-load`` unless told to go on. Run it from the checkout::

    .venv/bin/python scripts/bench_sharing.py                  # everything, the 1.5B model
    .venv/bin/python scripts/bench_sharing.py --only served    # the server checks only
    .venv/bin/python scripts/bench_sharing.py --model smollm2-135m --only solo,pair   # quick
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
QUESTION = "Who directed the film Actrius and which language is it in?"
BENCH_FILE = REPO.parent / "shared" / "data" / "hotpotqa" / "hotpot_dev_distractor_sample200.json"
# launches a command and writes its peak memory (KB) to a file: a child forked from a large process would
# carry that process's peak in its own account (Linux keeps the peak across exec)
PEAK = ("import os, subprocess, sys\nchild = subprocess.Popen(sys.argv[2:])\n_, status, usage = os.wait4(child.pid, 0)\n"
        "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\nsys.exit(os.waitstatus_to_exitcode(status))")
SPIN = {"GOMP_SPINCOUNT": "300000"}  # GNU OpenMP's default: waiting threads spin, then sleep
PASSIVE: dict[str, str] = {}  # reagent's default now: OMP_WAIT_POLICY=PASSIVE
SETTINGS = {  # name: (environment, what it is)
    "before": ({**SPIN, "REAGENT_LLM_N_THREADS": "CORES"}, "spinning waits, all cores each (before)"),
    "passive only": ({"REAGENT_LLM_N_THREADS": "CORES"}, "passive waits, all cores each"),
    "shared only": (dict(SPIN), "spinning waits, a fair share of the cores"),
    "now": (dict(PASSIVE), "passive waits, a fair share of the cores (the default)"),
}


class Runner:
    """Starts reagent commands on one home with the chosen model and index."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.cores = len(os.sched_getaffinity(0))
        self.env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        if args.home:
            self.env["REAGENT_HOME"] = str(args.home)
        for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "REAGENT_LLM_N_THREADS", "REAGENT_API_KEY"):
            self.env.pop(name, None)
        self.children: list[subprocess.Popen] = []

    def stop_children(self) -> None:
        """End the asks this script started that still run (after an interruption)."""
        for child in self.children:
            if child.poll() is None:  # the launcher and the ask it started: their own process group
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()

    def environment(self, extra: dict[str, str]) -> dict[str, str]:
        return {**self.env, **{k: v.replace("CORES", str(self.cores)) for k, v in extra.items()}}

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "reagent_local", *args]

    def ask_args(self, *extra: str) -> list[str]:
        return ["ask", self.args.question, "--model", self.args.model, "--index", self.args.index, "--json", *extra]

    def start_ask(self, extra_env: dict[str, str], *extra: str) -> tuple[subprocess.Popen, Path, float]:
        peak = Path(tempfile.mktemp(prefix="peak-"))
        child = subprocess.Popen([sys.executable, "-c", PEAK, str(peak), *self.command(*self.ask_args(*extra))],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=self.environment(extra_env), start_new_session=True)
        self.children.append(child)
        return child, peak, time.monotonic()

    def finish_ask(self, started: tuple[subprocess.Popen, Path, float]) -> dict[str, Any]:
        child, peak, began = started
        out, err = child.communicate()
        wall = time.monotonic() - began
        memory = int(peak.read_text() or 0) if peak.exists() else 0
        peak.unlink(missing_ok=True)
        result = json.loads(out) if child.returncode == 0 and out.strip() else None
        return {"wall": wall, "code": child.returncode, "answer": result, "peak_mb": memory / 1024, "stderr": err}

    def ask(self, extra_env: dict[str, str], *extra: str) -> dict[str, Any]:
        return self.finish_ask(self.start_ask(extra_env, *extra))

    def run(self, *args: str, env: dict[str, str] | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
        return subprocess.run(self.command(*args), capture_output=True, text=True, env=env or self.env,
                              timeout=timeout)


def _fmt(seconds: float) -> str:
    return f"{seconds:.1f}"


def solo(r: Runner, reps: int) -> dict[str, float]:
    """A lone ask's seconds with passive and with spinning waits (the median of ``reps``)."""
    rows, out = [], {}
    for name, env in (("passive (now)", PASSIVE), ("spinning (before)", SPIN)):
        walls = []
        for _ in range(reps):
            done = r.ask(env, "--local")
            check(done, f"solo ask, {name}")
            walls.append(done["wall"])
        out[name] = statistics.median(walls)
        calls = done["answer"]["llm_calls"]
        rows.append(f"| {name} | {', '.join(map(_fmt, walls))} | {_fmt(out[name])} | {calls} |")
    print("\n### One ask alone\n\n| OpenMP waits | seconds (each run) | median | LLM calls |\n|---|---|---|---|")
    print("\n".join(rows))
    return out


def _alone(alone: dict[str, float], env: dict[str, str]) -> float:
    """One ask alone with the same waits (spinning or passive) as ``env``."""
    return alone["spinning (before)" if "GOMP_SPINCOUNT" in env else "passive (now)"]


def pair(r: Runner, alone: dict[str, float]) -> None:
    """Two asks started together under each setting: seconds and their ratio to one ask alone with the same waits."""
    print("\n### Two asks started together\n")
    print("| setting | ask 1 s | ask 2 s | one alone s | slowest / alone |\n|---|---|---|---|---|")
    for name in r.args.settings:
        env, what = SETTINGS[name]
        first, second = r.start_ask(env, "--local"), r.start_ask(env, "--local")
        done = [r.finish_ask(first), r.finish_ask(second)]
        for d in done:
            check(d, f"paired ask, {name}")
        slowest, solo_s = max(d["wall"] for d in done), _alone(alone, env)
        print(f"| {name}: {what} | {_fmt(done[0]['wall'])} | {_fmt(done[1]['wall'])} | {_fmt(solo_s)} "
              f"| {slowest / solo_s:.1f}x |", flush=True)


def beside_bench(r: Runner, alone: dict[str, float]) -> None:
    """An ask started beside a running benchmark, before and now."""
    print("\n### An ask beside a running `reagent bench run`\n")
    print("| setting | ask s | one alone s | ask / alone | benchmark records while the ask ran |\n|---|---|---|---|---|")
    for name in ("before", "now"):
        env, what = SETTINGS[name]
        with tempfile.TemporaryDirectory(prefix="bench-sharing-") as out:
            bench = subprocess.Popen(r.command("bench", "run", "--dataset", "hotpotqa", "--file", str(r.args.bench_file),
                                               "--n", "40", "--methods", "reagent-both", "--index", r.args.index,
                                               "--model", r.args.model, "--out", out, "--local"),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     env=r.environment(env), start_new_session=True)
            records = Path(out) / "records.jsonl"
            try:
                deadline = time.monotonic() + 900
                while not (records.exists() and records.read_text().strip()):  # it is answering questions now
                    if bench.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit(f"the benchmark did not start answering ({bench.returncode})")
                    time.sleep(1)
                before = len(records.read_text().splitlines())
                done = r.ask(env, "--local")
                after = len(records.read_text().splitlines())
            finally:
                os.killpg(bench.pid, signal.SIGINT)
                try:
                    bench.wait(120)
                except subprocess.TimeoutExpired:
                    os.killpg(bench.pid, signal.SIGKILL)
        check(done, f"ask beside the benchmark, {name}")
        solo_s = _alone(alone, env)
        print(f"| {name}: {what} | {_fmt(done['wall'])} | {_fmt(solo_s)} | {done['wall'] / solo_s:.1f}x "
              f"| {after - before} |", flush=True)


def served(r: Runner) -> None:
    """The server answers an ask: overhead, client memory, equal answer and trace; then killed mid-question."""
    from reagent_local.config import load_config
    from reagent_local.trace.compare import comparable_events as comparable_trace

    log = Path(load_config(env=r.env).paths.log)
    local = r.ask(PASSIVE, "--local")
    check(local, "local ask")
    started = r.run("serve", "--model", r.args.model, "--index", r.args.index, "--port", "0", "--background")
    if started.returncode != 0:
        raise SystemExit(f"reagent serve --background failed: {started.stderr.strip()}")
    try:
        warm = r.ask(PASSIVE)  # the server's first question prefills its prompts for the first time
        check(warm, "first served ask")
        asks = [r.ask(PASSIVE) for _ in range(r.args.reps)]
        for a in asks:
            check(a, "served ask")
            if "asking the server" not in a["stderr"]:
                raise SystemExit("the ask did not go to the server: " + a["stderr"].strip())
        same_answer = all(_answer_part(a["answer"]) == _answer_part(local["answer"]) for a in asks)
        same_trace = all(comparable_trace(log, a["answer"]["run_id"]) == comparable_trace(log, local["answer"]["run_id"])
                         for a in asks)
        print("\n### `reagent ask` answered by `reagent serve` of the same home\n")
        print("| ask | wall s | run s (in the server) | overhead s | peak memory MB | answer = local | trace = local |")
        print("|---|---|---|---|---|---|---|")
        print(f"| local (`--local`) | {_fmt(local['wall'])} | {_fmt(local['answer']['seconds'])} | - "
              f"| {local['peak_mb']:.0f} | - | - |")
        for n, a in enumerate([warm, *asks]):
            label = "served, the server's first question" if n == 0 else f"served #{n}"
            print(f"| {label} | {_fmt(a['wall'])} | {_fmt(a['answer']['seconds'])} "
                  f"| {a['wall'] - a['answer']['seconds']:.2f} | {a['peak_mb']:.0f} "
                  f"| {'yes' if _answer_part(a['answer']) == _answer_part(local['answer']) else 'NO'} "
                  f"| {'yes' if comparable_trace(log, a['answer']['run_id']) == comparable_trace(log, local['answer']['run_id']) else 'NO'} |")
        print(f"\nAll served answers equal the local one: {same_answer}; all traces: {same_trace}.")
        killed(r, log)
    finally:
        r.run("serve", "--stop")


def killed(r: Runner, log: Path) -> None:
    """Kill the server mid-question: the client's error and the run's status; then the next ask."""
    status = r.run("serve", "--status")
    pid = int(status.stdout.split(" pid ")[1].split()[0])
    asking = r.start_ask(PASSIVE)
    deadline = time.monotonic() + 300
    run_id = None
    while run_id is None and time.monotonic() < deadline:
        listed = json.loads(r.run("trace", "list", "--json", "--last", "3").stdout or "[]")  # the newest
        run_id = next((x["run_id"] for x in listed if x["status"] == "running" and (x.get("events") or 0) >= 3), None)
        time.sleep(0.3)
    os.kill(pid, signal.SIGKILL)
    done = r.finish_ask(asking)
    shown = {x["run_id"]: x["status"] for x in json.loads(r.run("trace", "list", "--json").stdout)}
    error = [line for line in done["stderr"].splitlines() if line.startswith("error:")]
    again = r.ask(PASSIVE)
    print("\n### The server killed (SIGKILL) mid-question\n")
    print(f"- the ask exited {done['code']} with: `{error[0] if error else done['stderr'].strip()[-300:]}`")
    print(f"- its run {run_id} shows as `{shown.get(run_id)}` in `reagent trace list`")
    print(f"- the next ask exited {again['code']}, "
          f"{'went to a server' if 'asking the server' in again['stderr'] else 'loaded its own model'}, "
          f"in {_fmt(again['wall'])} s")


def _answer_part(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in ("run_id", "seconds", "llm_seconds")}


def check(done: dict[str, Any], what: str) -> None:
    if done["code"] != 0 or done["answer"] is None:
        raise SystemExit(f"{what} failed ({done['code']}): {done['stderr'].strip()[-500:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--index", default="enwiki-sample")
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--home", type=Path, default=None, help="REAGENT_HOME (default: the environment's)")
    parser.add_argument("--bench-file", type=Path, default=BENCH_FILE)
    parser.add_argument("--only", default="solo,pair,bench,served", help="sections, comma-separated")
    parser.add_argument("--settings", default=",".join(SETTINGS), help="the pair section's settings")
    parser.add_argument("--reps", type=int, default=2, help="runs of each solo and served ask")
    parser.add_argument("--max-load", type=float, default=0.5, help="refuse to start above this 1-minute load")
    parser.add_argument("--busy-ok", action="store_true", help="measure even on a busy machine")
    args = parser.parse_args()
    args.settings = [s.strip() for s in args.settings.split(",") if s.strip()]
    sections = {s.strip() for s in args.only.split(",")}
    load = os.getloadavg()[0]
    if load > args.max_load and not args.busy_ok:
        raise SystemExit(f"the machine is busy (1-minute load {load:.1f}): contention figures would be wrong; "
                         "wait, or pass --busy-ok")
    r = Runner(args)
    print(f"## Sharing one machine: {args.model}, index {args.index}, {r.cores} cores, load {load:.2f} at start, "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    if r.run("serve", "--status").returncode == 0:
        raise SystemExit("a `reagent serve` runs on this home: stop it first (`reagent serve --stop`)")
    alone: dict[str, float] = {}
    try:
        if sections & {"solo", "pair", "bench"}:
            alone = solo(r, args.reps)
        if "pair" in sections:
            pair(r, alone)
        if "bench" in sections:
            beside_bench(r, alone)
        if "served" in sections:
            served(r)
    finally:
        r.stop_children()


if __name__ == "__main__":
    main()
