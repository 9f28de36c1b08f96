"""Run methods over a sample of benchmark questions into a resumable run folder.

Questions are taken in sample order and each goes through every method before the
next question starts, so an interrupted run has compared all methods on the same
questions. Each (method, question) starts with an empty prompt cache (``answer_one``), so
its seconds are its own, as in a fresh process: a method never reuses the prompt states the
methods before it left for the same question. Each finished (method, question) is appended to
``records.jsonl`` at once;
``resume=True`` skips the pairs already there. ``ids`` / ``exclude_ids`` filter the
file's questions before the draw; ``index`` answers over a prebuilt index instead of
the file's own open-corpus index.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..config import Config
from ..datasets import Question, load_questions
from ..errors import IndexNotFoundError, LLMOutputError, ModelNotFoundError
from ..runtime.contention import CpuMeter, machine_record
from ..runtime.identity import machine_identity
from ..runtime.llm import LLM
from ..paths import file_sha256
from ..version import code_version
from .compare import backtracking_fields
from .methods import Method, MethodContext, MethodResult, Retriever, error_text
from .metrics import best_em_f1, support_scores
from .records import RECORDS_FILE, RecordStore
from .registry import DEFAULT_METHODS, build_method, check_methods
from .report import write_report
from .rundir import prepare_folder, refuse_another_origin, run_config, run_lock
from .sampling import sample_questions
from .selection import IdList, IdsSource, as_id_list, filter_questions, selection_config, selection_slug

EVENTS_FILE = "events.duckdb"
NO_RETRIEVAL = frozenset({"closed-book"})


@dataclass
class RunOutcome:
    """What a run did: where it wrote, how many records it added, and the summary."""

    folder: Path
    summary: dict[str, Any]
    new_records: int
    resumed_records: int
    dropped_torn_line: bool


def gold_support(question: Question) -> list[tuple[str, str | None]]:
    """Gold paragraphs to score citations against: title and text for MuSiQue, title otherwise."""
    if question.dataset == "musique":  # MuSiQue marks supporting paragraphs, several per title
        return [(p.title, p.text) for p in question.supporting]
    return [(title, None) for title in question.supporting_titles]


def make_record(method: str, question: Question, result: MethodResult, seconds: float) -> dict[str, Any]:
    """One line of records.jsonl."""
    em, f1 = best_em_f1(result.prediction, question.answers)
    precision, recall = support_scores(((p.title, p.text) for p in result.cited), gold_support(question))
    return {
        "method": method,
        "id": question.id,
        "dataset": question.dataset,
        "type": question.type,
        "question": question.question,
        "prediction": result.prediction,
        "answers": list(question.answers),
        "em": em,
        "f1": round(f1, 6),
        "cited": [{"id": p.id, "title": p.title} for p in result.cited],
        "support_precision": precision,
        "support_recall": recall,
        "llm_calls": result.llm_calls,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "seconds": round(seconds, 3),
        "backtracks": dict(result.backtracks),
        **backtracking_fields(result.prediction, question.answers, result.backtracks,
                              result.answer_before_backtracking,
                              result.without_backtracking.answer if result.without_backtracking else None),
        # the second run that found the answer without backtracking: not part of this question's cost
        "without_backtracking_cost": result.without_backtracking.cost() if result.without_backtracking else None,
        "rules_fired": list(result.rules_fired),
        "signals": list(result.signals),
        "roads": result.roads,
        "route": result.route,
        "reading": result.reading,
        "trust": result.trust,
        "run_id": result.run_id,
        "uncertain": result.uncertain,
        "error": result.error,
        "code": code_version(),
    }


def load_model(config: Config, note: Callable[[str], None] | None = None) -> tuple[LLM, dict[str, Any]]:
    """The configured GGUF model (loaded lazily on its first call) and its identity.

    When a compatible `reagent serve` runs on the home, its model answers the calls instead
    (``reagent_local/share/``); ``note`` is told where the calls go, or why not to the server.
    """
    from ..reasoning.wiring import load_llm
    from ..runtime.models import find_known
    from ..share.remote import served_model

    llm = load_llm(config.llm.model, config)
    try:
        sha = find_known(llm.model_id).sha256  # verified when it was pulled
    except ModelNotFoundError:
        sha = file_sha256(llm.path)  # a user's own GGUF: hash it once per run start
    model = {"id": llm.model_id, "path": str(llm.path), "sha256": sha}
    return served_model(config, note) or llm, model


def benchmark_index(dataset: str, file: Path, config: Config, name: str | None = None) -> Callable[[], Retriever]:
    """A function that opens the file's open-corpus index (``name``, or the name its configuration gives),
    building it first if needed."""

    def open_index() -> Retriever:
        from ..retrieval import Index, benchmark_index_name, build_index
        from ..retrieval.layout import BENCHMARK_TOKENIZER

        nonlocal name
        name = name or benchmark_index_name(file, config.retrieval)
        try:
            return Index.open(name, config)
        except IndexNotFoundError:
            build_index(file, name, config, fmt=dataset, kg=False, tokenizer=BENCHMARK_TOKENIZER)
            return Index.open(name, config)

    return open_index


def prebuilt_index(name: str, config: Config) -> tuple[Callable[[], Retriever], dict[str, Any]]:
    """An opener for the prebuilt index ``name`` and its identity; a missing index raises now."""
    from ..retrieval import Index

    with Index.open(name, config) as index:  # fails before the run folder exists
        manifest = index.manifest
        identity = {"name": name, "path": str(index.path), "source": manifest.get("source"),
                    "passages": manifest.get("passages"), "embedder": manifest.get("embedder")}
    return (lambda: Index.open(name, config)), identity


def default_out(config: Config, dataset: str, model_id: str, n: int | None, seed: int, selection: str = "") -> Path:
    """``<home>/bench-runs/<dataset>[-<selection>]-<model>-n<N>-seed<S>``: the same settings find the same folder.

    ``selection`` names the ids filters and a prebuilt index (``ids-hotpotqa-test-index-enwiki``).
    """
    slug = re.sub(r"[^\w.-]+", "-", "-".join(filter(None, [dataset, selection, model_id]))).strip("-")
    return Path(config.paths.home) / "bench-runs" / f"{slug}-n{n if n is not None else 'all'}-seed{seed}"


def _folder_part(ids: IdList | None, exclude_ids: IdList | None, index: str | None) -> str:
    """What the default folder name says about the filters and a prebuilt index."""
    return "-".join(filter(None, [selection_slug(ids, exclude_ids), f"index-{Path(index).name}" if index else ""]))


def select_sample(questions: Sequence[Question], file: Path, n: int | None, seed: int,
                  ids: IdList | None, exclude_ids: IdList | None) -> list[Question]:
    """Filter the file's questions by the ids lists (file order kept), then draw n with ``seed``."""
    if ids is None and exclude_ids is None:
        return sample_questions(questions, n, seed)
    pool = filter_questions(questions, file, ids=ids, exclude_ids=exclude_ids)
    return sample_questions(pool, n, seed, pool="the selection (--ids / --exclude-ids)")


class _Scores:
    """Running EM/F1 per method for the progress display."""

    def __init__(self) -> None:
        self.totals: dict[str, list[float]] = {}

    def add(self, record: dict[str, Any]) -> None:
        total = self.totals.setdefault(record["method"], [0, 0.0, 0.0])
        total[0] += 1
        total[1] += record["em"]
        total[2] += record["f1"]

    def text(self, method: str) -> str:
        n, em, f1 = self.totals.get(method, [0, 0.0, 0.0])
        return f"EM {em / n:.3f}  F1 {f1 / n:.3f}" if n else "EM -      F1 -"


def warm_up(ctx: MethodContext, methods: Sequence[str]) -> None:
    """Load the model and the index before timing, so the first question does not pay for it."""
    if hasattr(ctx.llm, "load"):
        ctx.llm.load()
    if set(methods) - NO_RETRIEVAL:
        ctx.retriever.search("warm up", k=1, mode=ctx.config.retrieval.mode)


def _progress(console: Any) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description:<15}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[score]}"), TimeElapsedColumn(), console=console)


def answer_one(method: Method, question: Question, llm: Any = None) -> dict[str, Any]:
    """The record of one built method answering one question (a model failure is an error record).

    The question starts as in a fresh process: ``llm``'s prompt cache and reusable prefix are emptied first
    (``LlamaModel.forget_prompts``), keeping only the warm role prefixes every method gets (runtime/warm.py),
    so the seconds never include another method's cached prompts;
    ``cached_prompt_tokens`` counts the prompt tokens the question's own calls found in the cache.
    The seconds of the second run that finds the answer without backtracking are not the question's.
    The record's ``machine`` says whether they were measured on a shared machine (``runtime/contention.py``;
    ``llm``: the run's model, whose calls add what they saw of other model processes or clients),
    and ``machine_id`` which machine answered (``runtime/identity.py``).
    """
    sharing = getattr(llm, "sharing", None)
    if sharing is not None:
        sharing.reset()
    forget = getattr(llm, "forget_prompts", None)
    if forget is not None:
        forget()
    prompts = getattr(llm, "prompts", None)
    if prompts is not None:
        prompts.reset()
    meter = CpuMeter()
    mark = meter.mark()
    start = time.perf_counter()
    try:
        result = method.answer(question.question)
    except LLMOutputError as exc:  # a user method that did not catch its own
        result = MethodResult(prediction="", error=error_text(exc))
    seconds = time.perf_counter() - start
    others_cpu = meter.others_share(mark, meter.mark())
    if result.without_backtracking is not None:
        seconds -= result.without_backtracking.seconds
    record = make_record(method.name, question, result, seconds)
    record["machine"] = machine_record(sharing, others_cpu, seconds)
    record["machine_id"] = machine_identity(llm)["machine_id"]
    # prompt tokens taken from the cache by this question's calls (the answer without backtracking's too);
    # None when the model does not say (a served or scripted model)
    record["cached_prompt_tokens"] = prompts.cached if prompts is not None and prompts.counted else None
    # the question began with an emptied prompt cache (holding the warm role prefixes only); False: a served model's cache, which this process cannot
    # empty; None: a model without a prompt cache (a scripted one)
    served = getattr(sharing, "via", "local") == "server"
    record["cold_start"] = True if forget is not None else False if served else None
    return record


AnswerAll = Callable[[Sequence[Question], Sequence[str], MethodContext, RecordStore, Any], None]


def _answer_all(sample: Sequence[Question], methods: Sequence[str], ctx: MethodContext, store: RecordStore,
                console: Any) -> None:
    """Answer every (question, method) pair not yet in the store, question by question."""
    scores = _Scores()
    for record in store.records:
        scores.add(record)
    todo = [m for m in methods if any((m, q.id) not in store.done for q in sample)]
    if not todo:
        return
    warm_up(ctx, todo)
    built: dict[str, Method] = {}
    progress = _progress(console) if console is not None else None
    tasks = {}
    if progress is not None:
        progress.start()
        for m in methods:
            done = sum(1 for q in sample if (m, q.id) in store.done)
            tasks[m] = progress.add_task(m, total=len(sample), completed=done, score=scores.text(m))
    try:
        for question in sample:
            for name in todo:
                if (name, question.id) in store.done:
                    continue
                if name not in built:
                    built[name] = build_method(name, ctx)
                record = answer_one(built[name], question, ctx.llm)
                store.append(record)
                scores.add(record)
                if progress is not None:
                    progress.update(tasks[name], advance=1, score=scores.text(name))
    finally:
        if progress is not None:
            progress.stop()


def _retrieval(dataset: str, file: Path, config: Config, methods: Sequence[str], retriever: Retriever | None,
               index: str | None) -> tuple[Callable[[], Retriever], str | None, dict[str, Any] | None]:
    """How the run gets its index: (opener, index name for config.json, prebuilt index identity or None)."""
    if index is not None:
        opener, identity = prebuilt_index(index, config)
        return opener, index, identity
    name = getattr(retriever, "name", None) if retriever is not None else None
    if retriever is None and set(methods) - NO_RETRIEVAL:
        from ..retrieval import benchmark_index_name

        name = benchmark_index_name(file, config.retrieval)
        return benchmark_index(dataset, file, config, name), name, None
    return benchmark_index(dataset, file, config), name, None


def run_benchmark(
    dataset: str,
    file: Path,
    *,
    config: Config,
    n: int | None = None,
    seed: int = 13,
    methods: Sequence[str] = DEFAULT_METHODS,
    out: Path | None = None,
    resume: bool = False,
    llm: LLM | None = None,
    retriever: Retriever | None = None,
    console: Any = None,
    ids: IdsSource | None = None,
    exclude_ids: IdsSource | None = None,
    index: str | None = None,
    answer_all: AnswerAll | None = None,
    allow_mixed: bool = False,
) -> RunOutcome:
    """Answer ``n`` questions drawn with ``seed`` by each method; write records, summary, table and chart.

    ``ids`` / ``exclude_ids`` (an ids file's path, or the ids themselves) filter the
    file's questions before the draw. ``index`` names a prebuilt index to answer over
    instead of the file's open-corpus index (built on first need). ``llm`` and
    ``retriever`` default to the configured model and that index; pass fakes to drive
    the runner in tests. ``console`` (a rich Console) turns on the progress bars.
    ``answer_all`` replaces the loop that answers the (method, question) pairs not yet
    in the folder (``reagent_local.cluster`` passes one that fans them out to Ray actors).
    ``allow_mixed`` lets a resumed run add records of another commit or configuration to a
    folder (its tables then say they mix); without it such a resume is refused before any work.
    """
    methods = check_methods(list(methods))
    if index is not None and retriever is not None:
        raise ValueError("pass either index (a prebuilt index name) or retriever, not both")
    code_version()  # read (and cache) the commit now: the code in memory is the code at start
    file = Path(file)
    wanted, unwanted = as_id_list(ids, "--ids"), as_id_list(exclude_ids, "--exclude-ids")
    sample = select_sample(load_questions(file, dataset), file, n, seed, wanted, unwanted)
    open_retriever, index_name, prebuilt = _retrieval(dataset, file, config, methods, retriever, index)
    owns_llm = llm is None
    if llm is None:
        note = (lambda line: console.print(line, markup=False, highlight=False)) if console is not None else None
        llm, model = load_model(config, note=note)
    else:
        model = {"id": llm.model_id, "path": None, "sha256": None}
    machine = machine_identity(llm)
    if out is None:
        out = default_out(config, dataset, model["id"], n, seed, _folder_part(wanted, unwanted, index))
    out = Path(out)
    fresh = run_config(dataset=dataset, file=file, seed=seed, n=n, methods=methods, model=model,
                       config=config, index=index_name, question_ids=[q.id for q in sample],
                       selection=selection_config(wanted, unwanted), prebuilt_index=prebuilt, machine=machine)
    try:
        with run_lock(out):
            session = fresh["sessions"][0]
            if resume and not allow_mixed:
                refuse_another_origin(out, session["code"], session["config_id"], session["machine_id"])
            prepare_folder(out, fresh, resume=resume)
            ctx = MethodContext(config, llm, retriever=retriever, open_retriever=open_retriever,
                                log_path=out / EVENTS_FILE)
            store = RecordStore(out / RECORDS_FILE, stamp={"config_id": session["config_id"]})
            resumed = len(store.records)
            try:
                (answer_all or _answer_all)(sample, methods, ctx, store, console)
            finally:
                store.close()
                ctx.close()
            summary = write_report(out, allow_mixed=allow_mixed)
    finally:
        if owns_llm and hasattr(llm, "close"):
            llm.close()
    return RunOutcome(out, summary, len(store.records) - resumed, resumed, store.dropped_torn_line)
