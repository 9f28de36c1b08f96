"""Where reagent-local keeps generated files: models, indexes, the log, caches."""

from __future__ import annotations

import hashlib
import os
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
