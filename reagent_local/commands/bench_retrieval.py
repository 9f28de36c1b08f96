"""`reagent bench retrieval`: recall@k and latency of dense, sparse and hybrid search on a benchmark file."""

from __future__ import annotations

from pathlib import Path

import click

from ..datasets import DATASETS
from ..retrieval.dense import FAISS_TYPES
from .common import config_from, info


@click.command(name="retrieval")
@click.option("--dataset", type=click.Choice(DATASETS), default=None, help="Which benchmark the file belongs to.")
@click.option("--file", "file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="The official dev file (or a sample of it).")
@click.option("--folder", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Instead of a benchmark: a folder of documents (its index is built, or updated, first).")
@click.option("--questions", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="With --folder: JSON {questions: [{question, file, contains}]}, e.g. scripts/techdocs_questions.json.")
@click.option("--tokenizer", type=click.IntRange(1, 2), default=None,
              help="Measure BM25 built with this tokenizer version (a copy of the index with only BM25 rebuilt).")
@click.option("--n", type=int, default=None, help="Questions to draw (default: all, in file order).")
@click.option("--seed", type=int, default=13, show_default=True, help="Sampling seed (same draw as `bench run`).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="JSON report (default: <home>/bench-runs/retrieval-<dataset>[-<faiss>]-n<N>-seed<S>.json).")
@click.option("--faiss", "faiss_type", type=click.Choice(FAISS_TYPES), default="auto", show_default=True,
              help="Dense index to measure; other than auto, it is made from the auto index's vectors.")
@click.option("--nprobe", type=click.IntRange(min=1), default=None,
              help="IVF-PQ cells scanned per search (default: the index's own).")
def retrieval(dataset: str | None, file: Path | None, folder: Path | None, questions: Path | None, tokenizer: int | None,
              n: int | None, seed: int, out: Path | None, faiss_type: str, nprobe: int | None) -> None:
    """Build (or reuse) FILE's open-corpus index, print recall@2/5/10 per mode and latency p50/p95.

    With --folder and --questions instead: a folder of documents and hand-written questions,
    each found when a hit comes from its gold file and holds its gold phrase.
    """
    from ..bench.retrieval_bench import format_table, run_folder_bench, run_retrieval_bench, write_report

    config = config_from()
    tok = f"-tok{tokenizer}" if tokenizer else ""
    if folder is not None or questions is not None:
        if folder is None or questions is None or dataset or file:
            raise click.UsageError("pass --folder with --questions (and neither --dataset nor --file)")
        report = run_folder_bench(folder, questions, config, tokenizer=tokenizer, progress=True)
        out = out or Path(config.paths.home) / "bench-runs" / f"retrieval-folder-{folder.resolve().name}{tok}.json"
        click.echo(format_table(report))
        missed = [q for q in report["questions"] if not any(r is not None and r <= 5 for r in q["rank"].values())]
        for q in missed:
            info(f"missed at 5 by every mode: {q['question']}  ({q['file']})")
        info(f"report: {write_report(report, out)}")
        return
    if dataset is None or file is None:
        raise click.UsageError("pass --dataset and --file (or --folder and --questions)")
    report = run_retrieval_bench(file, config, dataset=dataset, n=n, seed=seed, progress=True,
                                 faiss_type=faiss_type, nprobe=nprobe, tokenizer=tokenizer)
    variant = "" if faiss_type == "auto" else f"-{faiss_type}" + (f"-nprobe{nprobe}" if nprobe else "")
    variant += tok
    out = out or Path(config.paths.home) / "bench-runs" / f"retrieval-{dataset}{variant}-n{n if n else 'all'}-seed{seed}.json"
    click.echo(format_table(report))
    info(f"report: {write_report(report, out)}")
