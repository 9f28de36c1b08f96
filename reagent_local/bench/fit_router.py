"""``reagent bench fit-router``: the ``adaptive`` baseline's two decisions learned from train runs.

Each train question gives one example: the *first* road's answer (single-step RAG), the
*second* road's (IRCoT), each scored against the gold answers, and the features of the two
decisions, from what the ``rag`` and ``ircot`` records say of their answers (``reading``).

- **choose** is fitted on the questions whose two answers differ and score differently: the
  label is "the first answer scores higher", each example weighed by how much higher.
- **stop** is fitted on the questions whose first road answered: the label is "the first answer
  scores at least as well as the second" (stopping there lost nothing).

The penalty and both thresholds are chosen by cross-validation on out-of-fold probabilities:
the pair that gives the best mean F1 of the whole policy (stop, else choose), and among equals
the one with fewer model calls. The models are then refitted on every example. The CV figure is
optimistic (the thresholds are chosen on the same folds); the dev questions judge the router.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..core.evidence import values_agree
from ..agents.logistic import LogisticModel, fit_logistic, out_of_fold
from ..agents.router import KINDS, Reading, Router, choice_features, stop_features
from ..errors import BenchRunError
from ..version import code_version
from .metrics import best_em_f1
from .records import RECORDS_FILE, read_records
from .rundir import read_run_config

PENALTIES = (0.5, 2.0, 8.0, 32.0)
THRESHOLDS = tuple(round(0.5 + 0.01 * i, 2) for i in range(50))  # 0.50 .. 0.99
NEVER = 1.01  # a threshold no probability reaches


@dataclass(frozen=True)
class Example:
    """One train question as the router's fit sees it."""

    id: str
    stop: Mapping[str, float]  # the stop decision's features
    choose: Mapping[str, float] | None  # the choice's features (None: the answers agree or one is missing)
    first_f1: float
    second_f1: float
    first_known: bool
    second_known: bool
    stop_calls: float  # model calls when the run stops after the first road
    full_calls: float  # model calls when both roads run

    def policy(self, p_stop: float, p_choose: float | None, t_stop: float, t_choose: float) -> tuple[float, float]:
        """F1 and calls of the policy at these thresholds for this question."""
        if self.first_known and p_stop >= t_stop:
            return self.first_f1, self.stop_calls
        if not self.second_known or (self.choose is not None and p_choose is not None and p_choose >= t_choose):
            return self.first_f1, self.full_calls
        return self.second_f1, self.full_calls


def adaptive_examples(records: Sequence[Mapping[str, Any]]) -> list[Example]:
    """Examples from the ``rag`` and ``ircot`` records of the same questions."""
    by_method: dict[str, dict[str, Mapping[str, Any]]] = {"rag": {}, "ircot": {}}
    for r in records:
        if r["method"] in by_method and not r.get("error") and r.get("reading") is not None:
            by_method[r["method"]][str(r["id"])] = r
    out = []
    for qid, rag in by_method["rag"].items():
        ircot = by_method["ircot"].get(qid)
        if ircot is None:
            continue
        first, second = Reading.from_json(rag["reading"]), Reading.from_json(ircot["reading"])
        choose = None
        if not first.unknown and not second.unknown and not values_agree(first.answer, second.answer):
            choose = {**choice_features(rag["question"], first, second),
                      "second_steps": float(ircot["reading"].get("steps", 0))}
        out.append(Example(qid, stop_features(rag["question"], first), choose, float(rag["f1"]), float(ircot["f1"]),
                           not first.unknown, not second.unknown, float(rag["llm_calls"]),
                           float(rag["llm_calls"]) + float(ircot["llm_calls"])))
    return out


def _f1(answer: str | None, record: Mapping[str, Any]) -> float:
    return best_em_f1(answer, record["answers"])[1] if answer else 0.0


@dataclass(frozen=True)
class Fit:
    """A fitted router and what cross-validation said of it."""

    router: Router
    report: dict[str, Any]


def _stop_rows(examples: Sequence[Example]) -> list[Example]:
    return [e for e in examples if e.first_known]


def _choose_rows(examples: Sequence[Example]) -> list[Example]:
    return [e for e in examples if e.choose is not None and e.first_f1 != e.second_f1]


def _fit_pair(train: Sequence[Example], stop_names: Sequence[str], choose_names: Sequence[str],
              l2: float) -> tuple[LogisticModel | None, LogisticModel | None]:
    stops, chooses = _stop_rows(train), _choose_rows(train)
    stop = None
    if len({e.first_f1 >= e.second_f1 for e in stops}) == 2:
        stop = fit_logistic([e.stop for e in stops], [int(e.first_f1 >= e.second_f1) for e in stops], stop_names, l2=l2)
    choose = None
    if len({e.first_f1 > e.second_f1 for e in chooses}) == 2:
        choose = fit_logistic([e.choose for e in chooses], [int(e.first_f1 > e.second_f1) for e in chooses],
                              choose_names, l2=l2, weights=[abs(e.first_f1 - e.second_f1) for e in chooses])
    return stop, choose


def _probabilities(model: LogisticModel | None, features: Mapping[str, float] | None) -> float | None:
    return None if model is None or features is None else model.probability(features)


def _score(examples: Sequence[Example], probs: Sequence[tuple[float | None, float | None]], t_stop: float,
           t_choose: float) -> tuple[float, float, float]:
    """Mean F1, mean calls and the share stopped of the policy on these examples."""
    scored = [e.policy(ps if ps is not None else 0.0, pc, t_stop, t_choose) for e, (ps, pc) in zip(examples, probs)]
    stopped = sum(1 for e, (ps, _) in zip(examples, probs) if e.first_known and ps is not None and ps >= t_stop)
    n = max(1, len(examples))
    return sum(f for f, _ in scored) / n, sum(c for _, c in scored) / n, stopped / n


def fit_router(examples: Sequence[Example], kind: str, *, folds: int = 5, seed: int = 13) -> Fit:
    """Fit the router of ``kind`` on the examples; choose the penalty and thresholds by ``folds``-fold CV."""
    if kind not in KINDS:
        raise ValueError(f"unknown router kind {kind!r}")
    if len(examples) < 2 * folds:
        raise BenchRunError(f"{len(examples)} train questions are too few to fit a router ({2 * folds} at least)",
                            hint="run more train questions (`reagent bench run ... --ids DATASET-train.txt`)")
    # a road that gave no answer has no features of its answer: names come from the rows each model is fitted on
    stops, chooses = _stop_rows(examples), [e for e in examples if e.choose is not None]
    stop_names = sorted(set.intersection(*(set(e.stop) for e in stops))) if stops else []
    choose_names = sorted(set.intersection(*(set(e.choose) for e in chooses))) if chooses else []
    table = []  # the best thresholds for each penalty
    for l2 in PENALTIES:
        probs: list[tuple[float | None, float | None]] = out_of_fold(
            len(examples), folds, seed,
            lambda train, l2=l2: _fit_pair([examples[i] for i in train], stop_names, choose_names, l2),
            lambda pair, i: (_probabilities(pair[0], examples[i].stop if examples[i].first_known else None),
                             _probabilities(pair[1], examples[i].choose)))
        scored = []
        for t_stop in THRESHOLDS + (NEVER,):
            for t_choose in THRESHOLDS + (NEVER,):
                f1, calls, stopped = _score(examples, probs, t_stop, t_choose)
                scored.append(((round(f1, 6), -round(calls, 6)), {
                    "l2": l2, "stop_threshold": t_stop, "choose_threshold": t_choose,
                    "f1": round(f1, 4), "calls": round(calls, 2), "stopped": round(stopped, 3)}))
        table.append(max(scored, key=lambda s: s[0]))
    key, chosen = max(table, key=lambda s: s[0])
    l2, t_stop, t_choose = chosen["l2"], chosen["stop_threshold"], chosen["choose_threshold"]
    stop, choose = _fit_pair(examples, stop_names, choose_names, l2)
    stop = replace(stop, threshold=t_stop) if stop is not None and t_stop < NEVER else None
    choose = replace(choose, threshold=t_choose) if choose is not None and t_choose < NEVER else None
    n = len(examples)
    report = {
        "examples": n, "choose_examples": len(_choose_rows(examples)), "stop_examples": len(_stop_rows(examples)),
        "cv": {"folds": folds, "seed": seed, "policy": chosen, "by_penalty": [row for _, row in table]},
        "always_second": round(sum(e.second_f1 if e.second_known else e.first_f1 for e in examples) / n, 4),
        "always_first": round(sum(e.first_f1 if e.first_known else e.second_f1 for e in examples) / n, 4),
        "oracle": round(sum(max(e.first_f1, e.second_f1) for e in examples) / n, 4),
        "calls_always_second": round(sum(e.full_calls for e in examples) / n, 2),
        # the second road run alone, without the first read before it: the cost a user of that road pays today
        "calls_second_alone": round(sum(e.full_calls - e.stop_calls for e in examples) / n, 2),
        "calls_always_first": round(sum(e.stop_calls for e in examples) / n, 2),
    }
    return Fit(Router(kind, stop, choose), report)


def collect(folders: Sequence[Path], kind: str) -> tuple[list[Example], dict[str, Any]]:
    """The examples of every run folder, and where they came from (folders, commits, question files)."""
    examples: list[Example] = []
    sources = []
    for folder in folders:
        folder = Path(folder)
        records = read_records(folder / RECORDS_FILE)
        run = read_run_config(folder)
        found = adaptive_examples(records)
        if not found:
            raise BenchRunError(f"{folder} has no rag and ircot records to fit a {kind} router from",
                                hint="run `reagent bench run ... --methods rag,ircot` on train questions first")
        examples += found
        ids = run.get("ids") or {}
        sources.append({"folder": folder.name, "dataset": run.get("dataset"), "questions": len(found),
                        "ids_file": Path(ids["file"]).name if ids.get("file") else None,
                        "ids_sha256": ids.get("sha256"),
                        "commits": sorted({str(r.get("code")) for r in records})})
    return examples, {"runs": sources}


def fit_folders(folders: Sequence[Path], kind: str, *, folds: int = 5, seed: int = 13,
                command: str = "") -> Fit:
    """Fit a router of ``kind`` from run folders; its provenance names them, the commit and the command."""
    examples, sources = collect(folders, kind)
    ids = [str(r["ids_file"]) for r in sources["runs"]]
    fit = fit_router(examples, kind, folds=folds, seed=seed)
    provenance = {**sources, "commit": code_version(), "command": command, "question_files": ids,
                  "fit": fit.report}
    return Fit(replace(fit.router, provenance=provenance), fit.report)


def render_fit(fit: Fit) -> str:
    """The fit as Markdown: the policy against always one road and the oracle, then each model's weights."""
    r, router = fit.report, fit.router
    policy = r["cv"]["policy"]
    first, second = "RAG", "IRCoT"
    lines = [f"# The {router.kind} router", "",
             f"{r['examples']} train questions ({r['choose_examples']} where the two answers differ and score "
             f"differently). Mean F1 ({r['cv']['folds']}-fold CV, thresholds chosen on the same folds, so optimistic):",
             "", "| policy | F1 | calls |", "|---|---|---|",
             f"| learned router (stops on {policy.get('stopped', 0):.0%}) | {policy.get('f1', 0):.3f} | "
             f"{policy.get('calls', 0):.1f} |",
             f"| always the {second}, after the {first} | {r['always_second']:.3f} | {r['calls_always_second']:.1f} |",
             f"| the {second} alone | | {r['calls_second_alone']:.1f} |",
             f"| always the {first} | {r['always_first']:.3f} | {r['calls_always_first']:.1f} |",
             f"| oracle (the better per question) | {r['oracle']:.3f} | |", ""]
    for name, model in (("stop", router.stop), ("choose", router.choose)):
        if model is None:
            lines += [f"## {name}: no model (never)", ""]
            continue
        lines += [f"## {name}: threshold {model.threshold:.2f}, bias {model.bias:+.3f}", "",
                  "| feature | weight (per standard deviation) |", "|---|---|"]
        lines += [f"| {f} | {w:+.3f} |" for f, w in sorted(zip(model.features, model.weights),
                                                              key=lambda fw: -abs(fw[1]))]
        lines.append("")
    return "\n".join(lines)
