"""Where indexes live, what they are called, and listing them.

``indexes/NAME/`` holds ``manifest.json``, ``passages.duckdb``, ``dense.faiss``,
``bm25/`` and, for dumps, ``kg.duckdb``. A build in progress is the hidden folder
``indexes/.NAME.building/``, guarded by ``indexes/.NAME.lock``; it is never listed or
opened as an index.
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from ..config import Config, RetrievalConfig
from ..errors import IndexBuildError, IndexCorruptError, IndexNotFoundError
from ..locks import describe_holder, file_lock, is_held
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
    """The manifest of an index folder; IndexNotFoundError when absent, IndexCorruptError when unreadable."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise IndexNotFoundError(
            f"{folder} is not a finished index (no {MANIFEST})",
            hint="build it with `reagent index build SOURCE --name NAME`",
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # ValueError: bad JSON or bytes that are not UTF-8
        raise IndexCorruptError(f"the manifest {path} is unreadable ({exc})",
                                hint=f"rebuild the index: `{rebuild_command({}, Path(folder).name)}`") from None
    if not isinstance(manifest, dict):
        raise IndexCorruptError(f"the manifest {path} is not a JSON object",
                                hint=f"rebuild the index: `{rebuild_command({}, Path(folder).name)}`")
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
        except (IndexNotFoundError, IndexCorruptError):
            continue  # `index info NAME` says what is wrong with it
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
    leftovers = building_dir(config, name)
    if is_held(lock_path(config, name)):
        hint = f"{describe_holder(lock_path(config, name))} is building it: wait for it to finish"
    elif list(config.paths.indexes.glob(f".{name}.old-*")):
        hint = ("a rebuild was killed while swapping the new index in: run "
                f"`{recorded_command(leftovers) or f'reagent index build ... --name {name}'}` again "
                "(it restores the old one or finishes the swap)")
    elif leftovers.is_dir():
        command = recorded_command(leftovers)
        hint = (f"its build was interrupted: run `{command}` to resume it" if command else
                f"its build was interrupted: run the same `reagent index build ... --name {name}` again to resume it")
    elif known:
        hint = f"known indexes: {', '.join(known)}; or build it with `reagent index build SOURCE --name {name}`"
    else:
        hint = f"no index is built yet under {config.paths.indexes}: run `reagent index build SOURCE --name {name}`"
    raise IndexNotFoundError(f"no index named {name!r} in {config.paths.indexes}", hint=hint)


def recorded_command(folder: Path) -> str | None:
    """The command a build wrote into its folder's state (``build-state.json``): the one that resumes it."""
    try:
        state = json.loads((Path(folder) / "build-state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict):
        return None
    if state.get("command"):
        return str(state["command"])
    source = (state.get("key") or {}).get("source")  # a build from before commands were recorded
    return f"reagent index build {source} --name {Path(folder).name[1:-len('.building')]}" if source else None


def lock_path(config: Config, name: str) -> Path:
    """The lock file that serialises builds of index ``name``."""
    return config.paths.indexes / f".{validate_name(name)}.lock"


@contextmanager
def build_lock(config: Config, name: str, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold ``indexes/.NAME.lock`` for a whole build: a second build of NAME waits for the first.

    A flock, so the kernel frees it when its holder dies (even by SIGKILL). The file
    stays behind on purpose: deleting a lock file others may be waiting on is a race.
    """
    with file_lock(lock_path(config, name), purpose=f"building index {name}", on_wait=on_wait):
        yield


def rebuild_command(manifest: dict, name: str) -> str:
    """The command that rebuilds an index from its recorded source, for repair hints."""
    source = (manifest.get("source") or {}).get("path") or "SOURCE"
    extra = f" --format {manifest['format']}" if manifest.get("format") else ""
    extra += f" --limit {manifest['limit']}" if manifest.get("limit") else ""
    return f"reagent index build {source} --name {name}{extra} --force"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:60] or "file"


# A benchmark's open-corpus index keeps BM25 tokenizer version 1: its natural-language questions gain nothing from
# version 2 (HotpotQA hybrid R@5 .823 with 1, .820 with 2: docs/retrieval.md), and every published run used it.
BENCHMARK_TOKENIZER = 1


def benchmark_index_name(path: Path, retrieval: RetrievalConfig | None = None) -> str:
    """A stable name for the open-corpus index of a benchmark file: ``bench-<stem>-<sha256[:8]>``.

    An embedder or backend of ``retrieval`` other than the default configuration's is added to
    the name (``...-torch``): their vectors differ, so a benchmark run with them needs its own
    index, and a query-side change alone would leave the passages' vectors as the default built them.
    """
    default, used = RetrievalConfig(), retrieval or RetrievalConfig()
    stem = Path(path).name.split(".")[0]
    extra = [_slug(part) for part, usual in ((used.embedder, default.embedder),
                                             (used.embedder_backend, default.embedder_backend)) if part != usual]
    return "-".join([f"bench-{_slug(stem)}-{file_sha256(path)[:8]}", *extra])
