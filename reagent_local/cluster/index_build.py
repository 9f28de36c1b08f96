"""`reagent index build SOURCE --ray`: shards read, chunked and embedded by Ray workers, merged into one index.

The usual build (``retrieval.build.build_index``: lock, resume, FAISS, BM25, knowledge
graph, atomic swap) runs with its passage step replaced by ``_RayPassages``, which:

1. cuts the source into shards (``shards.py``) and keeps each finished shard in
   ``indexes/.NAME.shards/shard-NNNNNN/`` (its documents' passages and their vectors),
   written as it arrives; a shard already there is not run again, so an interrupted or
   failed build resumes shard by shard (the folder is keyed by the build's inputs);
2. runs the others on a pool of ``ShardWorker`` actors (one per CPU of the cluster,
   each loading the embedder once); each also extracts its pages' infobox triples when
   the build has a knowledge graph; a shard that fails is retried, then named;
3. merges the shards in order into the passage table (ids assigned as a single-process
   build assigns them), into the build's embedding files, so the next steps find every
   vector done, and into kg.duckdb (as ``retrieval.kg_build.build_kg`` writes it; with --limit, the
   left-out-value counts of the last shard are not added). The shard folder is removed
   once merged, so the head never holds shards and the build's files at their peak.
"""

from __future__ import annotations

import json
import os
from collections import Counter
import resource
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from ..config import Config
from ..errors import IndexBuildError
from ..retrieval.kg_build import KGBuilder, extractor_counts, page_rows
from ..kg.infobox import Extractor
from ..retrieval import build as single
from ..retrieval.embed import BACKENDS, Embedder, HashEmbedder, embedder_for, make_embedder
from ..retrieval.layout import index_dir, validate_name
from ..retrieval.passages import index_text
from ..retrieval.progress import Reporter
from ..retrieval.readers import document_passages
from ..retrieval.store import FILENAME as PASSAGES_FILE
from ..retrieval.store import PassageWriter
from .connect import cluster_cpus, node_info, ray_session
from .pool import ActorPool
from .shards import (Shard, iter_document_shards, iter_page_shards, multistream_offsets, plan_streams,
                     shard_documents, shard_pages)

SHARD_PAGES = 1000  # pages (or documents) a shard by default: a few hundred to a few thousand passages
RETRIES = 2
KEY_FILE = "key.json"


def worker_embedder(embedder: Any, config: Config) -> Any:
    """What a worker needs to make the same embedder: how to load a model, or the (picklable) embedder itself."""
    if getattr(embedder, "backend", None) in BACKENDS:
        return {"name": embedder.name, "backend": embedder.backend, "models_dir": str(config.paths.models)}
    return embedder  # the hash embedder, a test double


class ShardWorker:
    """A Ray actor: reads, chunks and embeds shards with an embedder it loads once."""

    def __init__(self, embedder: dict | Any, threads: int, kg: bool = False) -> None:
        self._spec, self._threads, self._embedder, self._kg = embedder, threads, None, kg

    def ready(self) -> dict:
        """Load the embedder (one thread); where this worker runs."""
        if isinstance(self._spec, dict):
            spec = self._spec
            self._embedder = make_embedder(spec["name"], backend=spec["backend"], models_dir=Path(spec["models_dir"]))
            if isinstance(self._embedder, Embedder):
                import torch

                torch.set_num_threads(self._threads)
            elif hasattr(self._embedder, "threads"):  # ONNX Runtime: set before its session opens
                self._embedder.threads = self._threads
            self._embedder.encode(["warm up"])
        else:
            self._embedder = self._spec
        return node_info()

    def run(self, source: str, shard: Shard, payload: Any) -> dict:
        """One shard: its documents' passages, their vectors, its pages' graph rows, what each step cost."""
        began, cpu = time.perf_counter(), time.process_time()
        raw = shard_pages(source, shard, payload) if shard.kind != "documents" else None
        documents, pages = shard_documents(source, shard, payload, raw)
        docs = [(d.title, document_passages(d)) for d in documents]
        read, read_cpu = time.perf_counter() - began, time.process_time() - cpu
        kg, dropped, kg_cpu = None, None, time.process_time()
        if self._kg and raw is not None:
            extractor = Extractor()
            kg = [rows for rows in (page_rows(extractor, page) for page in raw) if rows[0] or rows[2]]
            values, capital, templates = extractor_counts(extractor)
            dropped = [values, capital, dict(templates)]
        kg_cpu = time.process_time() - kg_cpu
        texts = [index_text(title, text) for title, passages in docs for text in passages]
        began, cpu = time.perf_counter(), time.process_time()
        vectors = self._embedder.encode(texts) if texts else None
        info = node_info()
        return {"documents": docs, "vectors": vectors, "kg": kg, "meta": {
            "shard": shard.number, "kind": shard.kind, "start": shard.start, "stop": shard.stop, "pages": pages,
            "documents": len(docs), "passages": len(texts), "read_seconds": round(read, 3),
            "read_cpu_seconds": round(read_cpu, 3), "embed_seconds": round(time.perf_counter() - began, 3),
            "embed_cpu_seconds": round(time.process_time() - cpu, 3), "host": info["host"],
            "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "kg_cpu_seconds": round(kg_cpu, 3), "kg_dropped": dropped}}


class ShardStore:
    """Finished shards on disk: ``shard-NNNNNN/`` with passages.jsonl, vectors.npy and meta.json."""

    def __init__(self, root: Path, key: dict, note: Callable[[str], None]) -> None:
        self.root = root
        key_path = root / KEY_FILE
        if root.exists():
            try:
                same = json.loads(key_path.read_text(encoding="utf-8")) == key
            except (OSError, ValueError):
                same = False
            if not same:
                note(f"discarding shards of a build with other inputs in {root}")
                shutil.rmtree(root)
        if not root.exists():
            root.mkdir(parents=True)
            single._write_json(key_path, key)
        self.metas: dict[int, dict] = {}
        for folder in root.glob("shard-*"):
            meta = folder / "meta.json"
            if folder.is_dir() and meta.is_file():
                self.metas[int(folder.name.split("-")[1])] = json.loads(meta.read_text(encoding="utf-8"))

    def _folder(self, number: int) -> Path:
        return self.root / f"shard-{number:06d}"

    def write(self, number: int, result: dict) -> None:
        """Keep one finished shard (written aside, then renamed into place)."""
        final = self._folder(number)
        tmp = final.with_name(final.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        with open(tmp / "passages.jsonl", "w", encoding="utf-8") as out:
            for title, passages in result["documents"]:
                out.write(json.dumps([title, passages], ensure_ascii=False) + "\n")
        if result["vectors"] is not None:
            np.save(tmp / "vectors.npy", np.ascontiguousarray(result["vectors"], dtype=np.float32))
        if result.get("kg") is not None:
            with open(tmp / "kg.jsonl", "w", encoding="utf-8") as out:
                out.writelines(json.dumps(rows, ensure_ascii=False) + "\n" for rows in result["kg"])
        single._write_json(tmp / "meta.json", result["meta"])
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        self.metas[number] = result["meta"]

    def read(self, number: int) -> tuple[list[tuple[str, list[str]]], np.ndarray | None]:
        """A shard's documents (title, passages) and their vectors (memory-mapped)."""
        folder = self._folder(number)
        with open(folder / "passages.jsonl", encoding="utf-8") as lines:
            documents = [tuple(json.loads(line)) for line in lines]
        vectors = folder / "vectors.npy"
        return documents, (np.load(vectors, mmap_mode="r") if vectors.is_file() else None)  # type: ignore[return-value]


    def read_kg(self, number: int) -> Iterator[tuple[bool, list[dict], list[dict]]]:
        """A shard's graph rows, page by page (``kg.page_rows``)."""
        with open(self._folder(number) / "kg.jsonl", encoding="utf-8") as lines:
            for line in lines:
                yield tuple(json.loads(line))  # type: ignore[misc]


def shards_dir(config: Config, name: str) -> Path:
    """Where the finished shards of a Ray build of ``name`` wait for the merge."""
    return config.paths.indexes / f".{validate_name(name)}.shards"


class _RayPassages:
    """The passage step of a build (``build.PassageStep``) run on Ray workers."""

    def __init__(self, ray: Any, config: Config, name: str, embedder: Embedder | HashEmbedder, shard_size: int,
                 retries: int, workers: int | None, on_shard: Callable[[dict], None] | None, kg: bool) -> None:
        self.ray, self.config, self.name, self.embedder, self.kg = ray, config, name, embedder, kg
        self.shard_size, self.retries, self.workers, self.on_shard = shard_size, retries, workers, on_shard

    def __call__(self, *, source: Path, fmt: str, limit: int | None, folder: Path, key: dict,
                 report: Reporter) -> tuple[int, int, dict]:
        offsets = multistream_offsets(source) if fmt == "wikixml" else None
        kind = "streams" if offsets else "pages" if fmt == "wikixml" else "documents"
        self._with_kg = self.kg and fmt == "wikixml"  # the workers extract the infobox triples too
        store = ShardStore(shards_dir(self.config, self.name),
                           {**key, "shard_kind": kind, "ray_shard_size": self.shard_size, "kg": self._with_kg},
                           report.note)
        began = time.perf_counter()
        if offsets:
            planned = plan_streams(offsets, source.stat().st_size, self.shard_size)
            shards: Iterator[tuple[Shard, Any]] = ((s, None) for s in planned)
            total: int | None = len(planned)
        elif kind == "pages":
            shards, total = iter_page_shards(source, self.shard_size, store.metas.__contains__), None
        else:
            shards, total = iter_document_shards(source, fmt, self.shard_size, store.metas.__contains__), None
        try:
            count = self._run(store, shards, total, str(source), limit, report)
        except KeyboardInterrupt:
            raise IndexBuildError(f"the build of {self.name!r} was interrupted; {len(store.metas)} finished shards "
                                  f"are kept in {store.root}", hint="run the same command again to resume") from None
        ray_seconds = time.perf_counter() - began
        began = time.perf_counter()
        documents, passages = self._merge(store, count, limit, folder, report)
        merge_seconds, began = time.perf_counter() - began, time.perf_counter()
        kg = {"kg": self._merge_kg(store, count, limit, folder, str(source))} if self._with_kg else {}
        kg_seconds = time.perf_counter() - began
        metas = [store.metas[n] for n in range(count)]
        shutil.rmtree(store.root)  # merged: the build's own files carry on from here (and resume without them)
        return documents, passages, {**kg, "cluster": {
            "shard_kind": kind, "shard_size": self.shard_size, "shards": count, "workers": self._workers_used,
            "hosts": sorted({m.get("host", "?") for m in metas}), "ray_seconds": round(ray_seconds, 3),
            "merge_seconds": round(merge_seconds, 3), "kg_merge_seconds": round(kg_seconds, 3),
            "retried": self._failures,
            "totals": {k: round(sum(m.get(k, 0) for m in metas), 3) for k in
                       ("pages", "documents", "passages", "read_seconds", "read_cpu_seconds", "embed_seconds",
                        "embed_cpu_seconds", "kg_cpu_seconds")}}}

    def _run(self, store: ShardStore, shards: Iterator[tuple[Shard, Any]], total: int | None, source: str,
             limit: int | None, report: Reporter) -> int:
        """Run every shard not yet in the store; return how many shards the build uses."""
        seen: list[Shard] = []

        def todo() -> Iterator[tuple[Shard, Any]]:
            for shard, payload in shards:
                seen.append(shard)
                if shard.number not in store.metas:
                    yield shard, payload
                else:
                    report.advance(handle)

        def covered() -> bool:  # with --limit: the finished first shards hold enough documents
            if limit is None:
                return False
            documents, n = 0, 0
            while n in store.metas and documents < limit:
                documents, n = documents + store.metas[n]["documents"], n + 1
            return documents >= limit

        def finished(item: tuple[Shard, Any], result: dict) -> None:
            store.write(item[0].number, result)
            report.advance(handle)
            if self.on_shard is not None:
                self.on_shard(result["meta"])

        workers = self.workers or cluster_cpus(self.ray)
        spec = worker_embedder(self.embedder, self.config)
        actor_class = self.ray.remote(num_cpus=1)(ShardWorker)
        pool: ActorPool = ActorPool(self.ray, lambda: actor_class.remote(spec, 1, self._with_kg), workers,
                                    retries=self.retries,
                                    describe=lambda item: f"{item[0].describe(total)} of {source}")
        pool.hint = (f"finished shards are kept in {store.root}; fix the cause and run the same command again "
                     "to resume from them")
        handle = report.step(f"shards on {workers} Ray workers", total, "shards")
        pool.start()
        try:
            pool.run(todo(), lambda actor, item: actor.run.remote(source, item[0], item[1]), finished, stop=covered)
        finally:
            pool.close()
        report.finish(handle)
        self._workers_used, self._failures = workers, pool.failures
        count = len(seen)
        if limit is not None:  # only the shards up to the one that reaches the limit
            documents, count = 0, 0
            while count in store.metas and documents < limit:
                documents, count = documents + store.metas[count]["documents"], count + 1
        missing = [n for n in range(count) if n not in store.metas]
        if missing:
            raise IndexBuildError(f"shards {missing[:5]} of {source} were not built",
                                  hint="run the same command again to resume")
        return count

    def _merge(self, store: ShardStore, count: int, limit: int | None, folder: Path,
               report: Reporter) -> tuple[int, int]:
        """Shards 0..count-1, in order, into the passage table and the build's embedding files."""
        writer = PassageWriter(folder / PASSAGES_FILE)
        (folder / "embeddings").mkdir(exist_ok=True)
        pending: list[np.ndarray] = []
        buffered, written, documents = 0, 0, 0
        handle = report.step("merging shards", count, "shards")
        try:
            for number in range(count):
                docs, vectors = store.read(number)
                rows = 0
                for title, passages in docs:
                    if limit is not None and documents >= limit:
                        break
                    for text in passages:
                        writer.add(title, text)
                    rows += len(passages)
                    documents += 1
                if rows:
                    pending.append(np.asarray(vectors[:rows]))
                    buffered += rows
                while buffered >= single.SHARD_SIZE or (number == count - 1 and buffered):
                    block = np.concatenate(pending)
                    take = min(single.SHARD_SIZE, len(block))
                    np.save(single._shard_path(folder, written), block[:take])
                    pending, buffered, written = [block[take:]], len(block) - take, written + 1
                report.advance(handle)
            report.finish(handle)
            if writer.count == 0:
                writer.abort()
                raise IndexBuildError(f"{store.root} holds no passages: the source has no documents with text",
                                      hint="check that it is the right file, or pass the right --format")
            return documents, writer.finish()
        except BaseException:
            writer.abort()
            raise


    def _merge_kg(self, store: ShardStore, count: int, limit: int | None, folder: Path, source: str) -> dict:
        """The shards' graph rows, in order, into kg.duckdb, as ``retrieval.kg_build.build_kg`` would write it."""
        builder = KGBuilder(folder, source=source)
        try:
            values, capital, templates = 0, 0, Counter()
            for number in range(count):
                for rows in store.read_kg(number):
                    if rows[0] and limit is not None and builder.articles >= limit:
                        break  # build_kg's --limit: stop at the first article past it
                    builder.add_rows(rows)
                else:
                    shard_values, shard_capital, shard_templates = store.metas[number]["kg_dropped"]
                    values, capital = values + shard_values, capital + shard_capital
                    templates.update(shard_templates)
                    continue
                break
            builder.count_dropped(values, capital, templates)
            return builder.finish()
        except BaseException:
            builder.abort()
            raise


def build_index_ray(source: Path, name: str, config: Config, *, address: str | None = None,
                    num_cpus: int | None = None, workers: int | None = None, shard_size: int = SHARD_PAGES,
                    retries: int = RETRIES, embedder: Embedder | HashEmbedder | None = None,
                    on_shard: Callable[[dict], None] | None = None, **options: Any) -> Path:
    """``build_index`` with reading, chunking and embedding on Ray; same index, same passage ids.

    ``address``: None starts Ray here (``num_cpus`` of this machine), "auto" joins this
    machine's cluster, "HOST:PORT" a head node. ``workers`` defaults to the cluster's
    CPUs (one embedding thread each); ``shard_size`` is pages of a dump (or documents of
    other formats) per shard. ``options`` go to ``build_index`` (fmt, limit, kg, force,
    progress, faiss_type, log). ``on_shard`` is called with each new shard's figures.
    """
    if shard_size < 1:
        raise IndexBuildError(f"--shard-size must be at least 1, got {shard_size}")
    embedder = embedder or embedder_for(config)
    if not Path(source).expanduser().is_file():  # the cheap refusals before Ray starts
        raise IndexBuildError(f"{source} does not exist or is not a file", hint="check the SOURCE path")
    single._refuse_existing(index_dir(config, name), bool(options.get("force")))
    with ray_session(address, num_cpus=num_cpus) as ray:
        step = _RayPassages(ray, config, name, embedder, shard_size, retries, workers, on_shard,
                            kg=options.get("kg", True))
        path = single.build_index(source, name, config, embedder=embedder, passage_step=step, **options)
    shutil.rmtree(shards_dir(config, name), ignore_errors=True)
    return path
