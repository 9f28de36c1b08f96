"""Benchmark harness: official metrics, baselines, ReAgent adapter, resumable runner, reports."""

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
