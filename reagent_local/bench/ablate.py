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
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..config import Config
from ..errors import BenchRunError
from ..version import code_version
from .ablate_view import markdown_summary
from .ablate_spec import Ablation, parse_spec, resolve_spec
from .acted import acted, traces
from .baseline import Baseline, load_baselines, rebuild_config, rebuilt_id
from .methods import Retriever
from .paired import compare_records
from .provenance import config_differences
from .records import RECORDS_FILE, read_records
from .rundir import CONFIG_FILE, config_dict, write_json
from .stats import RESAMPLES, median

Record = dict[str, Any]
CHECK_SEED = 0  # which carried-over questions --check reruns: random.Random(0).sample(carried, N)
# what a carried-over question must have identical when it is answered again with the ablation
CHECKED_FIELDS = ("prediction", "llm_calls", "prompt_tokens", "completion_tokens", "signals", "rules_fired", "error")
REPORT, RESULTS, PAIRED = "ablation.md", "ablation.json", "paired.jsonl"


@dataclass
class Part:
    """One ablation on one baseline: the questions it reruns, carries over and checks, and where."""

    baseline: Baseline
    affected: list[str]
    carried: list[str]
    checked: list[str]
    folder: Path
    check_folder: Path


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
            "seconds": round(sum(seconds), 3)}


def _commit_hash(code: str) -> str:
    return code.partition("+g")[2].removesuffix("-dirty") or code


def _check_commit(baselines: Sequence[Baseline], allow_mixed: bool) -> list[str]:
    """Refuse a baseline of another commit than this code's, unless mixing is allowed (then a label)."""
    now = code_version()
    others = sorted({b.commit for b in baselines if b.commit != now})
    if not others:
        return []
    if not allow_mixed:
        raise BenchRunError(f"the baseline is commit {', '.join(others)} but this code is {now}: the comparison "
                            f"would mix commits", hint=f"run it at the baseline's commit (`git checkout "
                            f"{_commit_hash(others[0])}`), or pass --allow-mixed (the comparison is then labelled)")
    return [f"mixed commits: baseline {', '.join(sorted({b.commit for b in baselines}))}, ablated runs {now}"]


def _configs(baseline: Baseline, ablation_overrides: dict[str, str], text: str) -> Config:
    try:
        return rebuild_config(baseline.resolved, ablation_overrides)
    except BenchRunError as exc:
        raise BenchRunError(f"--what {text!r}: {exc.message}", hint=exc.hint) from None


def plan(folders: Sequence[Path], whats: Sequence[str], *, method: str, check: int, out: Path | None,
         allow_mixed: bool) -> tuple[list[Baseline], Config, list[tuple[Ablation, Config, list[Part]]], list[str], Path]:
    """Everything decided before any question is answered: baselines, configurations, the questions per part."""
    specs = [parse_spec(w) for w in whats]
    if not specs:
        raise BenchRunError("nothing to ablate", hint="pass --what rule:NAME, setting:SECTION.FIELD=VALUE or method:NAME")
    slugs = [s.slug for s in specs]
    if len(set(slugs)) < len(slugs):
        raise BenchRunError(f"an ablation is asked twice ({', '.join(sorted({s for s in slugs if slugs.count(s) > 1}))})",
                            hint="pass each --what once")
    baselines = load_baselines(folders, method, allow_mixed=allow_mixed)
    labels = _check_commit(baselines, allow_mixed)
    config = rebuild_config(baselines[0].resolved)
    if rebuilt_id(config) != baselines[0].config_id:
        changes = config_differences(baselines[0].resolved, config_dict(config))
        if not labels:
            raise BenchRunError(f"the baseline's configuration comes out different here ({'; '.join(changes)})",
                                hint="unset the REAGENT_* variables or reagent.toml settings that differ")
        labels.append(f"the baseline's configuration rebuilt at this commit differs: {'; '.join(changes)}")
    out = Path(out) if out is not None else baselines[0].folder.parent / "ablations"
    needs_log = []
    resolved = []
    for spec in specs:
        ablated = _configs(baselines[0], {spec.name: spec.value or ""}, spec.text) if spec.kind == "setting" else config
        ablation = resolve_spec(spec, method, config, ablated)
        resolved.append((ablation, ablated))
        needs_log.append(ablation.marks is not None and ablation.marks.needs_log)
    found = {b.label: traces(b.folder, b.records, read_log=any(needs_log)) for b in baselines}
    planned = []
    for ablation, ablated in resolved:
        parts = []
        for b in baselines:
            ids = [str(r["id"]) for r in b.records]
            hit = [i for i in ids if ablation.marks is None or acted(ablation.marks, found[b.label][i])]
            carried = [i for i in ids if i not in set(hit)]
            chosen = set(random.Random(CHECK_SEED).sample(carried, min(check, len(carried))))
            parts.append(Part(b, hit, carried, [i for i in carried if i in chosen], out / ablation.spec.slug / b.label,
                              out / ablation.spec.slug / f"{b.label}-check{check}"))
        planned.append((ablation, ablated, parts))
    return baselines, config, planned, labels, out


def _refuse_existing(planned: Sequence[tuple[Ablation, Config, list[Part]]]) -> None:
    taken = [str(f) for _, _, parts in planned for p in parts
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


def _answer(b: Baseline, ids: list[str], folder: Path, ablation: Ablation, config: Config, *, resume: bool,
            allow_mixed: bool, console: Any, llm: Any, retriever: Callable[[Path], Retriever] | None) -> list[Record]:
    """Answer ``ids`` of the baseline with the ablation into ``folder``; the records of those ids."""
    if not ids:
        return []
    from .runner import run_benchmark

    run_benchmark(b.dataset, b.data_file(), config=config, n=None, seed=b.run.get("seed", 13),
                  methods=[ablation.method], out=folder, resume=resume, llm=llm,
                  retriever=retriever(b.folder) if retriever else None, console=console, ids=ids,
                  index=None if retriever else b.prebuilt_index, allow_mixed=allow_mixed)
    wanted = set(ids)
    return [r for r in read_records(folder / RECORDS_FILE) if r["method"] == ablation.method and str(r["id"]) in wanted]


def _summary(base: Sequence[Record], ablated: Sequence[Record], resamples: int) -> Record:
    compared = compare_records(base, ablated, resamples=resamples)
    return {"questions": len(base), "stats": compared["all"], "by_dataset": compared["by_dataset"],
            "by_type": compared["by_type"], "cost": {"baseline": cost(base), "ablated": cost(ablated)},
            "verdict": verdict(compared["all"])}


def _result(ablation: Ablation, config: Config, ablated: Config, parts: Sequence[Part], answered: dict[str, Any],
            labels: list[str], out: Path, resamples: int) -> Record:
    """One ablation's comparison: per baseline and pooled, with the carry-over check."""
    rows, base_all, ablated_all, paired = [], [], [], []
    for part in parts:
        rerun, again = answered[part.baseline.label]
        base = part.baseline.records
        side = ablated_side(base, rerun)
        diffs = differences(base, again)
        checked = {"ids": part.checked, "folder": str(part.check_folder) if part.checked else None,
                   "identical": len(again) - len(diffs), "differ": diffs}
        rows.append({"label": part.baseline.label, "baseline": str(part.baseline.folder), "dataset": part.baseline.dataset,
                     "rerun_folder": str(part.folder) if part.affected else None, "affected": part.affected,
                     "reran": len(part.affected) + len(part.checked), "carried_over": len(part.carried),
                     "check": checked, **_summary(base, side, resamples)})
        base_all += base
        ablated_all += side
        paired += [{"dataset": a.get("dataset"), "id": a["id"], "carried_over": bool(b.get("carried_over")),
                    "checked": str(a["id"]) in set(part.checked), "baseline": _brief(a), "ablated": _brief(b)}
                   for a, b in zip(base, side)]
    checks = [d for row in rows for d in [row["check"]] if d["ids"]]
    exact = None if not checks else all(not d["differ"] for d in checks)
    spec_labels = list(labels) + (["NOT EXACT: carried-over questions answered again differ from the baseline"]
                                  if exact is False else [])
    folder = out / ablation.spec.slug
    folder.mkdir(parents=True, exist_ok=True)
    (folder / PAIRED).write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in paired), encoding="utf-8")
    return {"spec": ablation.spec.text, "slug": ablation.spec.slug, "kind": ablation.spec.kind,
            "baseline_method": parts[0].baseline.method, "ablated_method": ablation.method,
            "overrides": ablation.overrides, "config_changes": config_differences(config_dict(config), config_dict(ablated)),
            "acted_where": ablation.why, "reran_all": ablation.marks is None, "folder": str(folder),
            "commit": {"baseline": sorted({p.baseline.commit for p in parts}), "ablated": code_version()},
            "configuration": parts[0].baseline.config_id, "labels": spec_labels, "exact": exact,
            "checked_fields": list(CHECKED_FIELDS),
            "datasets": rows, "pooled": {"affected": sum(len(r["affected"]) for r in rows),
                                         "reran": sum(r["reran"] for r in rows),
                                         "carried_over": sum(r["carried_over"] for r in rows),
                                         **_summary(base_all, ablated_all, resamples)}}


def _brief(record: Record) -> Record:
    return {k: record.get(k) for k in ("prediction", "em", "f1", "llm_calls", "prompt_tokens", "completion_tokens",
                                       "seconds")}


def run_ablations(folders: Sequence[Path], whats: Sequence[str], *, method: str = "reagent-both", check: int = 0,
                  out: Path | None = None, resume: bool = False, allow_mixed: bool = False,
                  resamples: int = RESAMPLES, console: Any = None, say: Callable[[str], None] | None = None,
                  on_result: Callable[[Record], None] | None = None, llm: Any = None,
                  retriever: Callable[[Path], Retriever] | None = None) -> list[Record]:
    """Ablate each ``whats`` spec against the baseline folders; one result per spec (``on_result`` as each ends).

    ``llm`` and ``retriever`` (a function of the baseline folder) replace the baseline's model
    and index in tests; by default each rerun loads the baseline's model and opens its index.
    """
    if check < 0:
        raise BenchRunError(f"--check must be 0 or more, got {check}", hint="pass the number of questions to check")
    baselines, config, planned, labels, out = plan(folders, whats, method=method, check=check, out=out,
                                                   allow_mixed=allow_mixed)
    if not resume:
        _refuse_existing(planned)
    if llm is None:
        for ablated in {a.llm: a for _, a, parts in planned if any(p.affected or p.checked for p in parts)}.values():
            _check_model(ablated, baselines[0])
    results = []
    for ablation, ablated, parts in planned:
        answered = {}
        for part in parts:
            if say is not None:
                say(f"{ablation.spec.text} on {part.baseline.label}: {len(part.affected)} of "
                    f"{len(part.baseline.records)} questions to answer again, {len(part.checked)} to check")
            options = dict(resume=resume, allow_mixed=allow_mixed, console=console, llm=llm, retriever=retriever)
            answered[part.baseline.label] = (
                _answer(part.baseline, part.affected, part.folder, ablation, ablated, **options),
                _answer(part.baseline, part.checked, part.check_folder, ablation, ablated, **options))
        result = _result(ablation, config, ablated, parts, answered, labels, out, resamples)
        results.append(result)
        if on_result is not None:
            on_result(result)
    out.mkdir(parents=True, exist_ok=True)
    (out / REPORT).write_text(markdown_summary(results), encoding="utf-8")
    write_json(out / RESULTS, results)
    return results
