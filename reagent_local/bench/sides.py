"""The two sides of a comparison, read from run folders: one method's records, where they came from.

``reagent bench compare RUN_A RUN_B`` compares one method of RUN_A with one of RUN_B (each
side may pool several folders, e.g. one per dataset); ``reagent bench compare RUN... --methods
A,B`` compares two methods over the same folders. A side is one commit and one configuration
unless mixing is allowed (``provenance.check_single``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..errors import BenchRunError
from .provenance import check_single, config_id, origins
from .records import RECORDS_FILE, check_unique, read_records
from .rundir import folder_config_id, read_run_config

Record = dict[str, Any]


@dataclass
class Side:
    """One method's records over some run folders, and the commits and configurations they came from."""

    method: str
    folders: list[Path]
    records: list[Record]
    origin: dict[str, Any]
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)  # config id -> resolved configuration

    def describe(self) -> str:
        """'reagent-both in runs/a, runs/b'."""
        return f"{self.method} in {', '.join(str(f) for f in self.folders)}"


def _folder(folder: Path) -> tuple[list[Record], str, dict[str, dict[str, Any]]]:
    """A run folder's records, the configuration id of records without one, and its configurations by id."""
    run = read_run_config(folder)
    records = read_records(Path(folder) / RECORDS_FILE)
    check_unique(records, Path(folder) / RECORDS_FILE)
    configs = dict(run.get("configs") or {})
    if run.get("config"):
        configs.setdefault(folder_config_id(run), run["config"])
    return records, folder_config_id(run), configs


def load_side(folders: Sequence[Path], method: str | None, *, allow_mixed: bool = False) -> Side:
    """The records of ``method`` (or of the folders' only method) pooled over ``folders``."""
    records: list[Record] = []
    tagged: list[Record] = []  # records with their folder's configuration filled in, for the origin count
    configs: dict[str, dict[str, Any]] = {}
    for folder in folders:
        found, default, folder_configs = _folder(folder)
        records += found
        tagged += [{**r, "config_id": r.get("config_id") or default} for r in found]
        configs.update(folder_configs)
    methods = list(dict.fromkeys(r["method"] for r in records))
    if method is None:
        if len(methods) != 1:
            raise BenchRunError(f"{', '.join(map(str, folders))} hold{'s' if len(folders) == 1 else ''} "
                                f"{len(methods)} methods ({', '.join(methods) or 'none'}): which one?",
                                hint="pass --method NAME, or --methods A,B to compare two methods of these folders")
        method = methods[0]
    elif method not in methods:
        raise BenchRunError(f"no records of {method!r} in {', '.join(map(str, folders))}",
                            hint=f"methods there: {', '.join(methods) or 'none'}")
    chosen = [r for r in tagged if r["method"] == method]
    origin = origins(chosen)
    side = Side(method, [Path(f) for f in folders], chosen, origin,
                {cid: configs[cid] for cid in origin["configs"] if cid in configs})
    check_single(origin, side.describe(), allow_mixed=allow_mixed)
    return side


def load_sides(folders: Sequence[Path], methods: Sequence[str], *, allow_mixed: bool = False) -> tuple[Side, Side]:
    """(A, B): two methods over the same folders, or (with at most one method) the first folder against the second.

    ``methods`` is A,B (two methods of the folders), M (the same method of two folders) or
    empty (each of two folders' only method). In the two-folder form a folder may name several
    folders joined by commas, pooled into one side.
    """
    if len(methods) > 2:
        raise BenchRunError(f"--methods takes two methods, got {len(methods)}", hint="compare two at a time")
    if len(methods) == 2:
        if methods[0] == methods[1]:
            raise BenchRunError(f"both sides are {methods[0]!r}", hint="name two different methods")
        pooled = [part for folder in folders for part in split_folders(folder)]
        return (load_side(pooled, methods[0], allow_mixed=allow_mixed),
                load_side(pooled, methods[1], allow_mixed=allow_mixed))
    if len(folders) != 2:
        raise BenchRunError(f"compare needs two run folders (got {len(folders)}), or --methods A,B",
                            hint="reagent bench compare RUN_A RUN_B, or reagent bench compare RUN --methods A,B")
    method = methods[0] if methods else None
    a, b = (split_folders(f) for f in folders)
    return load_side(a, method, allow_mixed=allow_mixed), load_side(b, method, allow_mixed=allow_mixed)


def split_folders(argument: Path | str) -> list[Path]:
    """'runs/a,runs/b' -> [runs/a, runs/b]: one side pooled from several folders."""
    parts = [Path(p) for p in str(argument).split(",") if p.strip()]
    for part in parts:
        if not part.is_dir():
            raise BenchRunError(f"{part} is not a folder", hint="pass the --out folder of a `reagent bench run`")
    return parts
