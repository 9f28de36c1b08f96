"""A Ray build against a single-process build of the same dump, and the per-shard figures a projection needs.

    python scripts/bench_ray_build.py [DUMP] [--workers 2] [--shard-size 25] [--limit N] [--out FILE.json]

Builds DUMP (default: the shared dump sample) twice in a temporary REAGENT_HOME (with
--kg, the knowledge graph too): in this process, then on Ray started on this machine with
``--workers`` CPUs (one embedding thread per worker). Checks that both hold the same
passages, then prints wall seconds and passages/s of each, CPU seconds per passage for
reading and for embedding (from the shards), bytes per passage of the kept shards, the
workers' peak RSS, bz2 decompression speed (what the head does alone for a single-stream
dump) and the load average before and after: on a shared machine the wall times are
contended, the CPU seconds much less so. Then a projection (--target passages, on
machines of --cores cores).
"""

from __future__ import annotations

import argparse
import bz2
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reagent_local.cluster.connect import WORKER_ENV  # noqa: E402
from reagent_local.cluster.index_build import build_index_ray, shards_dir  # noqa: E402
from reagent_local.config import load_config  # noqa: E402
from reagent_local.retrieval import build_index  # noqa: E402

SAMPLE = Path(__file__).resolve().parents[2] / "shared/data/wiki/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _passages(index: Path) -> list[tuple]:
    import duckdb

    with duckdb.connect(str(index / "passages.duckdb"), read_only=True) as con:
        return con.execute("SELECT id, text FROM passages ORDER BY row").fetchall()


def _graph(index: Path) -> list[tuple]:
    import duckdb

    with duckdb.connect(str(index / "kg.duckdb"), read_only=True) as con:
        return con.execute("SELECT * FROM triples ORDER BY ord").fetchall()


def _folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def measure(dump: Path, workers: int, shard_size: int, limit: int | None, kg: bool, embedder: str | None,
            backend: str | None = None) -> dict:
    """Both builds and their figures."""
    import ray

    os.environ.update(WORKER_ENV)
    home = Path(tempfile.mkdtemp(prefix="ray-build-"))
    config = load_config({"paths.home": str(home), **({"retrieval.embedder": embedder} if embedder else {}),
                          **({"retrieval.embedder_backend": backend} if backend else {})}, env={})
    out: dict = {"dump": str(dump), "dump_bytes": dump.stat().st_size, "workers": workers, "shard_size": shard_size,
                 "limit": limit, "load_before": _load()}
    began = time.perf_counter()
    with open(dump, "rb") as raw:
        xml = bz2.decompress(raw.read()) if dump.suffix == ".bz2" else b""
    if xml:
        out["bz2_mb_per_s"] = round(dump.stat().st_size / 1e6 / (time.perf_counter() - began), 2)
    from reagent_local.retrieval.embed import embedder_for

    embedder = embedder_for(config)
    out["embedder"] = {"name": embedder.name, "backend": embedder.backend}
    embedder.encode(["warm up"])  # an ONNX backend exports the model once, outside both timings
    began = time.perf_counter()
    single = build_index(dump, "single", config, kg=kg, progress=False, limit=limit)
    out["single_seconds"] = round(time.perf_counter() - began, 2)
    out["single_manifest"] = json.loads((single / "manifest.json").read_text())
    out["load_between"] = _load()
    began = time.perf_counter()
    ray.init(num_cpus=workers, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False,
             runtime_env={"env_vars": dict(WORKER_ENV)})
    out["ray_start_seconds"] = round(time.perf_counter() - began, 2)
    shard_bytes: list[int] = []
    out["peak_rss_mb"] = []

    def kept(meta: dict) -> None:
        out["peak_rss_mb"].append(meta["max_rss_mb"])
        shard_bytes.append(_folder_bytes(shards_dir(config, "ray") / f"shard-{meta['shard']:06d}"))

    began = time.perf_counter()
    built = build_index_ray(dump, "ray", config, kg=kg, progress=False, limit=limit, shard_size=shard_size,
                            on_shard=kept)
    out["ray_seconds"] = round(time.perf_counter() - began, 2)
    ray.shutdown()
    out["ray_manifest"] = json.loads((built / "manifest.json").read_text())
    out["shard_bytes"] = sum(shard_bytes)
    out["same_passages"] = _passages(single) == _passages(built)
    if kg:
        out["same_kg"] = _graph(single) == _graph(built)
    out["load_after"] = _load()
    return out


def summary(m: dict, target: float, cores: int) -> str:
    """The figures as text, and the projection."""
    s, r = m["single_manifest"], m["ray_manifest"]
    cluster, totals = r["cluster"], r["cluster"]["totals"]
    n = s["passages"]
    done = totals["passages"]  # passages in the shards (with --limit, the last shards run past it)
    read_cpu, embed_cpu = totals["read_cpu_seconds"] / done, totals["embed_cpu_seconds"] / done
    single_embed_cpu = s["embedding"]["cpu_seconds"] / n
    lines = [
        f"embedder {m['embedder']['name']} ({m['embedder']['backend']}); "
        f"dump {m['dump']} ({m['dump_bytes'] / 1e6:.2f} MB), {s['documents']} articles, {n} passages; "
        f"same passages: {m['same_passages']}",
        f"load average: before {m['load_before']}, between {m['load_between']}, after {m['load_after']}",
        f"single process: {m['single_seconds']} s ({n / m['single_seconds']:.1f} passages/s); steps {s['seconds']}; "
        f"embedding CPU {single_embed_cpu * 1000:.1f} ms/passage ({s['embedding']['passages_per_second']:.1f} passages/s "
        f"in the embedding step)",
        f"Ray, {m['workers']} workers, {cluster['shards']} shards of {m['shard_size']} pages: {m['ray_seconds']} s "
        f"({n / m['ray_seconds']:.1f} passages/s) + {m['ray_start_seconds']} s to start Ray; shards phase "
        f"{cluster['ray_seconds']} s ({n / cluster['ray_seconds']:.1f} passages/s), merge {cluster['merge_seconds']} s; "
        f"steps {r['seconds']}",
        f"per passage in the workers ({done} passages in {totals['pages']} pages): read+strip+chunk "
        f"{read_cpu * 1000:.2f} ms CPU, embed {embed_cpu * 1000:.1f} ms CPU (wall: read "
        f"{totals['read_seconds'] / done * 1000:.2f} ms, embed {totals['embed_seconds'] / done * 1000:.1f} ms); "
        f"worker peak RSS {max(m['peak_rss_mb'])} MB",
        f"kept shards: {m['shard_bytes'] / done:.0f} B/passage; merge {cluster['merge_seconds'] / n * 1000:.3f} ms/passage; "
        f"BM25 {s['seconds']['bm25'] / n * 1000:.3f} ms/passage (single build)",
        f"bz2 decompression here: {m.get('bz2_mb_per_s')} compressed MB/s",
    ]
    if "kg" in r:
        lines.append(f"knowledge graph: single build {s['seconds'].get('kg')} s; workers "
                     f"{totals['kg_cpu_seconds']} CPU s ({totals['kg_cpu_seconds'] / totals['pages'] * 1000:.2f} ms a page), "
                     f"head merge {cluster['kg_merge_seconds']} s for {r['kg']['triples']} triples; same triples: "
                     f"{m['same_kg']}")
    worker_cpu = (read_cpu + embed_cpu) * target
    lines.append(f"projection for {target:,.0f} passages: {worker_cpu / 3600:,.0f} CPU-hours in the workers")
    for machines in (1, 4, 16, 64):
        hours = worker_cpu / (cores * machines) / 3600
        lines.append(f"  {machines:>2} x {cores} cores: shards {hours:,.1f} h (if every core runs a worker at the "
                     f"measured per-core speed)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dump", nargs="?", type=Path, default=SAMPLE)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shard-size", type=int, default=25)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--target", type=float, default=29e6, help="passages to project to")
    parser.add_argument("--cores", type=int, default=8, help="cores of one machine in the projection")
    parser.add_argument("--kg", action="store_true", help="build the knowledge graph too (the workers extract it)")
    parser.add_argument("--embedder", default=None, help="e.g. hash-384 to time everything but the model")
    parser.add_argument("--backend", default=None, help="the embedder backend (torch, onnx, onnx-int8; default: the configured)")
    parser.add_argument("--out", type=Path, default=None, help="also write the figures as JSON")
    args = parser.parse_args()
    figures = measure(args.dump, args.workers, args.shard_size, args.limit, args.kg, args.embedder, args.backend)
    if args.out:
        args.out.write_text(json.dumps(figures, indent=2))
    print(summary(figures, args.target, args.cores))


if __name__ == "__main__":
    main()
