"""``reagent index update NAME``: an index of a folder brought up to date with the folder.

New files are read, changed ones (by sha256) read again, deleted ones dropped; only text
the index does not hold yet is embedded. It is a build (``build_index(..., update=True)``)
in ``.NAME.building/`` swapped in at the end, so a kill leaves the previous index served.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from ..config import Config
from ..errors import IndexBuildError
from .build import build_index
from .embed import Embedder, HashEmbedder
from .folder_build import DOCS
from .layout import read_manifest, resolve_index, validate_name


def update_index(name: str, config: Config, *, source: Path | None = None, include: Sequence[str] | None = None,
                 exclude: Sequence[str] | None = None, progress: bool = True,
                 embedder: Embedder | HashEmbedder | None = None,
                 log: Callable[[str], None] = lambda _msg: None) -> Path:
    """Update index ``name`` from its folder (or ``source``), with its recorded globs unless given; return its folder."""
    manifest = read_manifest(resolve_index(validate_name(name), config))
    if manifest.get("format") != DOCS:
        where = (manifest.get("source") or {}).get("path", "its source")
        raise IndexBuildError(f"index {name!r} was built from {where} read as {manifest.get('format')}, "
                              "not from a folder of documents, so it cannot be updated",
                              hint=f"rebuild it with `reagent index build SOURCE --name {name} --force`")
    recorded = manifest.get("folder") or {}
    folder = Path(source) if source is not None else Path((manifest.get("source") or {}).get("path", ""))
    if not folder.exists():
        raise IndexBuildError(f"{folder}, the source of index {name!r}, does not exist any more",
                              hint=f"pass its new place: `reagent index build NEW_PATH --name {name} --update`")
    return build_index(folder, name, config, fmt=DOCS, update=True, limit=manifest.get("limit"),
                       include=tuple(recorded.get("include") or ()) if include is None else tuple(include),
                       exclude=tuple(recorded.get("exclude") or ()) if exclude is None else tuple(exclude),
                       faiss_type=recorded.get("faiss_requested") or "auto", progress=progress, embedder=embedder,
                       log=log, kg=False)
