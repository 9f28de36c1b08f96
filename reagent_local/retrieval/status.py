"""Each index's state, ready, building or interrupted, and the command that fixes it.

A name can be in several places at once: ``indexes/NAME/`` (a finished index, which answers),
``indexes/.NAME.building/`` (a build or an update writing its next version), ``indexes/.NAME.old-PID``
(a swap cut short) and ``indexes/.NAME.lock`` (held by the process building NAME right now).
``index list``, ``index info``, ``doctor`` and the "no index named" hint all read them here:

- **ready**: a finished index and nothing under way;
- **building**: a process holds the lock (a first build, or an update or ``--force`` rebuild while
  the old index still answers): wait for it;
- **interrupted**: leftovers and no process holding the lock. The fix is the command that was
  running, recorded by the build in its state file (``reagent index update NAME`` for an update,
  which resumes it; the same ``index build ...`` for a first build), so that it resumes instead
  of being refused as "already exists". With a finished index still there, the index answers as
  it was; the fix only brings the update in.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..config import Config
from ..errors import IndexBuildError, IndexCorruptError, IndexNotFoundError
from ..locks import holder_of, is_held
from .layout import MANIFEST, building_dir, lock_path, read_manifest, rebuild_command, recorded_command, validate_name

READY, BUILDING, INTERRUPTED = "ready", "building", "interrupted"


@dataclass(frozen=True)
class IndexStatus:
    """Where one index name stands: ``state``, a sentence saying why, and the command that fixes it (if any)."""

    name: str
    state: str  # ready | building | interrupted
    detail: str
    fix: str | None = None
    answers: bool = False  # a finished index is there and can be searched now

    def line(self) -> str:
        """One line for `index list` and `index info`: state, detail and fix."""
        return f"{self.state}: {self.detail}" + (f"; fix: `{self.fix}`" if self.fix else "")


def _repair(config: Config, name: str, final: Path, folder: Path) -> str:
    """The command that finishes an interrupted build of ``name``."""
    recorded = recorded_command(folder) if folder.is_dir() else None
    if recorded:
        return recorded
    if (final / MANIFEST).is_file():
        try:
            manifest = read_manifest(final)
        except (IndexNotFoundError, IndexCorruptError):  # `index info` names what is wrong with it
            return f"reagent index update {name}"
        return f"reagent index update {name}" if manifest.get("format") == "docs" else rebuild_command(manifest, name)
    return f"reagent index build SOURCE --name {name}  (the same command as before: it resumes)"


def index_status(config: Config, name: str) -> IndexStatus:
    """The state of index ``name`` (which may not exist in any form: then "interrupted" is never said)."""
    validate_name(name)
    root = config.paths.indexes
    final, folder = root / name, building_dir(config, name)
    answers = (final / MANIFEST).is_file()
    leftovers = folder.is_dir() or any(root.glob(f".{name}.old-*"))
    if is_held(lock_path(config, name)):
        holder = holder_of(lock_path(config, name))
        since = time.strftime("%H:%M:%S", time.localtime(holder["since"])) if holder.get("since") else "?"
        who = f"process {holder.get('pid', '?')} since {since}"
        what = "updating or rebuilding it; the index answers as it was until then" if answers else "building it"
        return IndexStatus(name, BUILDING, f"{who} is {what}", None, answers)
    if leftovers:
        kind = "an update or rebuild was interrupted; the index answers as it was" if answers else \
            "its build was interrupted (finished embedding batches are kept)"
        return IndexStatus(name, INTERRUPTED, kind, _repair(config, name, final, folder), answers)
    if answers:
        return IndexStatus(name, READY, "searchable", None, True)
    return IndexStatus(name, INTERRUPTED, "no such index", f"reagent index build SOURCE --name {name}", False)


def statuses(config: Config) -> list[IndexStatus]:
    """The state of every name under the indexes folder: finished indexes and leftovers of builds."""
    root = config.paths.indexes
    if not root.is_dir():
        return []
    names = {p.name for p in root.iterdir() if not p.name.startswith(".") and (p / MANIFEST).is_file()}
    for p in root.glob(".*"):
        for suffix in (".building", ".lock"):
            if p.name.endswith(suffix):
                names.add(p.name[1:-len(suffix)])
        if ".old-" in p.name:
            names.add(p.name[1:p.name.index(".old-")])
    out = []
    for name in sorted(names):
        try:
            status = index_status(config, name)
        except IndexBuildError:  # a stray file whose name is no index name
            continue
        if status.answers or status.state != INTERRUPTED or status.detail != "no such index":
            out.append(status)
    return out
