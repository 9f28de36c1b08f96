"""``reagent bench fit-trust``: the trust score's model learned from train runs, judged on others.

Each train question gives one example: the features of its ReAgent answer (agents/trust.py) and
its label, exact match. A record of today's code carries every feature in ``trust.features``;
an older record (no ``trust``) gives what its fields say: its cited passages' text comes from the
run's dataset file (the open corpus its index was built from), so ``grounded`` and the answer's
type fit are worked out as the run works them out (with the rules that remain: the shipped model's train
runs ran without the answer-type rules removed on 2026-12-07, and those objected to none of the
predictions of its judged dev runs); the answer's token confidence and the chain's shape are not in it, and a model fitted on such
records goes without them (the features every example carries are the ones fitted).

The L2 penalty is the one with the lowest out-of-fold log loss (5-fold CV); the threshold for
"trusted" is chosen on the same out-of-fold probabilities: the lowest whose trusted answers are
right at least ``target`` of the time (0.70) among at least a tenth of the questions, so that
trusted covers as much as it can at that precision; when none reaches it, the one with the best
EM among thresholds covering at least half the questions. The model is then refitted on every
example. ``--judge`` scores other runs' records (dev) with the fitted model: AUROC and selective
accuracy on questions the fit never saw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..core.evidence import flatten, is_unknown, supported
from ..agents.logistic import LogisticModel, fit_logistic, out_of_fold
from ..agents.trust import TrustModel, record_facts
from ..config import DEFAULT_RULES
from ..errors import BenchRunError
from ..rules import RuleSet, answer_type_problem, live_rules
from ..version import code_version
from .records import RECORDS_FILE, read_records
from .rundir import read_run_config
from .selective import auroc, selective

PENALTIES = (0.5, 2.0, 8.0, 32.0)
THRESHOLDS = tuple(round(0.05 + 0.01 * i, 2) for i in range(91))  # 0.05 .. 0.95
TARGET = 0.70  # the issue's: trusted answers right at least this often
MIN_SHARE = 0.10  # a threshold that trusts fewer questions than this is not chosen for its precision
# the records read, the first a run folder has (reagent-collect: the removed router's train runs, which the
# shipped trust model was fitted on)
METHODS = ("reagent-both", "reagent-collect")


@dataclass(frozen=True)
class Example:
    """One question's answer as the trust fit sees it."""

    id: str
    dataset: str
    features: Mapping[str, float]
    em: float
    derived: bool  # the features were worked out from an old record's fields


@dataclass(frozen=True)
class PassageText:
    """A cited passage's title and text, as the run's index held it."""

    title: str
    text: str


@lru_cache(maxsize=8)
def corpus_texts(file: str, dataset: str, passage_chars: int) -> dict[str, PassageText]:
    """The passages of a benchmark file's open corpus by id (``title#n``), cut as the retriever cuts them."""
    from ..retrieval.readers import document_passages, read_documents

    out: dict[str, PassageText] = {}
    count: dict[str, int] = {}
    for document in read_documents(Path(file), dataset):
        for text in document_passages(document):
            n = count.get(document.title, 0)
            count[document.title] = n + 1
            out[f"{document.title}#{n}"] = PassageText(document.title, flatten(text, passage_chars))
    return out


def record_example(record: Mapping[str, Any], texts: Mapping[str, PassageText] | None,
                   rules: RuleSet) -> Example:
    """The example of one record: its ``trust.features`` when it has them, else worked out from its fields."""
    em = float(record.get("em") or 0.0)
    features = (record.get("trust") or {}).get("features")
    if features:
        return Example(str(record["id"]), str(record.get("dataset", "")), dict(features), em, False)
    if texts is None:
        raise BenchRunError(f"record {record['id']} carries no trust features and its run's dataset file is unknown",
                            hint="fit on run folders whose config.json names the dataset file, or on fresh runs")
    prediction = str(record.get("prediction") or "")
    unknown = not prediction.strip() or is_unknown(prediction)
    cited = [texts[c["id"]] for c in record.get("cited") or () if c.get("id") in texts]
    grounded = not unknown and supported(prediction, cited)
    fits = unknown or answer_type_problem(str(record["question"]), prediction, rules, fire=False) is None
    facts = record_facts(record, grounded, fits)
    return Example(str(record["id"]), str(record.get("dataset", "")), facts.features(), em, True)


def collect(folders: Sequence[Path], method: str | None = None) -> tuple[list[Example], dict[str, Any]]:
    """The examples of every run folder (its ``method`` records, else the first of METHODS it has)."""
    examples: list[Example] = []
    sources = []
    for folder in map(Path, folders):
        records = [r for r in read_records(folder / RECORDS_FILE) if not r.get("error")]
        present = {r["method"] for r in records}
        chosen = method or next((m for m in METHODS if m in present), None)
        if chosen is None or chosen not in present:
            raise BenchRunError(f"{folder} has no {method or ' or '.join(METHODS)} records to fit the trust score from",
                                hint="run `reagent bench run ... --methods reagent-both` on train questions first")
        run = read_run_config(folder)
        config = run.get("config") or {}
        # the run's rules as they are now: one removed since (rules.REMOVED_RULES) is no longer consulted
        rules = RuleSet(live_rules(tuple((config.get("pipeline") or {}).get("rules") or DEFAULT_RULES)))
        passage_chars = int((config.get("retrieval") or {}).get("passage_chars") or 700)
        chosen_records = [r for r in records if r["method"] == chosen]
        texts = None
        if any(not (r.get("trust") or {}).get("features") for r in chosen_records) and run.get("file"):
            if not Path(run["file"]).exists():
                raise BenchRunError(f"{folder}'s records predate the trust score and its dataset file "
                                    f"{run['file']} is missing", hint="put the file back, or fit on fresh runs")
            texts = corpus_texts(str(run["file"]), str(run.get("dataset")), passage_chars)
        found = [record_example(r, texts, rules) for r in chosen_records]
        examples += found
        ids = run.get("ids") or {}
        sources.append({"folder": folder.name, "dataset": run.get("dataset"), "method": chosen,
                        "questions": len(found), "derived": sum(e.derived for e in found),
                        "ids_file": Path(ids["file"]).name if ids.get("file") else None,
                        "ids_sha256": ids.get("sha256"), "commits": sorted({str(r.get("code")) for r in chosen_records})})
    return examples, {"runs": sources}


def log_loss(probs: Sequence[float], labels: Sequence[float]) -> float:
    """Mean negative log-likelihood (probabilities clipped away from 0 and 1)."""
    eps = 1e-6
    return -sum(y * math.log(max(eps, p)) + (1 - y) * math.log(max(eps, 1 - p))
                for p, y in zip(probs, labels)) / max(1, len(labels))


def choose_threshold(probs: Sequence[float], labels: Sequence[float], target: float = TARGET) -> tuple[float, str]:
    """The trusted mark's threshold and how it was chosen (see the module's docstring)."""
    n = len(labels)
    rows = [(t, selective(probs, labels, t)) for t in THRESHOLDS]
    precise = [(t, s) for t, s in rows if s["em"] is not None and s["em"] >= target and s["trusted"] >= MIN_SHARE * n]
    if precise:
        return min(t for t, _ in precise), f"the lowest whose trusted answers are right >= {target:.0%} (out of fold)"
    half = [(t, s) for t, s in rows if s["trusted"] >= n / 2 and s["em"] is not None]
    if not half:
        return THRESHOLDS[0], "no threshold covers half the questions: the lowest"
    best = max(half, key=lambda ts: (ts[1]["em"], -ts[0]))
    return best[0], f"none reaches {target:.0%}: the best EM among those covering at least half"


def judge(model: LogisticModel, examples: Sequence[Example]) -> dict[str, Any]:
    """AUROC, log loss and selective accuracy of a fitted model on examples, overall and by dataset."""
    def summary(group: Sequence[Example]) -> dict[str, Any]:
        probs = [model.probability(e.features) for e in group]
        labels = [e.em for e in group]
        area = auroc(probs, labels)
        return {"n": len(group), "em": round(sum(labels) / max(1, len(labels)), 4),
                "auroc": None if area is None else round(area, 4), "log_loss": round(log_loss(probs, labels), 4),
                **{f"trusted_{k}": v for k, v in selective(probs, labels, model.threshold).items() if k != "n"}}

    out = {"all": summary(examples)}
    for dataset in sorted({e.dataset for e in examples}):
        out[dataset] = summary([e for e in examples if e.dataset == dataset])
    return out


@dataclass(frozen=True)
class TrustFit:
    """A fitted trust model and what cross-validation (and the judged runs) said of it."""

    model: TrustModel
    report: dict[str, Any]


def fit_trust(examples: Sequence[Example], *, folds: int = 5, seed: int = 13, target: float = TARGET) -> TrustFit:
    """Fit the trust model on the examples: penalty by out-of-fold log loss, threshold on out-of-fold probabilities."""
    labels = [e.em for e in examples]
    if len(examples) < 2 * folds:
        raise BenchRunError(f"{len(examples)} train questions are too few to fit the trust score ({2 * folds} at least)",
                            hint="run more train questions (`reagent bench run ... --ids DATASET-train.txt`)")
    if len(set(labels)) < 2:
        raise BenchRunError("every train answer is right, or every one wrong: nothing to learn the trust score from",
                            hint="fit on more train questions")
    names = sorted(set.intersection(*(set(e.features) for e in examples)))
    rows = [e.features for e in examples]
    table = []
    for l2 in PENALTIES:
        probs = out_of_fold(len(examples), folds, seed,
                            lambda train, l2=l2: fit_logistic([rows[i] for i in train], [labels[i] for i in train],
                                                              names, l2=l2),
                            lambda model, i: model.probability(rows[i]))
        area = auroc(probs, labels)
        table.append({"l2": l2, "log_loss": round(log_loss(probs, labels), 4),
                      "auroc": None if area is None else round(area, 4), "probs": probs})
    best = min(table, key=lambda row: (row["log_loss"], -row["l2"]))
    threshold, rule = choose_threshold(best["probs"], labels, target)
    model = replace(fit_logistic(rows, labels, names, l2=best["l2"]), threshold=threshold)
    report = {
        "examples": len(examples), "derived": sum(e.derived for e in examples),
        "em": round(sum(labels) / len(labels), 4), "features": names,
        "cv": {"folds": folds, "seed": seed, "l2": best["l2"], "auroc": best["auroc"], "log_loss": best["log_loss"],
               "threshold": threshold, "threshold_rule": rule, "target": target,
               "trusted": selective(best["probs"], labels, threshold),
               "by_penalty": [{k: v for k, v in row.items() if k != "probs"} for row in table]},
    }
    return TrustFit(TrustModel(model), report)


def _judged(model: TrustModel, examples: Sequence[Example], which: str) -> dict[str, Any]:
    missing = sorted(set(model.model.features) - set.intersection(*(set(e.features) for e in examples)))
    if missing:
        raise BenchRunError(f"the judged records lack features {which} reads: {', '.join(missing)}",
                            hint="judge runs whose records carry the same features as the train runs'")
    return judge(model.model, examples)


def fit_folders(folders: Sequence[Path], *, judge_folders: Sequence[Path] = (), method: str | None = None,
                folds: int = 5, seed: int = 13, target: float = TARGET, command: str = "",
                against: tuple[str, TrustModel] | None = None) -> TrustFit:
    """Fit the trust model from train run folders, judge it on ``judge_folders``; its provenance names them all.

    ``against`` (a name and a model, such as the package's): judged on the same runs, to weigh the refit against it."""
    examples, sources = collect(folders, method)
    fit = fit_trust(examples, folds=folds, seed=seed, target=target)
    report = dict(fit.report)
    if judge_folders:
        judged, judged_sources = collect(judge_folders)
        report["judged"] = {"runs": judged_sources["runs"], **_judged(fit.model, judged, "the model")}
        if against is not None:
            report["against"] = {"name": against[0], **_judged(against[1], judged, against[0])}
    provenance = {**sources, "commit": code_version(), "command": command,
                  "question_files": [str(r["ids_file"]) for r in sources["runs"]], "fit": report}
    return TrustFit(replace(fit.model, provenance=provenance), report)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _judged_rows(judged: Mapping[str, Any]) -> list[str]:
    rows = [f"| {name} | {row['n']} | {row['em']:.3f} | {_num(row['auroc'])} | {row['trusted_trusted']} | "
            f"{_pct(row['trusted_coverage'])} | {_pct(row['trusted_em'])} | {row['log_loss']:.3f} |"
            for name, row in judged.items() if name not in ("runs", "name")]
    return [*rows, ""]


def render_fit(fit: TrustFit) -> str:
    """The fit as Markdown: the CV figures, the threshold, the judged runs, then the model's weights."""
    r, model = fit.report, fit.model.model
    cv = r["cv"]
    trusted = cv["trusted"]
    lines = ["# The trust score", "",
             f"{r['examples']} train questions ({r['derived']} from records older than the trust score, their "
             f"features worked out from the record's fields); {r['em']:.0%} right (EM).", "",
             f"{cv['folds']}-fold CV: penalty {cv['l2']}, AUROC {_num(cv['auroc'])}, log loss {cv['log_loss']:.3f}. "
             f"Threshold for trusted: {cv['threshold']:.2f} ({cv['threshold_rule']}); out of fold it trusts "
             f"{trusted['trusted']} of {trusted['n']} ({_pct(trusted['coverage'])}), right {_pct(trusted['em'])} "
             "(chosen on the same folds, so optimistic).", "",
             "| penalty | out-of-fold log loss | AUROC |", "|---|---|---|"]
    lines += [f"| {row['l2']} | {row['log_loss']:.3f} | {_num(row['auroc'])} |" for row in cv["by_penalty"]]
    lines.append("")
    if r.get("judged"):
        judged = r["judged"]
        runs = ", ".join(s["folder"] for s in judged["runs"])
        lines += [f"## Judged on {runs}", "",
                  "| set | questions | EM | AUROC | trusted | coverage | EM of trusted | log loss |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += _judged_rows(judged)
        if r.get("against"):
            lines += [f"Weighed against {r['against']['name']}, on the same answers:", "",
                      "| set | questions | EM | AUROC | trusted | coverage | EM of trusted | log loss |",
                      "|---|---|---|---|---|---|---|---|", *_judged_rows(r["against"])]
    lines += [f"## The model: bias {model.bias:+.3f}, threshold {model.threshold:.2f}", "",
              "| feature | weight (per standard deviation) | train mean |", "|---|---|---|"]
    order = sorted(zip(model.features, model.weights, model.mean), key=lambda fwm: -abs(fwm[1]))
    lines += [f"| {f} | {w:+.3f} | {m:.3f} |" for f, w, m in order]
    lines.append("")
    return "\n".join(lines)
