"""Where indexes live, what they are called, and listing them.

``indexes/NAME/`` holds ``manifest.json``, ``passages.duckdb``, ``dense.faiss``,
``bm25/`` and, for dumps, ``kg.duckdb``. A build in progress is the hidden folder
``indexes/.NAME.building/``, guarded by ``indexes/.NAME.lock``; it is never listed or
opened as an index.
"""

from __future__ import annotations

import json
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..config import Config
from ..errors import IndexBuildError, IndexNotFoundError
from ..paths import file_sha256

MANIFEST = "manifest.json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def validate_name(name: str) -> str:
    """Return ``name`` if it is a valid index name (letters, digits, '-', '_', '.'), else raise."""
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise IndexBuildError(
            f"invalid index name {name!r}",
            hint="use 1-100 letters, digits, '-', '_' or '.', starting with a letter or digit",
        )
    return name


def index_dir(config: Config, name: str) -> Path:
    """The folder of index ``name``."""
    return config.paths.indexes / validate_name(name)


def building_dir(config: Config, name: str) -> Path:
    """The temporary folder a build of ``name`` writes to."""
    return config.paths.indexes / f".{validate_name(name)}.building"


def folder_size(path: Path) -> int:
    """Total bytes of the files under ``path``."""
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def read_manifest(folder: Path) -> dict:
    """The manifest of an index folder, or IndexNotFoundError naming what is wrong."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise IndexNotFoundError(
            f"{folder} is not a finished index (no {MANIFEST})",
            hint="build it with `reagent index build SOURCE --name NAME`",
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise IndexNotFoundError(f"the manifest {path} is unreadable ({exc})", hint="rebuild the index with --force") from None
    if not isinstance(manifest, dict):
        raise IndexNotFoundError(f"the manifest {path} is not a JSON object", hint="rebuild the index with --force")
    return manifest


def list_indexes(config: Config) -> list[dict]:
    """Manifests of the finished indexes, by name, each with its "path" and "size_bytes"."""
    root = config.paths.indexes
    if not root.is_dir():
        return []
    out = []
    for folder in sorted(root.iterdir()):
        if folder.name.startswith(".") or not (folder / MANIFEST).is_file():
            continue
        try:
            manifest = read_manifest(folder)
        except IndexNotFoundError:
            continue
        out.append({**manifest, "name": folder.name, "path": str(folder), "size_bytes": folder_size(folder)})
    return out


def interrupted_builds(config: Config) -> list[str]:
    """Names of builds that were interrupted and can be resumed."""
    root = config.paths.indexes
    if not root.is_dir():
        return []
    return sorted(p.name[1:-len(".building")] for p in root.glob(".*.building") if p.is_dir())


def resolve_index(name_or_path: str | Path, config: Config) -> Path:
    """The folder of an index given by name (under the indexes folder) or by path."""
    candidate = Path(name_or_path).expanduser()
    if isinstance(name_or_path, Path) or "/" in str(name_or_path) or (candidate.is_dir() and (candidate / MANIFEST).is_file()):
        if (candidate / MANIFEST).is_file():
            return candidate.resolve()
        raise IndexNotFoundError(f"no index at {candidate}", hint="pass an index name or the folder of a built index")
    name = str(name_or_path)
    try:
        folder = index_dir(config, name)
    except IndexBuildError as exc:
        raise IndexNotFoundError(exc.message, hint=exc.hint) from None
    if (folder / MANIFEST).is_file():
        return folder
    known = [m["name"] for m in list_indexes(config)]
    if name in interrupted_builds(config):
        hint = "its build was interrupted: run the same `reagent index build ... --name " + name + "` again to resume"
    elif known:
        hint = f"known indexes: {', '.join(known)}; or build it with `reagent index build SOURCE --name {name}`"
    else:
        hint = f"no index is built yet under {config.paths.indexes}: run `reagent index build SOURCE --name {name}`"
    raise IndexNotFoundError(f"no index named {name!r} in {config.paths.indexes}", hint=hint)


@contextmanager
def build_lock(config: Config, name: str) -> Iterator[None]:
    """Hold ``indexes/.NAME.lock`` so two processes never build the same index at once."""
    path = config.paths.indexes / f".{name}.lock"
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            break
        except FileExistsError:
            try:
                pid = int(path.read_text().strip() or 0)
            except (OSError, ValueError):
                pid = 0
            if pid and _alive(pid):
                raise IndexBuildError(
                    f"another process (pid {pid}) is building index {name!r} right now",
                    hint="wait for it to finish, or stop it and run the build again to resume",
                ) from None
            path.unlink(missing_ok=True)  # left by a process that died
    else:
        raise IndexBuildError(f"cannot take the build lock {path}", hint="remove the file if no build is running")
    try:
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        yield
    finally:
        path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:60] or "file"


def benchmark_index_name(path: Path) -> str:
    """A stable name for the open-corpus index of a benchmark file: ``bench-<stem>-<sha256[:8]>``."""
    stem = Path(path).name.split(".")[0]
    return f"bench-{_slug(stem)}-{file_sha256(path)[:8]}"
