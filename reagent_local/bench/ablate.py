"""``reagent bench ablate``: what each rule, signal and setting adds, paired over every baseline question.

A baseline run folder holds one method's records (``reagent-both`` by default). For each
``--what`` the questions on which the ablated part acted in the baseline (``acted.py``) are
answered again with the part switched off, into ``OUT/<spec>/<baseline folder name>/`` (a
normal run folder: same dataset file, questions, seed, model, index and configuration but
for the ablation; resumable). Every other question is carried over from the baseline,
marked ``carried_over``, since a deterministic run gives it the identical record. The paired
comparison (baseline minus ablated: what the part adds) covers all baseline questions, per
baseline folder and pooled. ``check`` also reruns that many carried-over questions per
baseline (a seeded choice) into ``OUT/<spec>/<name>-check<N>/`` and reports any that differ.
The reruns must run on the baseline's machine (``provenance.check_one_machine``): carried-over
answers of one machine beside answers of another would measure the machines, not the part.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ..config import Config
from ..errors import BenchRunError
from ..version import code_version
from .ablate_plan import Part, Plan, Step, plan_ablations
from .ablate_spec import Ablation
from .ablate_view import markdown_summary
from .ablate_baseline import Baseline
from .methods import Retriever
from .paired import compare_records
from .provenance import check_one_machine, config_differences, origins
from .records import RECORDS_FILE, read_records
from .rundir import CONFIG_FILE, config_dict, write_json
from .stats import RESAMPLES, median

if TYPE_CHECKING:
    from .runner import AnswerAll

Record = dict[str, Any]
# what a carried-over question must have identical when it is answered again with the ablation
CHECKED_FIELDS = ("prediction", "llm_calls", "prompt_tokens", "completion_tokens", "signals", "rules_fired", "error")
REPORT, RESULTS, PAIRED = "ablation.md", "ablation.json", "paired.jsonl"


def verdict(stats: Record) -> str:
    """'pays' when the F1 interval of baseline minus ablated lies above 0, 'hurts' below 0, else 'not shown'."""
    low, high = stats.get("f1_interval") or (0.0, 0.0)
    return "pays" if low > 0 else "hurts" if high < 0 else "not shown"


def ablated_side(baseline: Sequence[Record], rerun: Sequence[Record]) -> list[Record]:
    """The ablated answers in the baseline's order: the rerun's where there is one, else the baseline's record
    marked ``carried_over``."""
    again = {str(r["id"]): r for r in rerun}
    return [again[str(r["id"])] if str(r["id"]) in again else {**r, "carried_over": True} for r in baseline]


def differences(baseline: Sequence[Record], again: Sequence[Record]) -> list[Record]:
    """The questions answered again whose ``CHECKED_FIELDS`` differ from the baseline's, with both values."""
    mine = {str(r["id"]): r for r in baseline}
    out = []
    for record in again:
        base = mine[str(record["id"])]
        fields = {f: [base.get(f), record.get(f)] for f in CHECKED_FIELDS if base.get(f) != record.get(f)}
        if fields:
            out.append({"id": str(record["id"]), "fields": fields})
    return out


def cost(records: Sequence[Record]) -> Record:
    """Calls and seconds a question (the standard median) and in total."""
    calls, seconds = [r["llm_calls"] for r in records], [r["seconds"] for r in records]
    return {"calls_median": median(calls), "seconds_median": median(seconds), "calls": sum(calls),
            "seconds": round(sum(seconds), 3),
            # questions whose seconds were measured on a shared machine (runtime/contention.py)
            "seconds_shared": sum(1 for r in records if (r.get("machine") or {}).get("shared"))}


def _refuse_existing(steps: Sequence[Step]) -> None:
    taken = [str(f) for step in steps for p in step.parts
             for f, ids in ((p.folder, p.affected), (p.check_folder, p.checked)) if ids and (f / CONFIG_FILE).exists()]
    if taken:
        raise BenchRunError(f"{len(taken)} ablation folder(s) already hold runs: {', '.join(taken[:3])}"
                            f"{', ...' if len(taken) > 3 else ''}", hint="pass --resume to continue them, or --out "
                            "with a new folder")


def _check_model(config: Config, baseline: Baseline) -> None:
    """Refuse a model whose file is not the baseline's (before any work)."""
    from .runner import load_model

    llm, identity = load_model(config)
    llm.close()
    want = baseline.run.get("model") or {}
    if want.get("sha256") and identity["sha256"] != want["sha256"] or want.get("id") != identity["id"]:
        raise BenchRunError(f"the baseline was answered by {want.get('id')} (sha256 {want.get('sha256')}), this "
                            f"configuration loads {identity['id']} (sha256 {identity['sha256']})",
                            hint="pull or point llm.model at the baseline's model file")


def _machine_here(config: Config, llm: Any) -> str:
    """The machine id the reruns will be answered on (the model's extra buffers decided without loading it)."""
    from ..runtime.identity import machine_identity
    from .runner import load_model

    if llm is not None:
        return str(machine_identity(llm)["machine_id"])
    model, _ = load_model(config)
    try:
        return str(machine_identity(model)["machine_id"])
    finally:
        model.close()


def _check_machine(plan: Plan, llm: Any, allow_mixed: bool) -> None:
    """Refuse reruns on another machine than the baselines' (before any work), unless mixing is allowed: then a label."""
    reruns = [s.config for s in plan.steps if any(p.affected or p.checked for p in s.parts)]
    if not reruns:
        return
    here = _machine_here(reruns[0], llm)
    baseline = origins([r for b in plan.baselines for r in b.records])
    label = check_one_machine({"baseline": baseline, "reruns": {"machines": {here: 1}}}, "this ablation",
                              allow_mixed=allow_mixed)
    if label:
        plan.labels.append(label)


def _answer(b: Baseline, ids: list[str], folder: Path, ablation: Ablation, config: Config, *, resume: bool,
            allow_mixed: bool, console: Any, llm: Any, retriever: Callable[[Path], Retriever] | None,
            answer_all: AnswerAll | None) -> list[Record]:
    """Answer ``ids`` of the baseline with the ablation into ``folder``; the records of those ids."""
    if not ids:
        return []
    from .runner import run_benchmark

    run_benchmark(b.dataset, b.data_file(), config=config, n=None, seed=b.run.get("seed", 13),
                  methods=[ablation.method], out=folder, resume=resume, llm=llm,
                  retriever=retriever(b.folder) if retriever else None, console=console, ids=ids,
                  index=None if retriever else b.prebuilt_index, allow_mixed=allow_mixed, answer_all=answer_all)
    wanted = set(ids)
    return [r for r in read_records(folder / RECORDS_FILE) if r["method"] == ablation.method and str(r["id"]) in wanted]


def _summary(base: Sequence[Record], ablated: Sequence[Record], resamples: int) -> Record:
    compared = compare_records(base, ablated, resamples=resamples)
    return {"questions": len(base), "stats": compared["all"], "by_dataset": compared["by_dataset"],
            "by_type": compared["by_type"], "cost": {"baseline": cost(base), "ablated": cost(ablated)},
            "verdict": verdict(compared["all"])}


def _row(part: Part, rerun: Sequence[Record], again: Sequence[Record], resamples: int) -> tuple[Record, list[Record]]:
    """One baseline's comparison row, and its ablated side (answered again, or carried over)."""
    base = part.baseline.records
    side = ablated_side(base, rerun)
    diffs = differences(base, again)
    check = {"ids": part.checked, "folder": str(part.check_folder) if part.checked else None,
             "identical": len(again) - len(diffs), "differ": diffs}
    row = {"label": part.baseline.label, "baseline": str(part.baseline.folder), "dataset": part.baseline.dataset,
           "rerun_folder": str(part.folder) if part.affected else None, "affected": part.affected,
           "reran": len(part.affected) + len(part.checked), "carried_over": len(part.carried), "check": check,
           **_summary(base, side, resamples)}
    return row, side


def _write_paired(path: Path, parts: Sequence[Part], sides: Sequence[list[Record]]) -> None:
    """Every question's baseline and ablated answer, one JSON line each, saying which were carried over."""
    lines = []
    for part, side in zip(parts, sides):
        for a, b in zip(part.baseline.records, side):
            row = {"dataset": a.get("dataset"), "id": a["id"], "carried_over": bool(b.get("carried_over")),
                   "checked": str(a["id"]) in part.checked, "baseline": _brief(a), "ablated": _brief(b)}
            lines.append(json.dumps(row, ensure_ascii=False) + "\n")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")


def _result(step: Step, plan: Plan, answered: dict[str, Any], resamples: int) -> Record:
    """One ablation's comparison: per baseline and pooled, with the carry-over check."""
    ablation, parts = step.ablation, step.parts
    rows, sides = zip(*(_row(p, *answered[p.baseline.label], resamples) for p in parts))
    checks = [row["check"] for row in rows if row["check"]["ids"]]
    exact = None if not checks else all(not c["differ"] for c in checks)
    labels = list(plan.labels) + (["NOT EXACT: carried-over questions answered again differ from the baseline"]
                                  if exact is False else [])
    folder = plan.out / ablation.spec.slug
    _write_paired(folder / PAIRED, parts, sides)
    pooled = _summary([r for p in parts for r in p.baseline.records], [r for side in sides for r in side], resamples)
    return {"spec": ablation.spec.text, "slug": ablation.spec.slug, "kind": ablation.spec.kind,
            "baseline_method": parts[0].baseline.method, "ablated_method": ablation.method,
            "overrides": ablation.overrides,
            "config_changes": config_differences(config_dict(plan.config), config_dict(step.config)),
            "acted_where": ablation.why, "reran_all": ablation.marks is None, "folder": str(folder),
            "commit": {"baseline": sorted({p.baseline.commit for p in parts}), "ablated": code_version()},
            "configuration": parts[0].baseline.config_id, "labels": labels, "exact": exact,
            "checked_fields": list(CHECKED_FIELDS), "datasets": list(rows),
            "pooled": {"affected": sum(len(r["affected"]) for r in rows), "reran": sum(r["reran"] for r in rows),
                       "carried_over": sum(r["carried_over"] for r in rows), **pooled}}


def _brief(record: Record) -> Record:
    return {k: record.get(k) for k in ("prediction", "em", "f1", "llm_calls", "prompt_tokens", "completion_tokens",
                                       "seconds")}


def run_ablations(folders: Sequence[Path], whats: Sequence[str], *, method: str = "reagent-both", check: int = 0,
                  out: Path | None = None, resume: bool = False, allow_mixed: bool = False,
                  answered_only: bool = False, resamples: int = RESAMPLES, console: Any = None,
                  say: Callable[[str], None] | None = None,
                  on_result: Callable[[Record], None] | None = None, llm: Any = None,
                  retriever: Callable[[Path], Retriever] | None = None,
                  answer_all: AnswerAll | None = None) -> list[Record]:
    """Ablate each ``whats`` spec against the baseline folders; one result per spec (``on_result`` as each ends).

    ``llm`` and ``retriever`` (a function of the baseline folder) replace the baseline's model
    and index in tests; by default each rerun loads the baseline's model and opens its index.
    ``answer_all`` answers the reruns of each baseline (``cluster.ray_answer_all``: in parallel).
    ``answered_only`` accepts baselines stopped before their last question (their answered questions).
    """
    if check < 0:
        raise BenchRunError(f"--check must be 0 or more, got {check}", hint="pass the number of questions to check")
    plan = plan_ablations(folders, whats, method=method, check=check, out=out, allow_mixed=allow_mixed,
                          answered_only=answered_only)
    if not resume:
        _refuse_existing(plan.steps)
    _check_machine(plan, llm, allow_mixed)
    if llm is None:
        needed = [s.config for s in plan.steps if any(p.affected or p.checked for p in s.parts)]
        for ablated in {c.llm: c for c in needed}.values():
            _check_model(ablated, plan.baselines[0])
    results = []
    for step in plan.steps:
        answered = {}
        for part in step.parts:
            if say is not None:
                say(f"{step.ablation.spec.text} on {part.baseline.label}: {len(part.affected)} of "
                    f"{len(part.baseline.records)} questions to answer again, {len(part.checked)} to check")
            options = dict(resume=resume, allow_mixed=allow_mixed, console=console, llm=llm, retriever=retriever,
                           answer_all=answer_all)
            answered[part.baseline.label] = (
                _answer(part.baseline, part.affected, part.folder, step.ablation, step.config, **options),
                _answer(part.baseline, part.checked, part.check_folder, step.ablation, step.config, **options))
        result = _result(step, plan, answered, resamples)
        results.append(result)
        if on_result is not None:
            on_result(result)
    plan.out.mkdir(parents=True, exist_ok=True)
    (plan.out / REPORT).write_text(markdown_summary(results), encoding="utf-8")
    write_json(plan.out / RESULTS, results)
    return results
