"""The baseline of an ablation (``bench ablate``): one method's complete records in a run folder, at one commit and configuration.

A run stopped before its last question is a baseline only when asked (``answered_only``): its
answered questions are then the baseline's questions, and the ablation says how many were drawn.

The configuration the baseline ran with is rebuilt from its ``config.json`` (this machine's
paths, which are not part of a configuration; the baseline's threads, which are), so an ablation
changes exactly one thing against it; the rebuilt configuration must hash to the baseline's
``config_id`` (or, for a baseline stamped before threads joined the id, to its legacy id).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..config import ADDED, BACKTRACKING, REMOVED, REMOVED_SIGNALS, Config, inert_removed, load_config
from ..errors import BenchRunError, ConfigError
from ..paths import file_sha256
from ..rules import REMOVED_RULES, RULES
from ..rules.registry import enabled_by, spec_items
from .provenance import check_single, comparable_config, config_id, describe, legacy_config_id, origins
from .records import RECORDS_FILE, check_unique, read_records
from .rundir import config_dict, folder_config_id, read_run_config

Record = dict[str, Any]


@dataclass
class Baseline:
    """One baseline run folder: the chosen method's records in question order, and what they ran with."""

    folder: Path
    run: dict[str, Any]  # config.json
    method: str
    records: list[Record]
    commit: str
    config_id: str
    resolved: dict[str, Any]  # the resolved configuration its records ran with
    drawn: int = 0  # the questions the run drew (more than len(records) when it stopped early)

    @property
    def stopped_early(self) -> str | None:
        """What an ablation on this baseline says of a run that stopped before its last question, or None."""
        if self.drawn <= len(self.records):
            return None
        return f"{self.label}: {len(self.records)} of the {self.drawn} drawn questions (the run stopped early)"

    @property
    def label(self) -> str:
        """The folder's name: where this baseline's reruns go under each ablation's folder."""
        return self.folder.name

    @property
    def dataset(self) -> str:
        """The dataset the baseline's questions come from."""
        return str(self.run["dataset"])

    @property
    def prebuilt_index(self) -> str | None:
        """The prebuilt index the baseline answered over (None: the file's own open-corpus index)."""
        prebuilt = self.run.get("prebuilt_index")
        return prebuilt.get("name") if isinstance(prebuilt, dict) else None

    def data_file(self) -> Path:
        """The baseline's dataset file, checked to hold what it held then."""
        path = Path(self.run["file"])
        if not path.is_file():
            raise BenchRunError(f"the dataset file of {self.folder} is gone: {path}",
                                hint="put the file back where the baseline read it")
        if self.run.get("file_sha256") and file_sha256(path) != self.run["file_sha256"]:
            raise BenchRunError(f"{path} changed since {self.folder} was run (its sha256 differs)",
                                hint="restore the file the baseline read, or run a new baseline")
        return path


def load_baseline(folder: Path, method: str, *, allow_mixed: bool = False, answered_only: bool = False) -> Baseline:
    """The records of ``method`` in ``folder``: every drawn question answered (or, with ``answered_only``, those
    answered, in draw order), one configuration, one commit (several only with ``allow_mixed``)."""
    folder = Path(folder)
    run = read_run_config(folder)
    records = read_records(folder / RECORDS_FILE)
    check_unique(records, folder / RECORDS_FILE)
    methods = list(dict.fromkeys(r["method"] for r in records))
    if method not in methods:
        raise BenchRunError(f"no records of {method!r} in {folder}",
                            hint=f"pass --method with one of: {', '.join(methods) or 'none (run the baseline first)'}")
    mine = {str(r["id"]): r for r in records if r["method"] == method}
    ids = [str(i) for i in run.get("question_ids") or mine]
    missing = [i for i in ids if i not in mine]
    if missing and not (answered_only and mine):
        raise BenchRunError(f"{folder} is not finished: {len(missing)} of {len(ids)} questions have no {method} "
                            f"record ({', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''})",
                            hint="finish it with the same `reagent bench run ... --resume` first, or pass "
                                 "--answered-only to ablate the questions it answered")
    chosen = [mine[i] for i in ids if i in mine]
    origin = origins(chosen, folder_config_id(run))
    if len(origin["configs"]) > 1:
        raise BenchRunError(f"{method} in {folder} mixes records of {describe(origin)}",
                            hint="an ablation changes one thing against one configuration: rerun the baseline "
                                 "in one configuration")
    check_single(origin, f"{method} in {folder}", allow_mixed=allow_mixed)
    (cid,) = origin["configs"]
    resolved = _resolved(run, cid, folder)
    return Baseline(folder, run, method, chosen, next(iter(origin["commits"])), cid, resolved, drawn=len(ids))


def _resolved(run: Mapping[str, Any], cid: str, folder: Path) -> dict[str, Any]:
    configs = dict(run.get("configs") or {})
    if run.get("config"):
        configs.setdefault(folder_config_id(run), run["config"])
    if cid not in configs:
        raise BenchRunError(f"{folder}/config.json does not hold configuration {cid} of its records",
                            hint="the folder was edited: restore its config.json")
    return dict(configs[cid])


def load_baselines(folders: Sequence[Path], method: str, *, allow_mixed: bool = False,
                   answered_only: bool = False) -> list[Baseline]:
    """Several baselines (one per dataset, say) that make one table: one configuration, one commit."""
    baselines = [load_baseline(f, method, allow_mixed=allow_mixed, answered_only=answered_only) for f in folders]
    labels = [b.label for b in baselines]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise BenchRunError(f"two baselines are named {', '.join(twice)}: their reruns would share a folder",
                            hint="pass each baseline once, from folders with distinct names")
    configs = {b.config_id for b in baselines}
    if len(configs) > 1:
        raise BenchRunError(f"the baselines ran in {len(configs)} configurations ({', '.join(sorted(configs))})",
                            hint="one table is one configuration: run every baseline with the same settings")
    commits = {b.commit for b in baselines}
    if len(commits) > 1 and not allow_mixed:
        raise BenchRunError(f"the baselines come from {len(commits)} commits ({', '.join(sorted(commits))})",
                            hint="one table is one commit: run every baseline at one commit, or pass --allow-mixed "
                                 "(the comparison is then labelled)")
    return baselines


def _sections(resolved: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {s: dict(v) for s, v in comparable_config(resolved).items() if isinstance(v, Mapping)}


def rebuild_config(resolved: Mapping[str, Any], overrides: Mapping[str, Any] | None = None) -> Config:
    """The configuration a baseline ran with, with ``overrides`` ({"pipeline.two_roads": "false"}) applied.

    Paths are this machine's (``provenance.IGNORED``), threads the baseline's; a removed setting at the value that
    behaves as today's code (``config.inert_removed``) is left out, at another value it is refused (the code can
    no longer answer as the baseline did); removed signals the baseline silenced (``config.REMOVED_SIGNALS``) are
    left out too, and a baseline that ran with one live is refused; so are removed rules (``rules.REMOVED_RULES``):
    switched off they are dropped, a baseline that ran one is refused. Another setting the code no longer has, or an
    override it cannot take, is a BenchRunError naming it.
    """
    live = removed_signals_live(resolved)
    if live:
        why = "; ".join(dict.fromkeys(REMOVED_SIGNALS[name] for name in live))
        raise BenchRunError(f"the baseline ran with {', '.join(live)} on: {why}",
                            hint="this code cannot give the answers it ablates against: run the baseline at this commit")
    ran = removed_rules_live(resolved)
    if ran:
        why = "; ".join(dict.fromkeys(REMOVED_RULES[name] for name in ran))
        raise BenchRunError(f"the baseline ran with the rule(s) {', '.join(ran)} on: {why}",
                            hint="this code cannot give the answers it ablates against: run the baseline at this commit")
    flat = {f"{section}.{name}": value for section, values in _sections(resolved).items()
            for name, value in values.items() if not inert_removed(f"{section}.{name}", value)}
    for dotted, value in flat.items():
        section, _, name = dotted.partition(".")
        if (section, name) in REMOVED:
            inert, why = REMOVED[section, name]
            raise BenchRunError(f"the baseline ran with {dotted} = {value!r}, which this code cannot run: {dotted} is "
                                f"no longer a setting, and only {dotted} = {inert!r} answers as the code does now",
                                hint=f"{why}; ablate against a baseline run at this commit")
    for (section, name), before in ADDED.items():  # written before the setting existed: as the code then ran
        if section in _sections(resolved):
            flat.setdefault(f"{section}.{name}", before)
    flat.update(overrides or {})
    try:
        config = load_config({k: v for k, v in flat.items() if v is not None})
    except ConfigError as exc:
        raise BenchRunError(f"the baseline's configuration does not load here: {exc.message}",
                            hint=exc.hint or "run the baseline at this commit") from None
    for dotted in (k for k, v in flat.items() if v is None):  # load_config skips None values
        section, _, name = dotted.partition(".")
        config = dataclasses.replace(config, **{section: dataclasses.replace(getattr(config, section), **{name: None})})
    return config


# The removed signals by when they went: the kind of backtracking that raised them, and the settings every
# configuration with ``signals_off`` written while they existed holds (removed with them or after). The
# escalations (global) went after the router and with max_replans; check-failed (local) with read_trusted_chains.
REMOVED_SIGNAL_ERAS: tuple[tuple[tuple[str, ...], str, frozenset[str]], ...] = (
    (("value-conflict", "broken-bridge", "unfounded-step"), "global", frozenset({"router", "max_replans"})),
    (("check-failed",), "local", frozenset({"router", "max_replans", "read_trusted_chains"})),
)


def removed_signals_live(resolved: Mapping[str, Any]) -> list[str]:
    """The removed signals (``config.REMOVED_SIGNALS``) a baseline's configuration ran with on.

    A signal ran only with its kind of backtracking. Today's code never writes the removed names, so a
    ``signals_off`` that names one of a group was written before the group went, and any of it that it does not
    name was on. A configuration with no ``signals_off`` predates the switch: all were on. One that names none of a
    group is from after the group went, unless it still holds a setting removed with the group or after it: then it
    was written while they existed, and ran them.
    """
    pipeline = dict(resolved.get("pipeline") or {})
    kinds = dict(zip(("local", "global"), BACKTRACKING.get(pipeline.get("backtracking", "both"), (True, True))))
    silenced = set(pipeline.get("signals_off") or ())
    live: list[str] = []
    for names, kind, older in REMOVED_SIGNAL_ERAS:
        if not kinds[kind]:
            continue
        if "signals_off" in pipeline and not silenced & set(names) and not older & pipeline.keys():
            continue
        live += [name for name in names if name not in silenced]
    return live


def _written_before_removals(resolved: Mapping[str, Any]) -> bool:
    """Whether a configuration was written before 2026-12-07's removals (check-failed, read_trusted_chains, then the
    8 rules): it holds a setting removed by then (``config.REMOVED``), names a removed signal in ``signals_off``, or
    predates ``signals_off``. Every configuration written since holds none of these and ``signals_off = []``."""
    pipeline = dict(resolved.get("pipeline") or {})
    removed_setting = any((section, name) in REMOVED for section, values in resolved.items()
                          if isinstance(values, Mapping) for name in values)
    if removed_setting or "signals_off" not in pipeline:
        return True
    return bool(set(pipeline["signals_off"] or ()) & set(REMOVED_SIGNALS))


def removed_rules_live(resolved: Mapping[str, Any]) -> list[str]:
    """The removed rules (``rules.REMOVED_RULES``) a baseline's configuration ran with on.

    Its ``pipeline.rules`` is read as the code that wrote it read it: a removed rule named on (or not taken out
    again) ran, one switched off did not. ``all`` (or an empty spec) took them in while they existed: a
    configuration written before the removals (``_written_before_removals``) ran them under it, one written since is
    today's ``all``. One without ``pipeline.rules`` predates the switch: every rule ran. A configuration written
    between check-failed's removal and the rules' (the same day) cannot be told from a later one and is read as
    today's (those in docs/results ran the default rules, which name none of them).
    """
    pipeline = dict(resolved.get("pipeline") or {})
    if "rules" not in pipeline:
        return list(REMOVED_RULES)
    every = [*RULES, *REMOVED_RULES] if _written_before_removals(resolved) else list(RULES)
    enabled = enabled_by(spec_items(pipeline["rules"] or ()), every)
    return [name for name in REMOVED_RULES if name in enabled]


def rebuilt_id(config: Config) -> str:
    """The configuration id of a rebuilt configuration (to check it against the baseline's)."""
    return config_id(config_dict(config))


def same_configuration(config: Config, baseline_id: str) -> bool:
    """Whether a rebuilt configuration is the baseline's: its id, or its legacy id (stamped without threads)."""
    resolved = config_dict(config)
    return baseline_id in (config_id(resolved), legacy_config_id(resolved))
