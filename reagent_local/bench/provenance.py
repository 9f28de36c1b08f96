"""Which commit and which configuration produced each record, and the rule: one of each per table.

A record carries ``code`` (the package version and git commit, ``-dirty`` with uncommitted
changes) and ``config_id``: a short hash of the run's resolved configuration without the
settings that only say where files live, how many cores a machine has or where the model runs
(``paths.*``, ``llm.n_threads``, ``llm.use_server``). Records written before ``config_id`` existed take their folder's
configuration (``config.json``). A table (``bench report``, ``bench tables``, one side of
``bench compare``) refuses records from several commits or configurations unless mixing is
allowed, and then names the mix.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any, Iterable, Mapping

from ..errors import BenchRunError

# where files live, how many cores, where the model runs: never what an answer is
IGNORED = ("paths", "llm.n_threads", "llm.use_server")
UNKNOWN = "unknown"


def comparable_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The configuration without the settings in ``IGNORED``."""
    out = {section: dict(values) if isinstance(values, Mapping) else values for section, values in config.items()}
    for dotted in IGNORED:
        section, _, name = dotted.partition(".")
        if not name:
            out.pop(section, None)
        elif isinstance(out.get(section), dict):
            out[section].pop(name, None)
    return out


def config_id(config: Mapping[str, Any] | None) -> str:
    """A 12-hex-digit hash of a resolved configuration (``config.json``'s ``config``); "unknown" for None."""
    if not config:
        return UNKNOWN
    text = json.dumps(comparable_config(config), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def record_origin(record: Mapping[str, Any], folder_config: str = UNKNOWN) -> tuple[str, str]:
    """(commit, configuration id) of one record; a record without ``config_id`` takes its folder's."""
    return str(record.get("code") or UNKNOWN), str(record.get("config_id") or folder_config)


def origins(records: Iterable[Mapping[str, Any]], folder_config: str = UNKNOWN) -> dict[str, Any]:
    """How many records each commit and each configuration produced, most first."""
    pairs = [record_origin(r, folder_config) for r in records]
    commits = Counter(code for code, _ in pairs)
    configs = Counter(cid for _, cid in pairs)
    return {"commits": dict(commits.most_common()), "configs": dict(configs.most_common()),
            "mixed": len(commits) > 1 or len(configs) > 1}


def describe(origin: Mapping[str, Any]) -> str:
    """'commit X (30 records), Y (20); configuration Z (50)': what the records came from."""

    def part(counts: Mapping[str, int]) -> str:
        return ", ".join(f"{name} ({count} record{'s' if count != 1 else ''})" for name, count in counts.items())

    noun = "commits" if len(origin["commits"]) > 1 else "commit"
    config_noun = "configurations" if len(origin["configs"]) > 1 else "configuration"
    return f"{noun} {part(origin['commits'])}; {config_noun} {part(origin['configs'])}"


def check_single(origin: Mapping[str, Any], what: str, *, allow_mixed: bool) -> None:
    """Refuse records of several commits or configurations in one table, unless allowed."""
    if origin["mixed"] and not allow_mixed:
        raise BenchRunError(f"{what} mixes records of {describe(origin)}",
                            hint="one table is one commit and one configuration: rerun those questions at one "
                                 "commit, or pass --allow-mixed to show the mix (it is then labelled)")


def mix_line(origin: Mapping[str, Any]) -> str | None:
    """The label a mixed table carries; None for a table of one commit and one configuration."""
    return f"**Mixed**: these records come from {describe(origin)}." if origin["mixed"] else None


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
