"""Where reagent-local keeps generated files: models, indexes, the log, caches."""

from __future__ import annotations

import errno
import json
import hashlib
import os
import tempfile
from pathlib import Path


def _checkout_root() -> Path | None:
    """The repository root when running from a source checkout (editable install)."""
    root = Path(__file__).resolve().parent.parent
    if (root / "pyproject.toml").is_file() and (root / "models").is_dir():
        return root
    return None


def default_home() -> Path:
    """REAGENT_HOME, else the source checkout, else ~/.local/share/reagent-local."""
    env = os.environ.get("REAGENT_HOME")
    if env:
        return Path(env).expanduser().resolve()
    root = _checkout_root()
    if root is not None:
        return root
    return Path.home() / ".local" / "share" / "reagent-local"


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def unwritable_reason(folder: Path) -> str | None:
    """Why new files cannot be created in ``folder`` (made if missing), or None when they can.

    Tries to create a file rather than trusting permission bits: root ignores those,
    but not a read-only mount.
    """
    try:
        Path(folder).mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def is_disk_full(exc: BaseException) -> bool:
    """Whether an error means the disk is full (OSError ENOSPC, or a library's wrapped message)."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    # DuckDB, FAISS and others report it in their own exception types, with the OS message;
    # numpy's tofile (np.save) reports a short write without errno: on a local file, a full disk
    text = str(exc)
    return ("No space left on device" in text or "Disk quota exceeded" in text
            or (isinstance(exc, OSError) and exc.errno is None and " requested and " in text and " written" in text))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file of this process: a reader (or another process writing the
    same file) sees the old file or the whole new one. An OSError is raised, with no temporary file left behind."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def write_json_atomic(data: object, path: Path) -> None:
    """Write ``data`` as indented JSON through a temporary file, so a reader never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
