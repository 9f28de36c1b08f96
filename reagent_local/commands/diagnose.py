"""`reagent doctor`: what a bug report needs and what a maintainer asks for first, in one screen.

Versions (Python, llama-cpp-python and llama.cpp's own system line, FAISS, DuckDB, ONNX Runtime,
torch), the CPU and the llama.cpp settings that follow from it, the home and its free disk, the
models and indexes with their state, then the load probe (reagent_local/runtime/load_probe.py) of the
default model. Every problem comes with the fix on the same line.
"""

from __future__ import annotations

import json
import platform
import shutil
import sys
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from ..config import Config, models_origin
from ..errors import ReagentError
from ..paths import file_sha256, unwritable_reason
from ..runtime.cpu import extra_buffers_enabled, read_cpu

PACKAGES = ("reagent-local", "llama-cpp-python", "faiss-cpu", "duckdb", "onnxruntime", "torch",
            "sentence-transformers", "bm25s", "numpy", "pydantic", "click")
MIN_FREE_BYTES = 2 << 30  # a model pull or an index build needs about this much
VERIFIED_FILE = "models-verified.json"


@dataclass(frozen=True)
class Problem:
    """Something wrong, with what to do about it."""

    what: str
    fix: str


@dataclass
class Report:
    """Everything doctor found: sections of facts, and the problems among them."""

    sections: dict[str, Any] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {**self.sections, "ok": self.ok,
                "problems": [{"what": p.what, "fix": p.fix} for p in self.problems]}


def package_versions() -> dict[str, str | None]:
    """Installed versions of the packages that matter in a bug report (None: not installed)."""
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _llama_system() -> tuple[str | None, str | None, bool]:
    try:
        import llama_cpp

        info = llama_cpp.llama_print_system_info().decode("utf-8", errors="replace").strip()
        return llama_cpp.__version__, info, bool(llama_cpp.llama_supports_gpu_offload())
    except Exception as exc:  # a broken native library is exactly what doctor must report, not die of
        return None, f"llama_cpp failed to import: {exc}", False


def _verified(models_dir: Path, cache: Path, path: Path, name: str, sha256: str) -> str:
    """'verified' / 'damaged'; the sha256 of a file is computed once per (size, mtime) and remembered."""
    stamp_file = cache / VERIFIED_FILE
    try:
        stamps = json.loads(stamp_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stamps = {}
    stat = path.stat()
    key = f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    if stamps.get(name) == key:
        return "verified"
    if file_sha256(path) != sha256:
        return "damaged"
    stamps[name] = key
    try:
        cache.mkdir(parents=True, exist_ok=True)
        stamp_file.write_text(json.dumps(stamps, indent=1), encoding="utf-8")
    except OSError:
        pass
    return "verified"


def _models_folder(config: Config, report: Report) -> dict[str, Any]:
    """Where models come from: the GGUF folder and the setting that chose it, the embedder's package and export."""
    import importlib.util

    from ..retrieval.onnx_embed import export_folder
    from ..runtime.models import EMBEDDER_PACKAGE

    folder = Path(config.paths.models)
    spec = importlib.util.find_spec(EMBEDDER_PACKAGE.replace("-", "_"))
    where = next(iter(spec.submodule_search_locations or []), spec.origin) if spec is not None else None
    backend = config.retrieval.embedder_backend
    out = {"path": str(folder), "origin": models_origin(config), "exists": folder.is_dir(),
           "shared": not folder.resolve().is_relative_to(Path(config.paths.home).resolve()),
           "embedder": {"name": config.retrieval.embedder, "backend": backend,
                        "package": str(where) if where else None,
                        "onnx_export": str(export_folder(folder, config.retrieval.embedder)) if backend != "torch" else None}}
    if folder.is_dir() and unwritable_reason(folder) is not None:
        out["writable"] = False  # reading shared models is fine; only `models pull` and the ONNX export write here
    return out


def _models(config: Config, report: Report) -> list[dict[str, Any]]:
    from ..runtime.models import KNOWN_MODELS, model_path

    rows = []
    for model in KNOWN_MODELS:
        path = model_path(model, config.paths.models)
        if not path.is_file():
            state = "missing"
        elif path.stat().st_size != model.size:
            state = "damaged"
        else:
            state = _verified(config.paths.models, config.paths.cache, path, model.name, model.sha256)
        rows.append({"name": model.name, "path": str(path), "state": state})
        if state == "damaged":
            report.problems.append(Problem(f"model {model.name} is damaged ({path})",
                                           f"delete it and run `reagent models pull {model.name}`"))
    return rows


def _indexes(config: Config, report: Report) -> list[dict[str, Any]]:
    from ..retrieval.layout import list_indexes
    from ..retrieval.status import INTERRUPTED, statuses

    try:
        found = list_indexes(config)
    except ReagentError as exc:
        report.problems.append(Problem(f"indexes: {exc.message}", exc.hint or "rebuild the index"))
        return []
    rows = [{"name": m["name"], "passages": m.get("passages"), "embedder": (m.get("embedder") or {}).get("name")}
            for m in found]
    by_name = {row["name"]: row for row in rows}
    for status in statuses(config):
        row = by_name.get(status.name)
        if row is None:
            row = {"name": status.name}
            rows.append(row)
        row["state"] = status.state
        if status.state == INTERRUPTED:
            report.problems.append(Problem(f"index {status.name}: {status.detail}", f"run `{status.fix}`"))
    return rows


def _default_model(config: Config, report: Report) -> Path | None:
    from ..runtime.models import resolve_model

    try:
        return resolve_model(config.llm.model, config.paths.models)[0]
    except ReagentError as exc:
        report.problems.append(Problem(f"default model {config.llm.model}: {exc.message}", exc.hint or ""))
        return None


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _probe(config: Config, model: Path, report: Report, reprobe: bool, threads: int, gpu_layers: int) -> dict:
    from ..runtime.load_probe import safe_extra_buffers

    try:
        verdict = safe_extra_buffers(model, config.llm.extra_buffers, cache_dir=config.paths.cache,
                                     gpu_layers=gpu_layers, threads=threads, reprobe=reprobe)
    except ReagentError as exc:
        report.problems.append(Problem(exc.message, exc.hint or ""))
        return {"model": str(model), "ok": False, "error": exc.message}
    attempts = [{"extra_buffers": a.extra_buffers, "outcome": a.outcome, "signal": a.signal,
                 "seconds": round(a.seconds, 2), "prefill_tps": a.prefill_tps, "decode_tps": a.decode_tps,
                 "typical_call_s": _rounded(a.typical_call_seconds())} for a in verdict.attempts]
    failed = [a for a in verdict.attempts if a.outcome in ("failed", "timeout")]
    if failed:
        report.problems.append(Problem(f"the load probe of {model.name} {failed[-1].outcome}: "
                                       f"{failed[-1].stderr_tail.strip().splitlines()[-1:] or ['(no output)']}",
                                       "run `reagent models verify` and `reagent ask` to see the full error"))
    return {"model": str(model), "ok": verdict.ok and not failed, "extra_buffers": verdict.extra_buffers,
            "remembered": verdict.from_cache, "verdict": verdict.key, "attempts": attempts}


def _warm(config: Config) -> dict:
    """Whether role prefixes start warm (llm.warm_prefixes, which needs the prompt cache and aligned prefill), and
    what the home's cache holds of them."""
    from ..runtime.warm import FOLDER, stored_prefixes

    llm = config.llm
    off = ("llm.warm_prefixes is false" if not llm.warm_prefixes else
           "llm.prompt_cache_mb is 0" if llm.prompt_cache_mb <= 0 else
           "llm.prefill_block is 0" if llm.prefill_block <= 0 else "")
    return {"on": not off, "off_because": off, "folder": str(config.paths.cache / FOLDER),
            "stored": stored_prefixes(config.paths.cache)}


def diagnose(config: Config, *, probe: bool = True, reprobe: bool = False) -> Report:
    """Collect the facts and problems of this installation (probing the default model unless ``probe`` is False)."""
    from ..runtime.llm import physical_threads

    report = Report()
    cpu = read_cpu()
    version, system_info, gpu = _llama_system()
    report.sections["python"] = {"version": sys.version.split()[0], "executable": sys.executable,
                                 "platform": platform.platform()}
    report.sections["packages"] = package_versions()
    report.sections["llama_cpp"] = {"version": version, "system_info": system_info, "gpu_offload": gpu}
    if version is None:
        report.problems.append(Problem(system_info or "llama_cpp failed to import",
                                       "reinstall it: `bash scripts/setup.sh` (or pip install --force-reinstall "
                                       "--no-cache-dir llama-cpp-python)"))
    threads = config.llm.n_threads or physical_threads()
    extra = extra_buffers_enabled(config.llm.extra_buffers, cpu)
    report.sections["cpu"] = {"model": cpu.model, "usable_cores": cpu.usable_cores, "machine": platform.machine(),
                              "features": cpu.notable_flags(), "amx": cpu.has_amx}
    from ..runtime.cores import CoreShare
    from ..runtime.openmp import wait_policy

    report.sections["llm"] = {"model": config.llm.model, "threads": threads,
                              "threads_shared": config.llm.n_threads is None,  # a fair share of the cores per call
                              "model_processes": CoreShare(model="").snapshot(), "openmp_wait": wait_policy(),
                              "extra_buffers_setting": config.llm.extra_buffers, "extra_buffers": extra,
                              "gpu_layers": config.llm.n_gpu_layers if gpu else 0}
    report.sections["warm"] = _warm(config)
    home = Path(config.paths.home)
    free = shutil.disk_usage(home if home.exists() else home.parent).free
    report.sections["home"] = {"path": str(home), "free_bytes": free, "writable": unwritable_reason(home) is None,
                               "log": str(config.paths.log)}
    if unwritable_reason(home) is not None:
        report.problems.append(Problem(f"the home {home} is not writable",
                                       "set REAGENT_HOME to a folder you can write (models, indexes and the log live there)"))
    if free < MIN_FREE_BYTES:
        report.problems.append(Problem(f"only {free / 2**30:.1f} GiB free under {home}",
                                       "free at least 2 GiB, or move the home with REAGENT_HOME"))
    report.sections["models_folder"] = _models_folder(config, report)
    report.sections["models"] = _models(config, report)
    report.sections["indexes"] = _indexes(config, report)
    model = _default_model(config, report)
    if probe and model is not None and version is not None:
        report.sections["probe"] = _probe(config, model, report, reprobe, threads, report.sections["llm"]["gpu_layers"])
        if report.sections["probe"].get("ok"):  # under auto the probe measures which setting is faster here
            report.sections["llm"]["extra_buffers"] = report.sections["probe"]["extra_buffers"]
    else:
        report.sections["probe"] = None
    return report
