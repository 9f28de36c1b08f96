"""Retrieval benchmark: recall@k of the gold supporting paragraphs, and query latency.

For a benchmark file, builds (or reuses) the open-corpus index of all its questions'
paragraphs, then searches every sampled question in each mode. A gold paragraph is
found when a hit has its title and text (where the dataset names only titles, its
title). Two recalls per k: ``recall`` is the mean fraction of a question's gold
paragraphs in the top k; ``all`` is the share of questions with every one of them there.

For a folder of documents and a question file (``run_folder_bench``: each question with its
gold file and a phrase of its gold passage), the folder's index is built or updated, and a
question is found at k when a top-k hit comes from that file and holds that phrase.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..config import Config
from ..datasets import Question, load_questions
from ..errors import IndexNotFoundError, ReagentError
from ..retrieval.build import build_index
from ..retrieval.convert import convert_index
from ..retrieval.dense import choose_type
from ..retrieval.index import MODES, Index
from ..retrieval.layout import BENCHMARK_TOKENIZER, benchmark_index_name, index_dir
from ..retrieval.tokens import LEGACY
from ..retrieval.update import update_index

KS = (2, 5, 10)


def open_benchmark_index(file: Path, dataset: str | None, config: Config, *, progress: bool = False,
                         faiss_type: str = "auto", tokenizer: int | None = None) -> Index:
    """The open-corpus index of a benchmark file, built first when it does not exist yet.

    With ``faiss_type`` other than auto (and other than what the auto index holds), the
    index ``<name>-<type>`` is made from the auto index's vectors (``convert_index``), so
    FAISS types are compared on the same passages, vectors and BM25. With ``tokenizer``
    other than the one its BM25 was built with, ``<name>[-<type>]-tok<N>`` is made the same
    way with only its BM25 rebuilt, so tokenizers are compared on the same passages and vectors.
    """
    name = benchmark_index_name(file, config.retrieval)
    index = _open_or_make(name, config, lambda: build_index(file, name, config, fmt=dataset or "auto", kg=False,
                                                            progress=progress, tokenizer=BENCHMARK_TOKENIZER))
    choose_type(faiss_type, 0)  # an unknown type is refused before any work
    if faiss_type not in ("auto", (index.manifest.get("faiss") or {}).get("type")):
        index.close()
        base, name = name, f"{name}-{faiss_type}"
        index = _open_or_make(name, config, lambda: convert_index(base, name, config, faiss_type))
    if tokenizer is None or tokenizer == int((index.manifest.get("bm25") or {}).get("tokenizer", LEGACY)):
        return index
    index.close()
    base, name = name, f"{name}-tok{tokenizer}"
    return _open_or_make(name, config, lambda: convert_index(base, name, config, None, tokenizer=tokenizer))


def _open_or_make(name: str, config: Config, make: Callable[[], object]) -> Index:
    try:
        return Index.open(name, config)
    except IndexNotFoundError:
        make()
        return Index.open(name, config)


def _found(question: Question, titles: Sequence[str], texts: Sequence[str]) -> list[bool]:
    """For each gold paragraph of the question, whether the ranked hits contain it."""
    if question.supporting:
        pairs = set(zip(titles, texts))
        return [(p.title, p.text) in pairs for p in question.supporting]
    names = set(titles)
    return [t in names for t in question.supporting_titles]


def run_retrieval_bench(
    file: Path,
    config: Config,
    *,
    dataset: str | None = None,
    n: int | None = None,
    seed: int = 13,
    ks: Sequence[int] = KS,
    modes: Sequence[str] = MODES,
    progress: bool = False,
    faiss_type: str = "auto",
    nprobe: int | None = None,
    tokenizer: int | None = None,
) -> dict:
    """Recall@k per mode and latency percentiles over the sampled questions; returns the report.

    ``faiss_type`` picks the dense index and ``tokenizer`` the BM25 one (see ``open_benchmark_index``);
    ``nprobe`` the cells an IVF-PQ search scans (default: the index's own).
    """
    from .sampling import sample_questions  # the same draw as the QA benchmark runner

    file = Path(file)
    questions = load_questions(file, dataset)
    dataset = questions[0].dataset if questions else dataset
    sample = [q for q in sample_questions(questions, n, seed) if q.supporting or q.supporting_titles]
    depth = max(ks)
    report: dict = {"dataset": dataset, "file": str(file), "n": len(sample), "seed": seed, "ks": list(ks), "modes": {}}
    with open_benchmark_index(file, dataset, config, progress=progress, faiss_type=faiss_type,
                              tokenizer=tokenizer) as index:
        report["index"] = index.name
        report["tokenizer"] = int((index.manifest.get("bm25") or {}).get("tokenizer", LEGACY))
        report["passages"] = index.manifest["passages"]
        report["faiss"] = index.manifest.get("faiss")
        report["nprobe"] = nprobe
        index.search(sample[0].question if sample else "warm up", k=depth, mode="hybrid")  # load models and files
        for mode in modes:
            latencies, hits_found = [], []
            for question in sample:
                began = time.perf_counter()
                hits = index.search(question.question, k=depth, mode=mode, nprobe=nprobe)
                latencies.append((time.perf_counter() - began) * 1000)
                titles = [h.passage.title for h in hits]
                texts = [h.passage.text for h in hits]
                hits_found.append([_found(question, titles[:k], texts[:k]) for k in ks])
            report["modes"][mode] = _summarise(hits_found, latencies, ks)
    return report


def folder_bench_name(folder: Path, config: Config) -> str:
    """The index a folder benchmark builds: ``bench-folder-<name>-<sha256(path)[:8]>`` (and the embedder's suffix
    as ``benchmark_index_name`` adds it)."""
    import hashlib

    digest = hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:8]
    default = type(config.retrieval)()
    parts = [Path(folder).resolve().name, digest]
    parts += [part for part, usual in ((config.retrieval.embedder, default.embedder),
                                       (config.retrieval.embedder_backend, default.embedder_backend)) if part != usual]
    return "-".join(["bench-folder", *(re.sub(r"[^A-Za-z0-9._-]+", "-", p).strip("-._")[:40] or "x" for p in parts)])


def load_folder_questions(path: Path) -> list[dict]:
    """The questions of a folder benchmark: ``{"questions": [{"question", "file", "contains"}, ...]}``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    questions = data.get("questions") if isinstance(data, dict) else None
    if not questions or not all({"question", "file", "contains"} <= set(q) for q in questions):
        raise ReagentError(f"{path} holds no questions of the form {{question, file, contains}}",
                           hint="see scripts/techdocs_questions.json for the format")
    return questions


def run_folder_bench(folder: Path, questions_file: Path, config: Config, *, ks: Sequence[int] = KS,
                     modes: Sequence[str] = MODES, tokenizer: int | None = None, progress: bool = False,
                     embedder: object | None = None) -> dict:
    """Recall@k per mode of a folder's index on hand-written questions (each with a gold file and phrase)."""
    questions = load_folder_questions(questions_file)
    folder = Path(folder).resolve()
    name = folder_bench_name(folder, config)
    if (index_dir(config, name) / "manifest.json").is_file():
        update_index(name, config, progress=progress, embedder=embedder)  # the folder may have changed
    else:
        build_index(folder, name, config, fmt="docs", kg=False, progress=progress, embedder=embedder)
    built = Index.open(name, config, embedder=embedder)
    if tokenizer is not None and tokenizer != int((built.manifest.get("bm25") or {}).get("tokenizer", LEGACY)):
        built.close()
        name = f"{name}-tok{tokenizer}"
        convert_index(folder_bench_name(folder, config), name, config, None, tokenizer=tokenizer, force=True)
        built = Index.open(name, config, embedder=embedder)
    depth = max(ks)
    report: dict = {"dataset": f"folder {folder.name}", "file": str(questions_file), "folder": str(folder),
                    "n": len(questions), "ks": list(ks), "modes": {}, "questions": []}
    with built as index:
        report.update(index=index.name, passages=index.manifest["passages"], faiss=index.manifest.get("faiss"),
                      nprobe=None, tokenizer=int((index.manifest.get("bm25") or {}).get("tokenizer", LEGACY)))
        ranks: dict[str, list[int | None]] = {}
        for mode in modes:
            latencies, found, ranks[mode] = [], [], []
            for question in questions:
                began = time.perf_counter()
                hits = index.search(question["question"], k=depth, mode=mode)
                latencies.append((time.perf_counter() - began) * 1000)
                rank = next((h.rank for h in hits if h.passage.origin is not None
                             and h.passage.origin.path == question["file"] and question["contains"] in h.passage.text),
                            None)
                ranks[mode].append(rank)
                found.append([[rank is not None and rank <= k] for k in ks])
            report["modes"][mode] = _summarise(found, latencies, ks)
        report["questions"] = [{"question": q["question"], "file": q["file"],
                                "rank": {mode: ranks[mode][i] for mode in modes}} for i, q in enumerate(questions)]
    return report


def _summarise(found: list[list[list[bool]]], latencies: list[float], ks: Sequence[int]) -> dict:
    recall = {str(k): float(np.mean([sum(f[i]) / len(f[i]) for f in found])) if found else 0.0 for i, k in enumerate(ks)}
    every = {str(k): float(np.mean([all(f[i]) for f in found])) if found else 0.0 for i, k in enumerate(ks)}
    lat = np.asarray(latencies) if latencies else np.zeros(1)
    return {"recall": recall, "all": every,
            "latency_ms": {"p50": float(np.percentile(lat, 50)), "p95": float(np.percentile(lat, 95))}}


def format_table(report: dict) -> str:
    """The report as a fixed-width table: recall and all-found at each k, latency p50/p95."""
    ks = report["ks"]
    head = ["mode"] + [f"R@{k}" for k in ks] + [f"all@{k}" for k in ks] + ["p50 ms", "p95 ms"]
    rows = [head]
    for mode, values in report["modes"].items():
        rows.append(
            [mode]
            + [f"{values['recall'][str(k)]:.3f}" for k in ks]
            + [f"{values['all'][str(k)]:.3f}" for k in ks]
            + [f"{values['latency_ms']['p50']:.1f}", f"{values['latency_ms']['p95']:.1f}"]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths))) for r in rows]
    faiss = report.get("faiss") or {}
    probe = f", nprobe {report['nprobe'] or (faiss.get('params') or {}).get('nprobe')}" if faiss.get("type") == "ivfpq" else ""
    title = (f"{report['dataset']}: {report['n']} questions, open corpus of {report['passages']} passages "
             f"(index {report['index']}, FAISS {faiss.get('type', '?')}{probe}, BM25 tokenizer {report.get('tokenizer', 1)})")
    return "\n".join([title, *lines])


def write_report(report: dict, path: Path) -> Path:
    """Write the report as JSON (creating the folder)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return path
