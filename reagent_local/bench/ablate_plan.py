"""What ``bench ablate`` decides before any question is answered: baselines, configurations, questions per part.

For each ablation and each baseline folder: the questions where the ablated part acted
(``acted.py``: answered again), the others (carried over), and a seeded few of those that
``--check N`` answers again as well.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..config import Config
from ..errors import BenchRunError
from ..version import code_version
from .ablate_spec import EACH, Ablation, Spec, parse_spec, resolve_spec, rules_used
from .acted import Trace, acted, traces
from .ablate_baseline import Baseline, load_baselines, rebuild_config, same_configuration
from .provenance import config_differences
from .rundir import config_dict

CHECK_SEED = 0  # which carried-over questions --check answers again: random.Random(0).sample(carried, N)


@dataclass
class Part:
    """One ablation on one baseline: the questions it reruns, carries over and checks, and where."""

    baseline: Baseline
    affected: list[str]
    carried: list[str]
    checked: list[str]
    folder: Path
    check_folder: Path


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


@dataclass
class Step:
    """One ablation: the spec resolved against the baselines, the configuration its reruns use, and its parts."""

    ablation: Ablation
    config: Config
    parts: list[Part]


@dataclass
class Plan:
    """Everything decided before any question is answered."""

    baselines: list[Baseline]
    config: Config  # the baselines' configuration, rebuilt here
    steps: list[Step]
    labels: list[str]  # what every comparison says about itself (a mix of commits)
    out: Path


def _specs(whats: Sequence[str], method: str, config: Config) -> list[Spec]:
    """The specs asked for, ``rule:each`` as one per rule the baseline used; the same one twice is refused."""
    specs = []
    for spec in (parse_spec(w) for w in whats):
        specs += rules_used(method, config) if spec.kind == "rule" and spec.name == EACH else [spec]
    if not specs:
        raise BenchRunError("nothing to ablate", hint="pass --what rule:NAME, setting:SECTION.FIELD=VALUE or method:NAME")
    slugs = [s.slug for s in specs]
    if len(set(slugs)) < len(slugs):
        raise BenchRunError(f"an ablation is asked twice ({', '.join(sorted({s for s in slugs if slugs.count(s) > 1}))})",
                            hint="pass each --what once")
    return specs


def _parts(ablation: Ablation, baselines: Sequence[Baseline], found: dict[str, dict[str, Trace]], check: int,
           out: Path) -> list[Part]:
    """Per baseline: the questions where the part acted, those carried over, and a seeded few of those to check."""
    parts = []
    for b in baselines:
        ids = [str(r["id"]) for r in b.records]
        hit = [i for i in ids if ablation.marks is None or acted(ablation.marks, found[b.label][i])]
        carried = [i for i in ids if i not in set(hit)]
        chosen = set(random.Random(CHECK_SEED).sample(carried, min(check, len(carried))))
        parts.append(Part(b, hit, carried, [i for i in carried if i in chosen], out / ablation.spec.slug / b.label,
                          out / ablation.spec.slug / f"{b.label}-check{check}"))
    return parts


def plan_ablations(folders: Sequence[Path], whats: Sequence[str], *, method: str, check: int, out: Path | None,
                   allow_mixed: bool, answered_only: bool = False) -> Plan:
    """The baselines, their configuration, and per ablation the questions each baseline answers again."""
    baselines = load_baselines(folders, method, allow_mixed=allow_mixed, answered_only=answered_only)
    labels = _check_commit(baselines, allow_mixed)
    labels += [stopped for b in baselines if (stopped := b.stopped_early)]
    config = rebuild_config(baselines[0].resolved)
    if not same_configuration(config, baselines[0].config_id):
        changes = config_differences(baselines[0].resolved, config_dict(config))
        if not labels:
            raise BenchRunError(f"the baseline's configuration comes out different here ({'; '.join(changes)})",
                                hint="unset the REAGENT_* variables or reagent.toml settings that differ")
        labels.append(f"the baseline's configuration rebuilt at this commit differs: {'; '.join(changes)}")
    out = Path(out) if out is not None else baselines[0].folder.parent / "ablations"
    resolved = []
    for spec in _specs(whats, method, config):
        if spec.kind == "setting":
            ablated = _configs(baselines[0], {spec.name: spec.value or ""}, spec.text)
        else:
            ablated = config
        resolved.append((resolve_spec(spec, method, config, ablated), ablated))
    read_log = any(a.marks is not None and a.marks.needs_log for a, _ in resolved)
    found = {b.label: traces(b.folder, b.records, read_log=read_log) for b in baselines}
    steps = [Step(ablation, ablated, _parts(ablation, baselines, found, check, out)) for ablation, ablated in resolved]
    return Plan(baselines, config, steps, labels, out)
