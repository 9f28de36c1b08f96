"""Embedding throughput of the PyTorch and ONNX Runtime embedders, and how closely their vectors agree.

    .venv/bin/python scripts/bench_embed.py --file ../shared/data/hotpotqa/hotpot_dev_distractor_sample200.json \
        --limit 512 --backends torch,onnx,onnx-int8 --batch-sizes 16,64 --threads 1,2 --rounds 2

Passages are read the way an index build reads them (title + text, benchmark
paragraphs unsplit); ``--limit`` keeps that many, evenly spaced. Each measurement runs
in a fresh process (thread pools and caches start alike), encodes a warm-up batch,
then times one ``encode`` of all passages: wall seconds and CPU seconds (all threads).
Rounds interleave the configurations, so a load spike on a shared machine spreads over
all of them; the report gives each configuration's median over rounds, the load
average before and after, and each backend's cosine to PyTorch's vectors.
Not a test: numbers depend on the machine and on whatever else runs on it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def read_passages(file: Path, limit: int | None) -> list[str]:
    """Index texts of a corpus file, as a build makes them; ``limit`` evenly spaced ones."""
    from reagent_local.retrieval.passages import index_text
    from reagent_local.retrieval.readers import detect_format, document_passages, read_documents

    texts = [index_text(doc.title, text) for doc in read_documents(file, detect_format(file))
             for text in document_passages(doc)]
    if limit and limit < len(texts):
        texts = [texts[round(i * len(texts) / limit)] for i in range(limit)]
    return texts


def measure_one(backend: str, batch_size: int, threads: int, texts_file: Path, vectors_file: Path,
                models_dir: Path, spinning: bool) -> dict:
    """Encode the texts once with one configuration (in this process); returns the timings."""
    from reagent_local.retrieval.embed import Embedder
    from reagent_local.retrieval.onnx_embed import OnnxEmbedder

    texts = json.loads(texts_file.read_text(encoding="utf-8"))
    if backend == "torch":
        import torch

        torch.set_num_threads(threads)
        embedder = Embedder(batch_size=batch_size)
    else:
        embedder = OnnxEmbedder("all-MiniLM-L6-v2", backend=backend, models_dir=models_dir, batch_size=batch_size,
                                threads=threads, spinning=spinning)
    embedder.encode(texts[:batch_size])  # load and warm up
    load_before = os.getloadavg()[0]
    began, cpu_began = time.perf_counter(), time.process_time()
    vectors = embedder.encode(texts)
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu_began
    np.save(vectors_file, vectors)
    return {"backend": backend, "batch_size": batch_size, "threads": threads, "spinning": spinning,
            "passages": len(texts), "wall_seconds": wall, "cpu_seconds": cpu, "passages_per_second": len(texts) / wall,
            "passages_per_cpu_second": len(texts) / cpu, "load_before": load_before, "load_after": os.getloadavg()[0]}


def _run_child(args: argparse.Namespace, backend: str, batch_size: int, threads: int, texts_file: Path,
               vectors_file: Path) -> dict:
    command = [sys.executable, __file__, "--child", backend, str(batch_size), str(threads), str(texts_file),
               str(vectors_file), "--models-dir", str(args.models_dir)] + (["--spinning"] if args.spinning else [])
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"measurement {backend} bs={batch_size} threads={threads} failed:\n{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", type=Path, help="corpus: a benchmark file, JSONL, a dump ...")
    parser.add_argument("--limit", type=int, default=512, help="passages to encode (evenly spaced; 0: all)")
    parser.add_argument("--backends", default="torch,onnx,onnx-int8")
    parser.add_argument("--batch-sizes", default="16,64")
    parser.add_argument("--threads", default="2")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--spinning", action="store_true", help="let onnxruntime's idle threads spin (its default)")
    parser.add_argument("--models-dir", type=Path, default=REPO / "models", help="where the ONNX export lives")
    parser.add_argument("--out", type=Path, default=REPO / "bench-runs" / "embed-throughput.json")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        backend, batch_size, threads, texts_file, vectors_file = args.child
        print(json.dumps(measure_one(backend, int(batch_size), int(threads), Path(texts_file), Path(vectors_file),
                                     args.models_dir, args.spinning)))
        return
    if args.file is None:
        parser.error("--file is required")
    backends = args.backends.split(",")
    configs = [(b, int(bs), int(t)) for b in backends for bs in args.batch_sizes.split(",") for t in args.threads.split(",")]
    texts = read_passages(args.file, args.limit or None)
    if any(b != "torch" for b in backends):  # export first, outside every timing
        from reagent_local.retrieval.onnx_embed import ensure_export

        ensure_export("all-MiniLM-L6-v2", args.models_dir, next(b for b in backends if b != "torch"))
    work = Path(tempfile.mkdtemp(prefix="bench-embed-"))
    texts_file = work / "texts.json"
    texts_file.write_text(json.dumps(texts), encoding="utf-8")
    report = {"file": str(args.file), "passages": len(texts), "rounds": args.rounds, "cpus": os.cpu_count(),
              "load_start": os.getloadavg(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "runs": []}
    for round_ in range(args.rounds):
        for backend, batch_size, threads in configs:
            run = _run_child(args, backend, batch_size, threads, texts_file, work / f"{backend}-{batch_size}-{threads}.npy")
            run["round"] = round_
            report["runs"].append(run)
            print(f"round {round_}  {backend:10} bs {batch_size:3}  threads {threads}: {run['passages_per_second']:6.1f} "
                  f"passages/s wall, {run['passages_per_cpu_second']:6.1f} per CPU s  (load {run['load_before']:.1f})",
                  flush=True)
    report["load_end"] = os.getloadavg()
    report["summary"] = summarise(report["runs"], configs, work)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(format_table(report))
    print(f"report: {args.out}")


def summarise(runs: list[dict], configs: list[tuple[str, int, int]], work: Path) -> list[dict]:
    """Median rates per configuration; cosine of each configuration's vectors to PyTorch's."""
    reference = next((np.load(work / f"torch-{bs}-{t}.npy") for b, bs, t in configs if b == "torch"), None)
    rows = []
    for backend, batch_size, threads in configs:
        mine = [r for r in runs if (r["backend"], r["batch_size"], r["threads"]) == (backend, batch_size, threads)]
        row = {"backend": backend, "batch_size": batch_size, "threads": threads,
               "passages_per_second": statistics.median(r["passages_per_second"] for r in mine),
               "passages_per_cpu_second": statistics.median(r["passages_per_cpu_second"] for r in mine),
               "load": [round(min(r["load_before"] for r in mine), 1), round(max(r["load_after"] for r in mine), 1)]}
        if reference is not None:
            cosines = (reference * np.load(work / f"{backend}-{batch_size}-{threads}.npy")).sum(axis=1)
            row["min_cosine"], row["mean_cosine"] = float(cosines.min()), float(cosines.mean())
        rows.append(row)
    for row in rows:  # speed-up over PyTorch at the same batch size and threads, else its best
        torch_rows = [r for r in rows if r["backend"] == "torch"]
        same = [r for r in torch_rows if (r["batch_size"], r["threads"]) == (row["batch_size"], row["threads"])]
        base = (same or sorted(torch_rows, key=lambda r: -r["passages_per_second"]) or [None])[0]
        if base:
            row["speedup_wall"] = row["passages_per_second"] / base["passages_per_second"]
            row["speedup_cpu"] = row["passages_per_cpu_second"] / base["passages_per_cpu_second"]
    return rows


def format_table(report: dict) -> str:
    """The summary as a Markdown table."""
    lines = [f"{report['passages']} passages of {Path(report['file']).name}, median of {report['rounds']} rounds; "
             f"load average {report['load_start'][0]:.1f} at start, {report['load_end'][0]:.1f} at end "
             f"({report['cpus']} CPUs)", "",
             "| backend | batch | threads | passages/s (wall) | passages per CPU s | x PyTorch (wall / CPU) | cosine to PyTorch min / mean |",
             "|---|---|---|---|---|---|---|"]
    for r in report["summary"]:
        speed = f"{r['speedup_wall']:.2f} / {r['speedup_cpu']:.2f}" if "speedup_wall" in r else ""
        cosine = f"{r['min_cosine']:.4f} / {r['mean_cosine']:.4f}" if "min_cosine" in r else ""
        lines.append(f"| {r['backend']} | {r['batch_size']} | {r['threads']} | {r['passages_per_second']:.1f} | "
                     f"{r['passages_per_cpu_second']:.1f} | {speed} | {cosine} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
