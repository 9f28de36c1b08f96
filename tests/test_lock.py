"""The versions installed are the locked ones (scripts/constraints.txt), so what CI tested is what users get."""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

import pytest

from conftest import REPO

LOCK = REPO / "scripts" / "constraints.txt"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)\s*$")


def locked() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            match = PIN.match(line)
            assert match, f"not an exact pin in {LOCK.name}: {line!r}"
            pins[match.group(1).lower().replace("_", "-")] = match.group(2)
    return pins


def test_the_lock_pins_every_direct_dependency_exactly() -> None:
    pins = locked()
    for name in ("llama-cpp-python", "torch", "faiss-cpu", "duckdb", "sentence-transformers", "bm25s", "click",
                 "pydantic", "onnxruntime", "pytest", "ray", "pip"):
        assert name in pins, f"{name} is not pinned in {LOCK.name}"
    assert pins["torch"] == "2.13.0"  # the CPU build on this machine's disk; no local label, so a Mac finds its wheel


def test_the_installed_versions_are_the_locked_ones() -> None:
    venv = REPO / ".venv"
    if Path(sys.prefix).resolve() != venv.resolve() or not (venv / ".reagent-installed").is_file():
        pytest.skip("not the environment scripts/setup.sh installs")
    differ = []
    for name, version in locked().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue  # a platform-only dependency of another platform
        if installed.split("+")[0] != version:
            differ.append(f"{name} {installed} (locked {version})")
    assert not differ, "installed versions differ from scripts/constraints.txt: " + ", ".join(differ) + \
        " -- run `bash scripts/setup.sh` (or refresh the lock with `bash scripts/lock.sh`)"
