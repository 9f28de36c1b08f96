"""The run folder's ``config.json``: what a run was asked to do, and the resume checks.

A resumed run must match the folder in everything that changes the answers (the
dataset file's content, seed, n, the ids filters, the question ids drawn, the model,
a prebuilt index, retrieval settings); the method list may grow, so methods can be
added to a finished run. Folders written before a setting existed resume as if it
was unset.
"""

from __future__ import annotations

import dataclasses
import json
import os
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..config import Config
from ..errors import BenchRunError
from ..locks import file_lock
from ..paths import file_sha256, unwritable_reason
from ..version import code_version
from ..runtime.llm import physical_threads
from .provenance import UNKNOWN, config_id, describe, legacy_config_id, origins, resolve_threads
from .records import RECORDS_FILE, read_records

CONFIG_FILE = "config.json"
LOCK_FILE = ".bench-run.lock"  # held by the one process writing into the folder
FORMAT_VERSION = 1
# Settings that must be equal to resume a run (dotted paths into config.json).
MUST_MATCH = (
    "dataset",
    "file_sha256",
    "seed",
    "n",
    "ids.sha256",
    "exclude_ids.sha256",
    "prebuilt_index.name",
    "prebuilt_index.source.sha256",
    "model.id",
    "model.sha256",
    "config.retrieval.mode",
    "config.retrieval.top_k",
    "config.retrieval.passage_chars",
    "config.retrieval.focus_chars",
)
# What a setting was before it existed (a folder written by an older reagent resumes as it ran).
MISSING_MEANS = {"config.retrieval.focus_chars": 0}


def config_dict(config: Config) -> dict[str, Any]:
    """The full configuration as JSON-ready data."""

    def plain(value: Any) -> Any:
        if isinstance(value, Path):
            return str(value)
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        return value

    return plain(dataclasses.asdict(config))


def run_config(
    *,
    dataset: str,
    file: Path,
    seed: int,
    n: int | None,
    methods: Sequence[str],
    model: dict[str, Any],
    config: Config,
    index: str | None,
    question_ids: Sequence[str],
    selection: dict[str, Any] | None = None,
    prebuilt_index: str | None = None,
    machine: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The content of config.json for a new run.

    ``selection`` holds the ``ids`` / ``exclude_ids`` filters (see selection.py);
    ``prebuilt_index`` is the ``--index`` name when the run answers over a prebuilt index;
    ``machine`` is this machine's identity (``runtime/identity.py``), kept once per session.
    The configuration's ``llm.n_threads`` is resolved (unset: the cores this process may use),
    so that threads are part of the configuration id.
    """
    selection = selection or {"ids": None, "exclude_ids": None}
    resolved = resolve_threads(config_dict(config), physical_threads())
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    session = {"started": created, "code": code_version(), "config_id": config_id(resolved),
               "machine_id": (machine or {}).get("machine_id") or UNKNOWN, "machine": machine}
    return {
        "format": FORMAT_VERSION,
        "dataset": dataset,
        "file": str(Path(file).resolve()),
        "file_sha256": file_sha256(file),
        "seed": seed,
        "n": n,
        "ids": selection.get("ids"),
        "exclude_ids": selection.get("exclude_ids"),
        "sampling": "filter by ids / exclude_ids (file order kept), then "
                    "random.Random(seed).sample(filtered_questions, n); all in file order when n is null",
        "methods": list(methods),
        "model": model,
        "index": index,
        "prebuilt_index": prebuilt_index,
        "config": resolved,
        "question_ids": list(question_ids),
        "created": created,
        # one entry per start or resume: the commit and configuration its records carry
        "sessions": [session],
        "configs": {session["config_id"]: resolved},
    }


def _get(data: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, dict):
            return None
        data = data.get(part)  # type: ignore[assignment]
    return data


def _setting(data: dict[str, Any], dotted: str) -> Any:
    value = _get(data, dotted)
    return MISSING_MEANS.get(dotted) if value is None else value


def question_ids_mismatch(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """How the drawn question ids differ (as sets), or None when they are the same questions."""
    before, now = old.get("question_ids"), new.get("question_ids") or []
    if before is None or set(before) == set(now):  # the order only changes which question is answered first
        return None
    gone, added = len(set(before) - set(now)), len(set(now) - set(before))
    return f"question_ids: folder has {len(before)} questions, now {len(now)} ({gone} dropped, {added} new)"


def mismatches(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Human-readable differences in the settings that must match to resume."""
    diffs = [
        f"{key}: folder has {_setting(old, key)!r}, now {_setting(new, key)!r}"
        for key in MUST_MATCH
        if _setting(old, key) != _setting(new, key)
    ]
    questions = question_ids_mismatch(old, new)
    return diffs + ([questions] if questions else [])


def folder_config_id(run: dict[str, Any]) -> str:
    """The configuration id of records that predate ``config_id``: the folder's first configuration, as ids were then."""
    return legacy_config_id(run.get("config"))


def read_run_config(folder: Path) -> dict[str, Any]:
    """Load a run folder's config.json, with a clear error when it is missing or broken."""
    path = Path(folder) / CONFIG_FILE
    if not path.is_file():
        raise BenchRunError(f"{folder} is not a benchmark run folder (no {CONFIG_FILE})", hint="pass the --out folder of a `reagent bench run`")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise BenchRunError(f"{path} is not valid JSON ({exc})", hint="restore it, or start a new run folder") from None


def refuse_another_origin(folder: Path, code: str, config: str, machine: str = UNKNOWN) -> None:
    """Refuse to resume a folder whose records come from another commit, configuration or machine than this session's."""
    if not (folder / CONFIG_FILE).exists():
        return
    records = read_records(folder / RECORDS_FILE)
    origin = origins(records, folder_config_id(read_run_config(folder)))
    if records and (set(origin["commits"]) != {code} or set(origin["configs"]) != {config}
                    or set(origin["machines"]) != {machine}):
        raise BenchRunError(
            f"cannot resume {folder}: its records come from {describe(origin)}; this run is commit {code}, "
            f"configuration {config}, machine {machine}",
            hint="one table is one commit, one configuration and one machine: pass --out with a new folder, or "
                 "--allow-mixed to add to it anyway (its tables then say they mix)")


def write_json(path: Path, data: Any) -> None:
    """Write JSON atomically (temporary file, fsync, rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, ensure_ascii=False)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def prepare_folder(folder: Path, new: dict[str, Any], *, resume: bool) -> dict[str, Any]:
    """Create the run folder, or check it for a resume; returns the config now in force."""
    folder = Path(folder)
    path = folder / CONFIG_FILE
    if path.exists():
        if not resume:
            raise BenchRunError(
                f"{folder} already holds a benchmark run",
                hint="pass --resume to continue it, or --out with a new folder",
            )
        old = read_run_config(folder)
        diffs = mismatches(old, new)
        if diffs:
            raise BenchRunError(
                f"cannot resume {folder}: it was run with different settings ({'; '.join(diffs)})",
                hint="resume with the original settings, or pass --out with a new folder",
            )
        merged = dict(old)
        merged["methods"] = list(dict.fromkeys([*old.get("methods", []), *new["methods"]]))
        for key in ("file", "ids", "exclude_ids"):  # the same content may have moved
            merged[key] = new.get(key)
        merged["sessions"] = [*old.get("sessions", []), *new.get("sessions", [])]
        merged["configs"] = {**old.get("configs", {}), **new.get("configs", {})}
        write_json(path, merged)
        return merged
    if folder.exists() and any(p.name != LOCK_FILE for p in folder.iterdir()):
        raise BenchRunError(f"{folder} exists and is not empty", hint="pass --out with a new or empty folder")
    folder.mkdir(parents=True, exist_ok=True)
    write_json(path, new)
    return new


@contextmanager
def run_lock(folder: Path) -> Iterator[None]:
    """Hold the run folder for this process; another run into it fails at once, naming the holder.

    Refusing rather than waiting: a benchmark run takes hours, and two into one folder
    is a mistake to report, not a queue (a finished run is continued with --resume).
    """
    folder = Path(folder)
    reason = unwritable_reason(folder)  # a read-only disk is one clear error, not a traceback from the lock
    if reason is not None:
        raise BenchRunError(f"cannot write to {folder}: {reason}",
                            hint="make that folder writable, or pass --out with a writable folder")

    def refuse(holder: str) -> None:
        raise BenchRunError(f"{folder} is in use: {holder} is running a benchmark into it",
                            hint="wait for it to finish and then --resume, or pass --out with another folder")

    with file_lock(folder / LOCK_FILE, purpose=f"bench run into {folder.name}", on_wait=refuse):
        yield
