"""Probe a model load in a child process before this process risks it: never a bare segfault.

A native crash inside llama.cpp (the AMX repacking fault in reagent_local/runtime/cpu.py is one) kills the
whole process without a Python exception. So the first load of each combination of model file,
llama.cpp build, CPU and settings runs in a child process first: load, then a few tokens of a fixed
prompt. The verdict (which ``extra_buffers`` value works) is remembered in the home's cache, keyed
by that combination, so later loads read one small file and start no child.

With ``extra_buffers = "auto"`` a child that dies is tried again with the extra buffers off; with
``on`` or ``off`` a dying child is one error that names the model, the llama.cpp version, the CPU
features and the setting that avoids it.

Under ``auto``, where both settings are safe, the children also time a block of prompt and a few
generated tokens, and the faster setting for a typical call of this project wins: the repacked
weights are not faster everywhere (on an AMD EPYC Zen 4 they made prefill a third slower and
decoding a fifth faster, docs/models.md), so the choice is measured on the machine, not assumed.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from .cpu import CpuInfo, extra_buffers_enabled, read_cpu
from ..errors import NativeCrashError
from ..paths import write_bytes_atomic

VERDICT_VERSION = 2  # 2: the verdict of ``auto`` is the faster of the safe settings
PROBE_TIMEOUT_S = 600.0  # a large model on a slow disk; a hang is inconclusive, not a verdict
# about 100 tokens: enough that the prompt is evaluated as one batched matrix multiply, as real prompts are
PROBE_PROMPT = (
    "The Amazon is the largest rainforest on Earth. It covers much of northwestern Brazil and "
    "extends into Colombia, Peru and other South American countries. The river that gives the "
    "forest its name carries more water than any other river in the world, and its basin is home "
    "to millions of species of insects, plants, birds and other forms of life. Question: which "
    "country holds most of the Amazon rainforest? Answer:"
)
PROBE_TOKENS = 4
# the speed check under auto: one wide prefill block (runtime/prefill.py) and a few generated tokens
SPEED_PROMPT_TOKENS = 256
SPEED_DECODE_TOKENS = 16
# what a typical model call of the pipeline evaluates and writes (the verifier's mean in docs/benchmarks.md'
# profiles: about 600 prompt tokens past its cached instructions, 30 generated): the two rates are weighed by it
TYPICAL_PROMPT_TOKENS = 600
TYPICAL_OUTPUT_TOKENS = 30
# the extra buffers go off only when that makes a typical call at least this much faster: a near tie is
# measurement noise, and keeps llama.cpp's default
SPEED_MARGIN = 0.05
# Windows reports a native crash as an NTSTATUS exit code instead of a signal
_WINDOWS_CRASH_CODES = {0xC0000005, 0xC00000FD, 0xC0000409, 0xC000001D}

CommandFactory = Callable[..., Sequence[str]]  # (model, extra_buffers, gpu_layers, threads, speed=False) -> argv


@dataclass(frozen=True)
class ProbeAttempt:
    """One child process: the setting it tried and how it ended."""

    extra_buffers: bool
    outcome: str  # ok | crashed | failed | timeout
    returncode: int | None
    seconds: float
    signal: str = ""
    stderr_tail: str = ""
    # measured by the child under auto: prompt and generated tokens per second (None: not measured)
    prefill_tps: float | None = None
    decode_tps: float | None = None

    def typical_call_seconds(self) -> float | None:
        """The seconds of a typical call at the measured rates (None when not measured)."""
        if not self.prefill_tps or not self.decode_tps:
            return None
        return TYPICAL_PROMPT_TOKENS / self.prefill_tps + TYPICAL_OUTPUT_TOKENS / self.decode_tps


@dataclass(frozen=True)
class LoadVerdict:
    """Which ``extra_buffers`` value loads this model safely here, and how that was found out."""

    key: str
    extra_buffers: bool | None  # None: no setting survived the probe
    attempts: tuple[ProbeAttempt, ...] = ()
    from_cache: bool = False
    probed_at: float = field(default_factory=time.time)

    @property
    def ok(self) -> bool:
        return self.extra_buffers is not None

    @property
    def probe_seconds(self) -> float:
        return sum(a.seconds for a in self.attempts)

    def to_json(self) -> dict:
        data = asdict(self)
        data.pop("from_cache")
        return {"version": VERDICT_VERSION, **data}

    @classmethod
    def from_json(cls, data: dict) -> "LoadVerdict":
        attempts = tuple(ProbeAttempt(**a) for a in data.get("attempts", ()))
        return cls(key=data["key"], extra_buffers=data["extra_buffers"], attempts=attempts, from_cache=True,
                   probed_at=float(data.get("probed_at", 0.0)))


def llama_build() -> tuple[str, str]:
    """llama-cpp-python's version and llama.cpp's system-info line (the backends and CPU features it was built with)."""
    import llama_cpp

    return llama_cpp.__version__, llama_cpp.llama_print_system_info().decode("utf-8", errors="replace").strip()


def probe_key(model: Path, setting: str, cpu: CpuInfo, build: tuple[str, str], gpu_layers: int,
              threads: int = 1) -> str:
    """A hash of everything that decides whether a load crashes, and which setting is faster: file, llama.cpp
    build, CPU, settings, threads."""
    stat = model.stat()
    identity = {
        "model": str(model.resolve()), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns,
        "llama_cpp": build[0], "system_info": build[1], "cpu": cpu.model, "flags": sorted(cpu.flags),
        "extra_buffers": setting, "gpu_layers": gpu_layers, "python": sys.version.split()[0], "threads": threads,
    }
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:24]


def child_command(model: Path, extra_buffers: bool, gpu_layers: int, threads: int, speed: bool = False) -> list[str]:
    """The command line of a probe child: this module run as a script (``speed``: time it too)."""
    return [sys.executable, "-m", "reagent_local.runtime.load_probe", str(model),
            "--extra-buffers", "on" if extra_buffers else "off", "--gpu-layers", str(gpu_layers),
            "--threads", str(threads), *(["--speed"] if speed else [])]


def _speeds(stdout: str) -> tuple[float | None, float | None]:
    """The prefill and decode rates a speed child printed as its last line of JSON (None, None: none)."""
    for line in reversed((stdout or "").strip().splitlines()):
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("prefill_tps") and data.get("decode_tps"):
            return float(data["prefill_tps"]), float(data["decode_tps"])
        break
    return None, None


def faster_setting(attempts: Sequence[ProbeAttempt], default: bool) -> bool:
    """The extra-buffers value whose measured typical call is the fastest of the attempts that loaded, by at least
    ``SPEED_MARGIN``; ``default`` (llama.cpp's own) when nothing was measured or it is a near tie."""
    timed = {a.extra_buffers: a.typical_call_seconds() for a in attempts if a.outcome == "ok"}
    timed = {extra: seconds for extra, seconds in timed.items() if seconds is not None}
    if default not in timed or len(timed) < 2:
        return default
    best = min(timed, key=timed.__getitem__)
    return best if timed[best] < timed[default] * (1 - SPEED_MARGIN) else default


def _is_crash(returncode: int) -> bool:
    return returncode < 0 or (os.name == "nt" and (returncode & 0xFFFFFFFF) in _WINDOWS_CRASH_CODES)


def run_attempt(argv: Sequence[str], extra_buffers: bool, timeout: float = PROBE_TIMEOUT_S) -> ProbeAttempt:
    """Run one probe child and classify how it ended."""
    start = time.perf_counter()
    try:
        # passive OpenMP waits: on busy cores llama.cpp's spinning threads made a 1 s probe take 14 s
        env = {"OMP_WAIT_POLICY": "PASSIVE", **os.environ, "PYTHONFAULTHANDLER": "1"}
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as exc:
        tail = (exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or "")[-2000:]
        return ProbeAttempt(extra_buffers, "timeout", None, time.perf_counter() - start, stderr_tail=tail)
    seconds = time.perf_counter() - start
    tail = (done.stderr or "")[-2000:]
    if done.returncode == 0:
        prefill, decode = _speeds(done.stdout)
        return ProbeAttempt(extra_buffers, "ok", 0, seconds, prefill_tps=prefill, decode_tps=decode)
    if _is_crash(done.returncode):
        name = _signal_name(-done.returncode) if done.returncode < 0 else f"0x{done.returncode & 0xFFFFFFFF:08X}"
        return ProbeAttempt(extra_buffers, "crashed", done.returncode, seconds, signal=name, stderr_tail=tail)
    return ProbeAttempt(extra_buffers, "failed", done.returncode, seconds, stderr_tail=tail)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _verdict_path(cache_dir: Path, key: str) -> Path:
    return Path(cache_dir) / "llm-probe" / f"{key}.json"


def read_verdict(cache_dir: Path, key: str) -> LoadVerdict | None:
    """A remembered verdict, or None (missing, unreadable or of another format: probe again)."""
    try:
        data = json.loads(_verdict_path(cache_dir, key).read_text(encoding="utf-8"))
        if data.get("version") != VERDICT_VERSION or data.get("key") != key:
            return None
        return LoadVerdict.from_json(data)
    except (OSError, ValueError, TypeError, KeyError):
        return None


def write_verdict(cache_dir: Path, verdict: LoadVerdict) -> None:
    """Remember a verdict atomically; a cache that cannot be written only costs a probe next time."""
    path = _verdict_path(cache_dir, verdict.key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, json.dumps(verdict.to_json(), indent=1).encode("utf-8"))
    except OSError:
        pass


_REMEMBERED: dict[str, LoadVerdict] = {}  # this process's verdicts: a second model object pays nothing


def safe_extra_buffers(model: Path, setting: str, *, cache_dir: Path, gpu_layers: int = 0, threads: int = 1,
                       cpu: CpuInfo | None = None, build: tuple[str, str] | None = None,
                       command: CommandFactory | None = None, timeout: float = PROBE_TIMEOUT_S,
                       reprobe: bool = False) -> LoadVerdict:
    """The ``extra_buffers`` value to load ``model`` with, probed in a child process once per combination.

    Raises NativeCrashError when every setting allowed by ``setting`` crashes the child. A child that
    fails without crashing (a damaged file, a timeout) gives an unremembered verdict of the setting the
    CPU rule picks, so that the load in this process reports the real error.
    """
    cpu = cpu or read_cpu()
    build = build or llama_build()
    command = command or child_command
    key = probe_key(model, setting, cpu, build, gpu_layers, threads)
    if not reprobe:
        verdict = _REMEMBERED.get(key) or read_verdict(cache_dir, key)
        if verdict is not None:
            _REMEMBERED[key] = verdict
            _raise_if_crashed(verdict, model, setting, cpu, build)
            return verdict
    first = extra_buffers_enabled(setting, cpu)
    candidates = [first, False] if (setting == "auto" and first) else [first]
    # where both settings may be safe and the CPU runs the weights, both are loaded and timed
    race = len(candidates) == 2 and gpu_layers == 0
    attempts: list[ProbeAttempt] = []
    for extra in candidates:
        argv = command(model, extra, gpu_layers, threads, speed=True) if race else command(model, extra, gpu_layers, threads)
        attempts.append(run_attempt(argv, extra, timeout))
        outcome = attempts[-1].outcome
        if (outcome == "ok" and not race) or outcome not in ("ok", "crashed"):
            break
    loaded = [a.extra_buffers for a in attempts if a.outcome == "ok"]
    if not loaded and attempts[-1].outcome != "crashed":
        # inconclusive (a damaged file, a timeout): not remembered; the load in this process reports the real error
        return LoadVerdict(key, first, tuple(attempts))
    verdict = LoadVerdict(key, faster_setting(attempts, loaded[0]) if loaded else None, tuple(attempts))
    _REMEMBERED[key] = verdict
    write_verdict(cache_dir, verdict)
    _raise_if_crashed(verdict, model, setting, cpu, build)
    return verdict


def _raise_if_crashed(verdict: LoadVerdict, model: Path, setting: str, cpu: CpuInfo, build: tuple[str, str]) -> None:
    if verdict.ok:
        return
    tried = ", ".join(f"extra buffers {'on' if a.extra_buffers else 'off'}: {a.signal or a.outcome}"
                      for a in verdict.attempts)
    features = " ".join(cpu.notable_flags()) or "unknown"
    message = (f"llama.cpp {build[0]} crashed loading {model.name} on this CPU ({cpu.model}; {features}): {tried}")
    if any(a.extra_buffers for a in verdict.attempts) and not all(a.extra_buffers for a in verdict.attempts):
        hint = "no setting avoided it: try another model (--model), and report it with `reagent doctor --json`"
    elif all(a.extra_buffers for a in verdict.attempts):
        hint = ('set `extra_buffers = "off"` under [llm] in reagent.toml (or REAGENT_LLM_EXTRA_BUFFERS=off): '
                "llama.cpp's weight repacking crashes on some CPUs, AMX Xeons among them")
    else:
        hint = ("no setting is known to avoid it: try another model (--model), or rebuild llama-cpp-python with "
                'CMAKE_ARGS="-DGGML_NATIVE=OFF"; `reagent doctor --json` gives what a bug report needs')
    raise NativeCrashError(message + f" (probe verdict {verdict.key}, setting extra_buffers={setting!r})", hint=hint)


def forget_verdicts() -> None:
    """Drop this process's remembered verdicts (the files stay)."""
    _REMEMBERED.clear()


def _child_main(argv: Sequence[str]) -> int:
    """The probe child: load the model with the given setting and generate a few tokens."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m reagent_local.runtime.load_probe")
    parser.add_argument("model", type=Path)
    parser.add_argument("--extra-buffers", choices=("on", "off"), required=True)
    parser.add_argument("--gpu-layers", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--speed", action="store_true", help="also time a prompt block and generated tokens")
    parser.add_argument("--speed-block", type=int, default=SPEED_PROMPT_TOKENS,
                        help="prompt tokens evaluated per batch when timing (scripts/bench_llm.py --settings)")
    args = parser.parse_args(argv)
    import llama_cpp

    from .native_load import construct_llama

    llama = construct_llama(llama_cpp.Llama, extra_buffers=args.extra_buffers == "on", model_path=str(args.model),
                            n_ctx=1024, n_threads=args.threads, n_gpu_layers=args.gpu_layers, verbose=False)
    out = llama.create_completion(PROBE_PROMPT, max_tokens=PROBE_TOKENS, temperature=0.0)
    result = {"text": out["choices"][0]["text"], "tokens": out["usage"]["completion_tokens"]}
    if args.speed:
        result.update(_time_child(llama, args.speed_block))
    print(json.dumps(result))
    llama.close()
    return 0


def _time_child(llama, block: int = SPEED_PROMPT_TOKENS) -> dict[str, float]:
    """Prompt tokens per second over ``SPEED_PROMPT_TOKENS`` evaluated ``block`` at a time (one wide block by
    default), and generated tokens per second after them."""
    text = PROBE_PROMPT
    tokens = llama.tokenize(text.encode("utf-8"))
    while len(tokens) < SPEED_PROMPT_TOKENS:
        text += " " + PROBE_PROMPT
        tokens = llama.tokenize(text.encode("utf-8"))
    tokens = tokens[:SPEED_PROMPT_TOKENS]
    llama.reset()
    start = time.perf_counter()
    for at in range(0, len(tokens), block):  # one batch a block, as aligned prefill evaluates them
        llama.eval(tokens[at:at + block])
    prefill = time.perf_counter() - start
    import llama_cpp
    import numpy as np

    vocab = llama.n_vocab()
    start = time.perf_counter()
    for _ in range(SPEED_DECODE_TOKENS):  # greedy, one token at a time, as generation runs
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llama.ctx, -1), shape=(vocab,))
        llama.eval([int(logits.argmax())])
    decode = time.perf_counter() - start
    return {"prefill_tps": round(len(tokens) / prefill, 2), "decode_tps": round(SPEED_DECODE_TOKENS / decode, 2)}


if __name__ == "__main__":
    sys.exit(_child_main(sys.argv[1:]))
