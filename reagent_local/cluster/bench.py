"""`reagent bench run --ray`: the questions fan out to actors that each hold one llama.cpp model.

The run is the usual one (``bench.runner.run_benchmark``: the run folder, its lock and
config.json, resume, report); only the loop that answers the (method, question) pairs
not yet in the folder is replaced. Each ``BenchWorker`` actor loads the model (with
``threads`` llama.cpp threads), opens the index and builds the methods once, then
answers one pair per call and returns its record. This process appends each record to
records.jsonl (one fsynced line, as always) as it arrives: the usual format, in the
order they finish, and ``--resume`` skips them.

Event logs: workers on this machine log to the run folder's events.duckdb (processes
share it safely); workers on other machines log to
``<tmp>/reagent-cluster/<run folder name>/events.duckdb`` on their own machine.
"""

from __future__ import annotations

import copy
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from ..bench.methods import Method, MethodContext
from ..bench.records import RecordStore
from ..bench.registry import build_method, check_methods
from ..bench.runner import (EVENTS_FILE, NO_RETRIEVAL, AnswerAll, RunOutcome, _progress, _Scores, answer_one,
                            run_benchmark, warm_up)
from ..datasets import Question
from ..errors import ClusterError, IndexBuildError
from ..runtime.llm import LlamaModel
from ..version import code_version
from .connect import cluster_cpus, node_info, ray_session
from .pool import ActorPool

RETRIES = 2


def remote_log_path(folder_name: str) -> Path:
    """Where a worker on another machine than the run folder's keeps its event log."""
    return Path(tempfile.gettempdir()) / "reagent-cluster" / folder_name / EVENTS_FILE


class BenchWorker:
    """A Ray actor: one model, one index, the run's methods; answers one (method, question) a call."""

    def __init__(self, ctx: MethodContext, threads: int, driver_node: str, methods: Sequence[str]) -> None:
        self.ctx, self.threads, self.driver_node, self.methods = ctx, threads, driver_node, list(methods)
        self.built: dict[str, Method] = {}

    def ready(self) -> dict:
        """Load the model and open the index; where this worker runs and logs."""
        from ..reasoning.wiring import load_llm

        ctx = self.ctx
        ctx.config = replace(ctx.config, llm=replace(ctx.config.llm, n_threads=self.threads))
        try:
            import torch

            torch.set_num_threads(self.threads)  # the query embedder of dense search
        except ImportError:
            pass
        if ctx.llm is None:
            ctx.llm = load_llm(ctx.config.llm.model, ctx.config)
        info = node_info()
        if info["node"] != self.driver_node and ctx.log_path is not None:
            ctx.log_path = remote_log_path(ctx.log_path.parent.name)
            ctx.log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            warm_up(ctx, self.methods)
        except IndexBuildError:  # another worker on this machine built the open-corpus index meanwhile: open it
            warm_up(ctx, self.methods)
        return {**info, "code": code_version(), "log": str(ctx.log_path) if ctx.log_path else None}

    def answer(self, method: str, question: Question) -> dict:
        """The record of ``method`` answering ``question``."""
        if method not in self.built:
            self.built[method] = build_method(method, self.ctx)
        return answer_one(self.built[method], question, self.ctx.llm)

    def close(self) -> None:
        """Close the log, the index and the model."""
        self.ctx.close()
        if hasattr(self.ctx.llm, "close"):
            self.ctx.llm.close()


def ray_answer_all(ray: Any, *, threads: int = 1, workers: int | None = None, retries: int = RETRIES,
                   notes: list[str] | None = None) -> AnswerAll:
    """A ``run_benchmark`` answer loop that fans the pairs out to Ray actors (``workers`` x ``threads`` CPUs)."""

    def answer_all(sample: Sequence[Question], methods: Sequence[str], ctx: MethodContext, store: RecordStore,
                   console: Any) -> None:
        pairs = [(m, q) for q in sample for m in methods if (m, q.id) not in store.done]
        if not pairs:
            return
        todo = list(dict.fromkeys(m for m, _ in pairs))
        if set(todo) - NO_RETRIEVAL:  # build the open-corpus index here once; workers only open it
            probe = copy.copy(ctx)
            probe.retriever  # noqa: B018 (opens it)
            probe.close()
        shipped = copy.copy(ctx)
        if isinstance(ctx.llm, LlamaModel):
            shipped.llm = None  # each worker loads its own
        size = min(len(pairs), workers or max(1, cluster_cpus(ray) // threads))
        actor_class = ray.remote(num_cpus=threads)(BenchWorker)
        driver = ray.get_runtime_context().get_node_id()
        pool: ActorPool = ActorPool(ray, lambda: actor_class.remote(shipped, threads, driver, todo), size,
                                    retries=retries, describe=lambda p: f"question {p[1].id!r} with method {p[0]}")
        pool.hint = ("the records written so far are kept: fix the cause and run the same command again "
                     "with --resume")
        _check_workers(pool.start(), notes)
        scores = _Scores()
        for record in store.records:
            scores.add(record)
        progress = _progress(console) if console is not None else None
        tasks: dict[str, Any] = {}
        if progress is not None:
            progress.start()
            for m in methods:
                done = sum(1 for q in sample if (m, q.id) in store.done)
                tasks[m] = progress.add_task(m, total=len(sample), completed=done, score=scores.text(m))

        def finished(_pair: tuple[str, Question], record: dict) -> None:
            store.append(record)
            scores.add(record)
            if progress is not None:
                progress.update(tasks[record["method"]], advance=1, score=scores.text(record["method"]))

        try:
            pool.run(pairs, lambda actor, pair: actor.answer.remote(*pair), finished)
        finally:
            pool.close()
            if progress is not None:
                progress.stop()
        if notes is not None and pool.failures:
            notes.append(f"{len(pool.failures)} tries failed and were retried: " + "; ".join(pool.failures[:3]))

    return answer_all


def _check_workers(infos: list[dict], notes: list[str] | None) -> None:
    """Every worker must run this commit; say where the others log."""
    mine = code_version()
    for info in infos:
        if info["code"] != mine:
            raise ClusterError(f"the Ray worker on {info['host']} runs reagent-local {info['code']}, "
                               f"this process {mine}",
                               hint="install the same commit on every machine (git checkout, pip install -e .)")
    elsewhere = sorted({f"{i['host']}:{i['log']}" for i in infos if i.get("log") and "reagent-cluster" in i["log"]})
    if notes is not None and elsewhere:
        notes.append("workers on other machines log their runs' events to " + ", ".join(elsewhere))


def run_benchmark_ray(dataset: str, file: Path, *, config: Any, address: str | None = None,
                      num_cpus: int | None = None, threads: int = 1, workers: int | None = None,
                      retries: int = RETRIES, notes: list[str] | None = None, **options: Any) -> RunOutcome:
    """``run_benchmark`` with the questions answered by Ray actors; the same run folder and records.

    ``address``: None starts Ray here (``num_cpus`` of this machine), "auto" joins this
    machine's cluster, "HOST:PORT" a head node. ``threads``: llama.cpp threads (and CPUs)
    per worker; ``workers`` defaults to the cluster's CPUs / threads. ``options`` go to
    ``run_benchmark``; an ``llm`` or ``retriever`` passed there must be picklable (the
    fakes of ``reagent_local.testing`` are): each worker gets a copy. ``notes`` collects
    lines worth telling the user.
    """
    if threads < 1:
        raise ClusterError(f"--ray-threads must be at least 1, got {threads}")
    if "methods" in options:
        check_methods(list(options["methods"]))  # the cheap refusals before Ray starts
    with ray_session(address, num_cpus=num_cpus) as ray:
        answer_all = ray_answer_all(ray, threads=threads, workers=workers, retries=retries, notes=notes)
        # the workers' threads are the run's: its configuration id and config.json say so
        config = replace(config, llm=replace(config.llm, n_threads=threads))
        return run_benchmark(dataset, file, config=config, answer_all=answer_all, **options)
