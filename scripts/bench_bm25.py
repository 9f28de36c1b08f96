"""The chunked BM25 build at growing corpus sizes: time and peak memory per million passages, bytes, search.

    nice -n 19 .venv/bin/python scripts/bench_bm25.py --sizes 250000,500000,1000000 --out bench-runs/bm25-scale.json

The corpus is the Wikipedia dump sample's passages (the build's own reader and
splitter) repeated to each size; every copy adds words of its own (a copy number and
three Zipf-drawn rare words), so the vocabulary keeps growing as a real corpus' does
rather than stopping at the sample's. Each size is built in a fresh process whose
peak resident memory (ru_maxrss) is reported, then searched there (memory-mapped) with
200 queries made of passages' first words.
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
from typing import Iterator

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DUMP = Path(__file__).resolve().parents[2] / "shared" / "data" / "wiki" / \
    "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def sample_passages(dump: Path) -> list[str]:
    """The indexed text of every passage the build makes from the dump."""
    from reagent_local.retrieval.passages import index_text, split_passages
    from reagent_local.retrieval.readers import read_documents

    return [index_text(d.title, p) for d in read_documents(dump, "wikixml") for p in split_passages(d.text) if p]


def synthetic(passages: list[str], count: int, seed: int = 0) -> Iterator[str]:
    """``count`` passages: the sample's in turn, each copy with its own number and three rare words."""
    rng = np.random.default_rng(seed)
    rare = rng.zipf(1.3, size=(count, 3))
    for i in range(count):
        copy = i // len(passages)
        yield f"{passages[i % len(passages)]} copy{copy} z{rare[i, 0]} z{rare[i, 1]} z{rare[i, 2]}"


def child(dump: Path, count: int, folder: Path) -> dict:
    """Build and search one size in this (fresh) process."""
    from reagent_local.retrieval.sparse import SparseIndex, build_bm25

    passages = sample_passages(dump)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    began, cpu = time.perf_counter(), time.process_time()
    info = build_bm25(synthetic(passages, count), folder)
    seconds, cpu_seconds = time.perf_counter() - began, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    files = {p.name: p.stat().st_size for p in sorted(folder.iterdir())}
    index = SparseIndex(folder)
    rng = np.random.default_rng(1)
    queries = [" ".join(passages[i].split()[:8]) for i in rng.integers(0, len(passages), 200)]
    latencies = []
    for query in queries:
        t = time.perf_counter()
        index.search(query, 50)
        latencies.append((time.perf_counter() - t) * 1000)
    status = {k: int(v.split()[0]) // 1024 for k, _, v in
              (line.partition(":") for line in Path("/proc/self/status").read_text().splitlines())
              if k in ("VmRSS", "RssAnon", "RssFile")}
    return {"passages": count, "sample_passages": len(passages), "seconds": round(seconds, 1),
            "cpu_seconds": round(cpu_seconds, 1), "peak_rss_mb_before_build": before // 1024,
            "peak_rss_mb": peak // 1024, "vocabulary": info["vocabulary"], "postings": info["postings"],
            "files": files, "bytes": sum(files.values()),
            "search_p50_ms": round(float(np.percentile(latencies, 50)), 2),
            "search_p90_ms": round(float(np.percentile(latencies, 90)), 2), "rss_mb_after_search": status}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="250000,500000,1000000")
    parser.add_argument("--dump", type=Path, default=DUMP)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(Path(args.child[0]), int(args.child[1]), Path(args.child[2]))))
        return
    if not args.dump.is_file():
        sys.exit(f"the dump sample is not at {args.dump} (pass --dump)")
    report = {"load_average_start": os.getloadavg(), "runs": []}
    for size in (int(s) for s in args.sizes.split(",")):
        work = Path(tempfile.mkdtemp(prefix="bench-bm25-"))
        try:
            done = subprocess.run([sys.executable, __file__, "--child", str(args.dump), str(size), str(work / "bm25")],
                                  capture_output=True, text=True, check=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        run = json.loads(done.stdout.strip().splitlines()[-1])
        per_million = 1_000_000 / size
        run["seconds_per_million"] = round(run["seconds"] * per_million, 1)
        run["cpu_seconds_per_million"] = round(run["cpu_seconds"] * per_million, 1)
        run["bytes_per_passage"] = {name: round(b / size, 1) for name, b in run["files"].items()}
        report["runs"].append(run)
        print(f"{size:>10,} passages: {run['seconds']} s ({run['cpu_seconds']} CPU s; "
              f"{run['cpu_seconds_per_million']} CPU s per million), peak RSS {run['peak_rss_mb']} MB "
              f"(before the build {run['peak_rss_mb_before_build']} MB), vocabulary {run['vocabulary']:,}, "
              f"{run['bytes'] / size:.1f} B/passage, search p50 {run['search_p50_ms']} ms p90 {run['search_p90_ms']} ms, "
              f"RSS after searching {run['rss_mb_after_search']}", flush=True)
    report["load_average_end"] = os.getloadavg()
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
