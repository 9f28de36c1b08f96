"""Which commit, configuration and machine produced each record, and the rule: one of each per table.

A record carries ``code`` (the package version and git commit, ``-dirty`` with uncommitted
changes), ``config_id``: a short hash of the run's resolved configuration without the settings
that only say where files live or where the model runs (``paths.*``, ``llm.use_server``), and
``machine_id``: a short hash of what on the machine can change an answer (CPU model and flags,
llama.cpp's build, extra buffers: ``runtime/identity.py``).

Threads are part of the configuration: a run's ``config.json`` holds ``llm.n_threads`` resolved
(unset becomes the cores this process may use), so a 1-thread and a 2-thread run have two ids.
Ids written before that (records stamped without threads) are "legacy" ids: ``legacy_config_id``
computes them, for records that predate ``config_id`` and take their folder's configuration, and
to recognise a legacy baseline's configuration in ``bench ablate``.

A table (``bench report``, ``bench tables``, one side of ``bench compare``, an ablation's
baseline) refuses records of several commits, configurations or machines unless mixing is
allowed, and then names the mix; ``bench compare`` and ``bench ablate`` also refuse to pair two
sides of different machines. Records written before ``machine_id`` read as machine "unknown":
all-unknown records count as one machine (the old folders in docs/results read as before), while
unknown records beside known ones are a mix (nothing says they ran on that machine).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from ..errors import BenchRunError

# where files live, where the model runs: never what an answer is
IGNORED = ("paths", "llm.use_server")
# what ids written before threads joined the configuration left out as well
LEGACY_IGNORED = (*IGNORED, "llm.n_threads")
UNKNOWN = "unknown"


def resolve_threads(resolved: Mapping[str, Any], threads: int) -> dict[str, Any]:
    """A resolved configuration (``config.json``'s ``config``) with an unset ``llm.n_threads`` set to ``threads``."""
    out = dict(resolved)
    llm = dict(out.get("llm") or {})
    if llm.get("n_threads") is None:
        llm["n_threads"] = threads
    out["llm"] = llm
    return out


def comparable_config(config: Mapping[str, Any], ignored: Sequence[str] = IGNORED) -> dict[str, Any]:
    """The configuration without the settings in ``ignored`` (``IGNORED``)."""
    out = {section: dict(values) if isinstance(values, Mapping) else values for section, values in config.items()}
    for dotted in ignored:
        section, _, name = dotted.partition(".")
        if not name:
            out.pop(section, None)
        elif isinstance(out.get(section), dict):
            out[section].pop(name, None)
    return out


def _hash(config: Mapping[str, Any] | None, ignored: Sequence[str]) -> str:
    if not config:
        return UNKNOWN
    text = json.dumps(comparable_config(config, ignored), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def config_id(config: Mapping[str, Any] | None) -> str:
    """A 12-hex-digit hash of a resolved configuration (``config.json``'s ``config``, threads included); "unknown" for None."""
    return _hash(config, IGNORED)


def legacy_config_id(config: Mapping[str, Any] | None) -> str:
    """The id records were stamped with before threads joined the configuration (``llm.n_threads`` left out)."""
    return _hash(config, LEGACY_IGNORED)


def record_origin(record: Mapping[str, Any], folder_config: str = UNKNOWN) -> tuple[str, str]:
    """(commit, configuration id) of one record; a record without ``config_id`` takes its folder's."""
    return str(record.get("code") or UNKNOWN), str(record.get("config_id") or folder_config)


def record_machine(record: Mapping[str, Any]) -> str:
    """The machine id of one record; "unknown" for a record written before records named their machine."""
    return str(record.get("machine_id") or UNKNOWN)


def origins(records: Iterable[Mapping[str, Any]], folder_config: str = UNKNOWN) -> dict[str, Any]:
    """How many records each commit, each configuration and each machine produced, most first."""
    records = list(records)
    pairs = [record_origin(r, folder_config) for r in records]
    commits = Counter(code for code, _ in pairs)
    configs = Counter(cid for _, cid in pairs)
    machines = Counter(record_machine(r) for r in records)
    return {"commits": dict(commits.most_common()), "configs": dict(configs.most_common()),
            "machines": dict(machines.most_common()),
            "mixed": len(commits) > 1 or len(configs) > 1 or len(machines) > 1}


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} ({count} record{'s' if count != 1 else ''})" for name, count in counts.items())


def known_machines(origin: Mapping[str, Any]) -> bool:
    """Whether any record names its machine (folders written before machine ids did not)."""
    return any(name != UNKNOWN for name in origin.get("machines") or {})


def describe(origin: Mapping[str, Any]) -> str:
    """'commit X (30 records), Y (20); configuration Z (50); machine M (50)': what the records came from.

    The machine part is left out when no record names its machine (an old folder reads as it did).
    """
    noun = "commits" if len(origin["commits"]) > 1 else "commit"
    config_noun = "configurations" if len(origin["configs"]) > 1 else "configuration"
    text = f"{noun} {_counts(origin['commits'])}; {config_noun} {_counts(origin['configs'])}"
    machines = origin.get("machines") or {}
    if known_machines(origin):
        text += f"; {'machines' if len(machines) > 1 else 'machine'} {_counts(machines)}"
    return text


MIXED_HINT = ("one table is one commit, one configuration and one machine: rerun those questions at one commit "
              "on one machine, or pass --allow-mixed to show the mix (it is then labelled)")


def check_single(origin: Mapping[str, Any], what: str, *, allow_mixed: bool) -> None:
    """Refuse records of several commits, configurations or machines in one table, unless allowed."""
    if origin["mixed"] and not allow_mixed:
        raise BenchRunError(f"{what} mixes records of {describe(origin)}", hint=MIXED_HINT)


def mix_line(origin: Mapping[str, Any]) -> str | None:
    """The label a mixed table carries; None for a table of one commit, one configuration and one machine."""
    return f"**Mixed**: these records come from {describe(origin)}." if origin["mixed"] else None


def side_machines(origins_by_side: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """The machines each side's records ran on ({"A": [...], "B": [...]})."""
    return {side: list(origin.get("machines") or {UNKNOWN: 0}) for side, origin in origins_by_side.items()}


def check_one_machine(origins_by_side: Mapping[str, Mapping[str, Any]], what: str, *, allow_mixed: bool) -> str | None:
    """Refuse to pair sides whose records ran on different machines, unless allowed; then the label saying so.

    All-unknown sides (records older than machine ids) count as one machine.
    """
    machines = side_machines(origins_by_side)
    if len({name for names in machines.values() for name in names}) <= 1:
        return None
    sides = "; ".join(f"{side} on {', '.join(names)}" for side, names in machines.items())
    if not allow_mixed:
        raise BenchRunError(f"{what} would pair records of different machines ({sides})",
                            hint="answers differ between machines by more than small effects: run both sides on "
                                 "one machine, or pass --allow-mixed to pair them anyway (the result is then "
                                 "labelled)")
    return f"**Mixed machines**: {sides}; a difference here includes the difference between machines."


def config_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """'pipeline.two_roads: True -> False' for every comparable setting that differs between two configurations."""
    flat_a, flat_b = _flatten(comparable_config(a)), _flatten(comparable_config(b))
    return [f"{key}: {flat_a.get(key)!r} -> {flat_b.get(key)!r}"
            for key in sorted(set(flat_a) | set(flat_b)) if flat_a.get(key) != flat_b.get(key)]


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, Mapping) and value:
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out
