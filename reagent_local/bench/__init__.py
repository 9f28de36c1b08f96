"""Benchmark harness: official metrics, baselines, a ReAgent adapter, a resumable runner, reports.

Command line::

    reagent bench run --dataset hotpotqa --file hotpot_dev_distractor_v1.json --n 50 --seed 13 \\
        --methods closed-book,rag,ircot,reagent-both [--ids FILE] [--exclude-ids FILE] [--index NAME] \\
        [--model NAME|PATH] [--out DIR] [--resume] [--allow-mixed]
    reagent bench report DIR [--allow-mixed]
    reagent bench compare RUN_A RUN_B | RUN... --methods A,B [--json] [--allow-mixed]
    reagent bench profile RUN [--method M] [--json]
    reagent bench tables RUN... [--allow-mixed]
    reagent bench ablate RUN... --what SPEC [--what SPEC ...] [--method M] [--check N] [--out DIR] [--resume] [--json]
    reagent bench noise --dataset D --file F [--ids FILE] [--n 20] [--method rag] [--threads 1,2] --out DIR [--write F]

Library: ``run_benchmark(dataset, file, config=..., n=50, seed=13, methods=[...], out=DIR,
ids=None, exclude_ids=None, index=None)``.

Protocol: the knowledge base is the open corpus of the whole file (its questions'
paragraphs, deduplicated by title and text), indexed once as
``benchmark_index_name(file)``, or a prebuilt index given by name. The questions are
filtered by the ``ids`` / ``exclude_ids`` lists (file order kept), then ``n`` are drawn
with ``random.Random(seed).sample(filtered_questions, n)`` (= ``random.seed(seed);
random.sample(...)``), the same ones for every method; each method sees only the
question text. EM/F1 are the official HotpotQA ones, best over aliases.

Run folder: ``config.json`` (settings, dataset sha256, model id and sha256, sampled
ids, each session's commit, configuration and machine identity), ``records.jsonl`` (one
fsynced line per finished (method, question), with its commit ``code``, ``config_id`` and
``machine_id``, begun with an empty prompt cache (``cold_start``, ``cached_prompt_tokens``);
a ReAgent record also carries the answer its question gets without backtracking),
``events.duckdb`` (the ReAgent methods' event log), ``summary.json``, ``results.md``,
``chart.png``. ``--resume`` skips finished pairs, redoes a torn last line, and refuses a
folder whose dataset file, ids filters, drawn questions, seed, n, model, prebuilt index or
retrieval settings differ, or (unless mixing is allowed) whose records come from another
commit, configuration or machine; methods may be added. A table is one commit, one configuration
and one machine (``provenance.py``; docs/measurement.md); ``noise.py`` measures how many answers
threads alone change; medians and p90 are ``stats.py``'s; ``paired.py`` compares two sides;
``ablate.py`` answers again only where an ablated part acted (``acted.py``) and pairs over all questions.

Adding a method: a class with ``name`` and ``answer(question: str) -> MethodResult``
built from a ``MethodContext`` (shared ``llm``, ``retriever``, ``config``, ``event_log()``),
then ``register_method("my-method", MyMethod)``.
"""

from .methods import CallTally, Method, MethodContext, MethodResult, Retriever
from .metrics import best_em_f1, exact_match, f1_score, normalize_answer, support_scores
from .registry import DEFAULT_METHODS, METHODS, register_method
from .report import write_report
from .runner import RunOutcome, run_benchmark
from .sampling import sample_questions

__all__ = [
    "CallTally", "DEFAULT_METHODS", "METHODS", "Method", "MethodContext", "MethodResult", "Retriever",
    "RunOutcome", "best_em_f1", "exact_match", "f1_score", "normalize_answer", "register_method",
    "run_benchmark", "sample_questions", "support_scores", "write_report",
]
