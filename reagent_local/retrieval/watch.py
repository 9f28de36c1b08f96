"""``reagent index watch NAME``: a folder's index kept current while the folder changes.

It brings the index up to date once (changes made while nobody watched), then waits for
changes with watchfiles (inotify on Linux, FSEvents, ReadDirectoryChangesW; polling with
``poll``, for network drives) and, once they have settled for ``settle`` seconds, runs the
ordinary update (``update.update_index``): the same build lock, the new index built aside and
swapped in whole, so a kill at any moment leaves the previous index answering and the next
``index update`` (or watch) resumes. Changes to hidden files, to files the index's globs leave
out and to the indexes folder itself are ignored. Ctrl-C (or ``timeout``, or ``once`` after
the first update a change caused) stops it between updates; Ctrl-C during an update stops it
too, with the old index answering.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable

from ..config import Config
from ..errors import IndexBuildError, ReagentError
from .embed import Embedder, HashEmbedder
from .folder_scan import selected
from .layout import read_manifest, resolve_index, validate_name
from .update import update_index

SETTLE_SECONDS = 2.0  # quiet time after the last change before updating
MAX_WAIT_SECONDS = 60.0  # a stream of changes that never settles is still updated this often


@dataclass
class WatchResult:
    """What a watch did: updates run (the catch-up included), updates that failed, and why it stopped."""

    updates: int = 0
    failed: int = 0
    stopped: str = ""


class _Relevant:
    """A watchfiles filter: changes to the files the index reads (not hidden, within its globs, not its own files)."""

    def __init__(self, root: Path, include: tuple[str, ...], exclude: tuple[str, ...], ignore: Path) -> None:
        self.root, self.include, self.exclude, self.ignore = root.resolve(), include, exclude, ignore.resolve()

    def __call__(self, _change: object, path: str) -> bool:
        target = Path(path)
        try:
            if target.resolve().is_relative_to(self.ignore):
                return False  # the indexes folder inside the watched folder: our own writes
            rel = PurePosixPath(target.relative_to(self.root).as_posix())
        except ValueError:
            return False
        if any(part.startswith(".") for part in rel.parts):
            return False
        if not rel.suffix:  # a folder (or a file without suffix): a deleted folder may have held indexed files
            return selected(str(rel), (), self.exclude)
        return selected(str(rel), self.include, self.exclude)


def watch_index(name: str, config: Config, *, settle: float = SETTLE_SECONDS, timeout: float | None = None,
                once: bool = False, poll: bool = False, progress: bool = True,
                embedder: Embedder | HashEmbedder | None = None, log: Callable[[str], None] = lambda _msg: None,
                stop: threading.Event | None = None) -> WatchResult:
    """Keep index ``name`` current with its folder until Ctrl-C, ``timeout`` seconds, ``stop`` set, or (``once``)
    the first update a change caused; returns what it did."""
    import watchfiles

    manifest = read_manifest(resolve_index(validate_name(name), config))
    folder = Path((manifest.get("source") or {}).get("path", ""))
    recorded = manifest.get("folder") or {}
    if manifest.get("format") != "docs" or recorded.get("single_file"):
        what = "one file" if recorded.get("single_file") else f"{folder} read as {manifest.get('format')}"
        raise IndexBuildError(f"index {name!r} was built from {what}, not a folder of documents, so it cannot be watched",
                              hint=f"watch an index built from a folder: `reagent index build FOLDER --name {name}`")
    stop = stop or threading.Event()
    timer = threading.Timer(timeout, stop.set) if timeout is not None else None
    result = WatchResult()

    def run_update(why: str) -> bool:
        """One update; False when the watch must stop (Ctrl-C during it)."""
        log(f"{time.strftime('%H:%M:%S')} updating {name}: {why}")
        try:
            update_index(name, config, progress=progress, embedder=embedder, log=log)
        except KeyboardInterrupt:
            result.stopped = "interrupted during an update"
            return False
        except ReagentError as exc:
            if isinstance(exc.__context__, KeyboardInterrupt):  # the build turned Ctrl-C into its own error
                result.stopped = "interrupted during an update"
                return False
            result.failed += 1
            log(f"update failed: {exc.message}" + (f" ({exc.hint})" if exc.hint else "") + "; still watching")
            return True
        result.updates += 1
        return True

    if timer is not None:
        timer.daemon = True
        timer.start()
    try:
        if not run_update("bringing it up to date before watching"):
            return result
        log(f"watching {folder} for changes to index {name} (Ctrl-C stops)")
        relevant = _Relevant(folder, tuple(recorded.get("include") or ()), tuple(recorded.get("exclude") or ()),
                             config.paths.indexes)
        for changes in watchfiles.watch(folder, watch_filter=relevant, step=int(settle * 1000),
                                        debounce=int(max(settle, MAX_WAIT_SECONDS) * 1000), stop_event=stop,
                                        force_polling=poll or None, raise_interrupt=True):
            if not folder.is_dir():
                result.stopped = f"{folder} is gone"
                return result
            paths = sorted({Path(p).name for _, p in changes})
            shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
            if not run_update(f"{len(changes)} change{'s' if len(changes) != 1 else ''} ({shown})"):
                return result
            if once:
                result.stopped = "once: updated after the first change"
                return result
        result.stopped = "time is up" if timeout is not None and stop.is_set() else "stopped"
    except KeyboardInterrupt:
        result.stopped = "interrupted"
    finally:
        if timer is not None:
            timer.cancel()
    return result
