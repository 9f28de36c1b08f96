"""Generation speed of the llama.cpp layer against a bare llama_cpp.Llama call.

Both paths load the same GGUF with the same settings and generate the same number of
tokens from the same prompt; runs alternate so machine load hits both alike.

    .venv/bin/python scripts/bench_llm.py qwen2.5-coder-1.5b qwen2.5-coder-0.5b --tokens 128 --runs 3

With --settings: prompt and generation tokens/s with llama.cpp's extra buffers on and off, for prompt
blocks of 64 and 256 tokens, each run in a fresh process (the load probe's timing child), alternating.

    .venv/bin/python scripts/bench_llm.py qwen2.5-coder-1.5b --settings --runs 3

With --save-state: the seconds of saving a prompt's state for the RAM prompt cache, llama-cpp-python's
own save against the aligned model's (which copies one row of logits, not one per prompt token).

    .venv/bin/python scripts/bench_llm.py qwen2.5-coder-1.5b --save-state --runs 5
"""

from __future__ import annotations

import argparse
import statistics
import time

from pydantic import BaseModel, Field

from reagent_local.reasoning.wiring import load_llm
from reagent_local.config import load_config

PROMPT = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Write a long, detailed paragraph about the history of the city of Lisbon."},
]


class Essay(BaseModel):
    text: str = Field(max_length=1000)


def bare_call(llama, tokens: int) -> tuple[int, float]:
    start = time.perf_counter()
    out = llama.create_chat_completion(messages=PROMPT, max_tokens=tokens, temperature=0.0, seed=0)
    seconds = time.perf_counter() - start
    return out["usage"]["completion_tokens"], seconds


def settings_table(name: str, config, runs: int) -> None:
    """Prompt and generation tokens/s per extra-buffers setting and prompt block, medians of fresh processes."""
    from reagent_local.runtime.load_probe import child_command, run_attempt
    from reagent_local.runtime.models import resolve_model
    from reagent_local.runtime.llm import physical_threads

    path = resolve_model(name, config.paths.models)[0]
    threads = config.llm.n_threads or physical_threads()
    cells = [(extra, block) for block in (64, 256) for extra in (True, False)]
    found: dict[tuple[bool, int], list[tuple[float, float]]] = {cell: [] for cell in cells}
    for _ in range(runs):
        for extra, block in cells:
            argv = [*child_command(path, extra, 0, threads, speed=True), "--speed-block", str(block)]
            attempt = run_attempt(argv, extra)  # the load probe's own child and its reading of the rates
            if attempt.outcome != "ok" or attempt.prefill_tps is None:
                raise SystemExit(f"extra buffers {'on' if extra else 'off'}: the child {attempt.signal or attempt.outcome}"
                                 f"\n{attempt.stderr_tail}")
            found[extra, block].append((attempt.prefill_tps, attempt.decode_tps))
    print(f"{name}: {threads} threads, {runs} fresh processes a setting (tokens/s, median)")
    print(f"  {'extra buffers':14}{'block':>6}{'prompt':>9}{'generation':>12}")
    for (extra, block), rates in found.items():
        print(f"  {'on' if extra else 'off':14}{block:>6}{statistics.median(r[0] for r in rates):>9.1f}"
              f"{statistics.median(r[1] for r in rates):>12.1f}")


def save_state_table(name: str, config, runs: int) -> None:
    """Seconds a state save takes after a 480-token prompt: llama-cpp-python's own and the aligned model's."""
    import llama_cpp

    model = load_llm(name, config)
    llama = model.load()
    llama.create_completion("The history of Lisbon " * 120, max_tokens=2)
    rows = {"llama_cpp.Llama.save_state": llama_cpp.Llama.save_state, "aligned save_state": type(llama).save_state}
    print(f"{name}: state save after {llama.n_tokens} prompt tokens, {runs} runs (seconds, median)")
    for label, save in rows.items():
        seconds = []
        for _ in range(runs):
            start = time.perf_counter()
            save(llama)
            seconds.append(time.perf_counter() - start)
        print(f"  {label:30} {statistics.median(seconds):7.3f}  (each: {' '.join(f'{s:.3f}' for s in seconds)})")
    model.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--settings", action="store_true", help="tokens/s per extra-buffers setting and prompt block")
    parser.add_argument("--save-state", action="store_true", help="seconds of a prompt state's save for the cache")
    args = parser.parse_args()
    config = load_config()
    if args.save_state:
        for name in args.models:
            save_state_table(name, config, args.runs)
        return
    if args.settings:
        for name in args.models:
            settings_table(name, config, args.runs)
        return
    for name in args.models:
        model = load_llm(name, config)
        llama = model.load()  # the wrapper's own llama.cpp context, used bare for the baseline
        bare_call(llama, 8)  # warm-up: load weights, fill the prompt cache alike for both paths
        rows = {"bare llama_cpp.Llama": [], "LlamaModel.chat_raw": [], "LlamaModel.generate_json (grammar)": []}
        for _ in range(args.runs):
            n, s = bare_call(llama, args.tokens)
            rows["bare llama_cpp.Llama"].append(n / s)
            call = model.chat_raw(PROMPT, max_tokens=args.tokens, temperature=0.0, seed=0)
            rows["LlamaModel.chat_raw"].append(call.completion_tokens / call.seconds)
            try:
                result = model.generate_json(PROMPT, Essay, max_tokens=args.tokens, temperature=0.0, seed=0)
                call = result.call
            except Exception as exc:  # truncation at the token limit is expected here
                call = None
                print(f"  (json run: {type(exc).__name__})")
            if call is not None:
                rows["LlamaModel.generate_json (grammar)"].append(call.completion_tokens / call.seconds)
        print(f"{name}: {args.tokens} tokens, {args.runs} runs, prompt cached (tokens/s, median)")
        for label, speeds in rows.items():
            if speeds:
                print(f"  {label:38} {statistics.median(speeds):6.1f}")
        model.close()


if __name__ == "__main__":
    main()
