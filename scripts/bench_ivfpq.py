"""IVF-PQ at scale on synthetic vectors: build time, bytes on disk, resident memory and latency by nprobe.

    nice -n 19 .venv/bin/python scripts/bench_ivfpq.py --vectors 2000000 --out bench-runs/ivfpq-2m.json

Synthetic 384-d vectors (clustered, normalised) stand in for embeddings: the latency and
memory figures depend on the count, dimension and parameters, not on the text; recall
here is against exact search on the same synthetic vectors, not real-text recall (that is
`reagent bench retrieval --faiss ivfpq`). The index is built by the product's own
``dense.build_faiss`` with the parameters ``ivfpq_params`` picks for that count, from
shards on disk as a real build has them. Searching runs in a fresh process that opens the
index memory-mapped as ``Index`` does and reports its resident memory (VmRSS, split into
anonymous and file-backed pages) before and after the queries.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reagent_local.retrieval.dense import ShardVectors, build_faiss, ivfpq_params  # noqa: E402

SHARD = 100_000


def _status() -> dict:
    """VmRSS, RssAnon, RssFile and VmHWM of this process, in MB."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def _synthetic(count: int, dimension: int, folder: Path, seed: int = 0) -> tuple[list[Path], np.ndarray]:
    """Clustered unit vectors in shards of SHARD, and 1,000 cluster centres for queries."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((1000, dimension)).astype(np.float32)
    paths = []
    for number, start in enumerate(range(0, count, SHARD)):
        size = min(SHARD, count - start)
        block = centres[rng.integers(0, len(centres), size)] + 0.9 * rng.standard_normal((size, dimension), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        paths.append(folder / f"shard-{number:05d}.npy")
        np.save(paths[-1], block)
    return paths, centres


def _queries(centres: np.ndarray, count: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q = centres[rng.integers(0, len(centres), count)] + 0.9 * rng.standard_normal((count, centres.shape[1]), dtype=np.float32)
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def _exact(paths: list[Path], queries: np.ndarray, k: int) -> np.ndarray:
    """Exact top-k rows by inner product, shard by shard."""
    best_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    best_rows = np.zeros((len(queries), k), dtype=np.int64)
    start = 0
    for path in paths:
        block = np.load(path, mmap_mode="r")
        scores = queries @ np.asarray(block).T
        rows = np.broadcast_to(np.arange(start, start + len(block)), scores.shape)
        merged_s = np.concatenate([best_scores, scores], axis=1)
        merged_r = np.concatenate([best_rows, rows], axis=1)
        top = np.argpartition(-merged_s, k, axis=1)[:, :k]  # the k best, in any order (recall ignores order)
        best_scores = np.take_along_axis(merged_s, top, axis=1)
        best_rows = np.take_along_axis(merged_r, top, axis=1)
        start += len(block)
    return best_rows


def search_child(path: str, kind: str, queries_path: str, exact_path: str, nprobes: list[int], threads: list[int]) -> dict:
    """Run in a fresh process: open memory-mapped, search one query at a time, report latency and memory."""
    import faiss

    from reagent_local.retrieval.dense import load_faiss, search_faiss

    report = {"before_open": _status()}
    began = time.perf_counter()
    index = load_faiss(Path(path), kind)
    report["open_seconds"] = round(time.perf_counter() - began, 3)
    report["after_open"] = _status()
    queries, exact = np.load(queries_path), np.load(exact_path)
    report["runs"] = []
    for thread_count in threads:
        faiss.omp_set_num_threads(thread_count)
        for nprobe in nprobes if kind == "ivfpq" else [None]:
            latencies, recall = [], []
            for query, truth in zip(queries, exact):
                t = time.perf_counter()
                rows, _ = search_faiss(index, query, 10, nprobe)
                latencies.append((time.perf_counter() - t) * 1000)
                recall.append(len(set(rows) & set(truth.tolist())) / 10)
            lat = np.asarray(latencies)
            report["runs"].append({"threads": thread_count, "nprobe": nprobe, "queries": len(queries),
                                   "p50_ms": round(float(np.percentile(lat, 50)), 2),
                                   "p90_ms": round(float(np.percentile(lat, 90)), 2),
                                   "recall_at_10_vs_exact": round(float(np.mean(recall)), 3),
                                   "memory_mb": _status()})
    report["cpu_seconds"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_utime
                                  + resource.getrusage(resource.RUSAGE_SELF).ru_stime, 2)
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vectors", type=int, default=2_000_000)
    parser.add_argument("--dimension", type=int, default=384)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--nprobe", default="8,16,32,64,128", help="comma-separated nprobe values")
    parser.add_argument("--threads", default="1,2", help="FAISS threads to search with, comma-separated")
    parser.add_argument("--flat", action="store_true", help="also measure an exact flat index (3 GB at 2M vectors)")
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one, removed)")
    parser.add_argument("--out", type=Path, default=None, help="write the report as JSON here")
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        path, kind, queries, exact, nprobes, threads = args.child
        print(json.dumps(search_child(path, kind, queries, exact, [int(x) for x in nprobes.split(",")],
                                      [int(x) for x in threads.split(",")])))
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-ivfpq-"))
    work.mkdir(parents=True, exist_ok=True)
    report: dict = {"vectors": args.vectors, "dimension": args.dimension, "load_average_start": os.getloadavg()}
    try:
        began = time.perf_counter()
        paths, centres = _synthetic(args.vectors, args.dimension, work)
        report["generate_seconds"] = round(time.perf_counter() - began, 1)
        queries = _queries(centres, args.queries)
        np.save(work / "queries.npy", queries)
        began = time.perf_counter()
        np.save(work / "exact.npy", _exact(paths, queries, 10))
        report["exact_seconds"] = round(time.perf_counter() - began, 1)
        vectors = ShardVectors(paths)
        report["params"] = ivfpq_params(vectors.count, vectors.dimension)
        kinds = ["ivfpq"] + (["flat"] if args.flat else [])
        report["indexes"] = {}
        for kind in kinds:
            path = work / f"{kind}.faiss"
            began, cpu = time.perf_counter(), time.process_time()
            info = build_faiss(vectors, kind, path)
            entry = {"build_seconds": round(time.perf_counter() - began, 1),
                     "build_cpu_seconds": round(time.process_time() - cpu, 1), "manifest": info,
                     "bytes": path.stat().st_size, "bytes_per_vector": round(path.stat().st_size / args.vectors, 1)}
            print(f"built {kind}: {entry['bytes']:,} bytes ({entry['bytes_per_vector']} B/vector) "
                  f"in {entry['build_seconds']} s", file=sys.stderr, flush=True)
            child = subprocess.run([sys.executable, __file__, "--child", str(path), kind, str(work / "queries.npy"),
                                    str(work / "exact.npy"), args.nprobe, args.threads],
                                   capture_output=True, text=True, check=True)
            entry["search"] = json.loads(child.stdout.strip().splitlines()[-1])
            report["indexes"][kind] = entry
        report["load_average_end"] = os.getloadavg()
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    _print(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))


def _print(report: dict) -> None:
    print(f"{report['vectors']:,} vectors x {report['dimension']}-d; params {report['params']}")
    print(f"load average {report['load_average_start']} -> {report.get('load_average_end')}")
    for kind, entry in report["indexes"].items():
        search = entry["search"]
        print(f"{kind}: {entry['bytes']:,} B on disk ({entry['bytes_per_vector']} B/vector), built in "
              f"{entry['build_seconds']} s ({entry['build_cpu_seconds']} CPU s); opened in {search['open_seconds']} s, "
              f"RSS {search['after_open']['VmRSS']} MB after opening")
        print("  threads nprobe  p50 ms  p90 ms  recall@10  RSS MB (anon + file)")
        for run in search["runs"]:
            m = run["memory_mb"]
            print(f"  {run['threads']:>7} {str(run['nprobe']):>6} {run['p50_ms']:>7} {run['p90_ms']:>7} "
                  f"{run['recall_at_10_vs_exact']:>10}  {m['VmRSS']} ({m['RssAnon']} + {m['RssFile']})")


if __name__ == "__main__":
    main()
