"""`reagent bench retrieval`: recall@k and latency of dense, sparse and hybrid search on a benchmark file."""

from __future__ import annotations

from pathlib import Path

import click

from ..datasets import DATASETS
from ..retrieval.dense import FAISS_TYPES
from .common import config_from, info


@click.command(name="retrieval")
@click.option("--dataset", type=click.Choice(DATASETS), required=True, help="Which benchmark the file belongs to.")
@click.option("--file", "file", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="The official dev file (or a sample of it).")
@click.option("--n", type=int, default=None, help="Questions to draw (default: all, in file order).")
@click.option("--seed", type=int, default=13, show_default=True, help="Sampling seed (same draw as `bench run`).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="JSON report (default: <home>/bench-runs/retrieval-<dataset>[-<faiss>]-n<N>-seed<S>.json).")
@click.option("--faiss", "faiss_type", type=click.Choice(FAISS_TYPES), default="auto", show_default=True,
              help="Dense index to measure; other than auto, it is made from the auto index's vectors.")
@click.option("--nprobe", type=click.IntRange(min=1), default=None,
              help="IVF-PQ cells scanned per search (default: the index's own).")
def retrieval(dataset: str, file: Path, n: int | None, seed: int, out: Path | None, faiss_type: str,
              nprobe: int | None) -> None:
    """Build (or reuse) FILE's open-corpus index, print recall@2/5/10 per mode and latency p50/p95."""
    from ..bench.retrieval_bench import format_table, run_retrieval_bench, write_report

    config = config_from()
    report = run_retrieval_bench(file, config, dataset=dataset, n=n, seed=seed, progress=True,
                                 faiss_type=faiss_type, nprobe=nprobe)
    variant = "" if faiss_type == "auto" else f"-{faiss_type}" + (f"-nprobe{nprobe}" if nprobe else "")
    out = out or Path(config.paths.home) / "bench-runs" / f"retrieval-{dataset}{variant}-n{n if n else 'all'}-seed{seed}.json"
    click.echo(format_table(report))
    info(f"report: {write_report(report, out)}")
