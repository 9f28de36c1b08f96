"""Sentence embeddings with ONNX Runtime: the MiniLM graph exported from the local weights.

The export (``onnx_export.py``) writes ``model-fp32.onnx``, ``model-int8.onnx`` and
``export.json`` to ``<models>/onnx/<embedder>/``, once, on first use or by
``reagent models export-embedder``. Each load checks the file it runs against the
manifest (bytes and sha256) and the source weights against the ones it was exported
from; a missing, damaged or stale export is exported again (a line on stderr says so).
Encoding needs only onnxruntime and tokenizers: torch is not imported.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
from functools import partial
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..errors import ConfigError, ModelIntegrityError
from ..locks import file_lock
from ..paths import file_sha256, unwritable_reason
from .embed_model import KNOWN_DIMENSIONS, resolve_model_path
from . import onnx_export
from .onnx_export import EXPORT_FORMAT, FILES, MANIFEST, weights_file


def _stderr(message: str) -> None:
    print(f"reagent: {message}", file=sys.stderr, flush=True)


def require_onnxruntime(backend: str):
    """The onnxruntime module, or a ConfigError that says how to install it or switch backend."""
    try:
        import onnxruntime
    except ImportError:
        raise ConfigError(
            f"the embedder backend {backend!r} needs onnxruntime, which is not installed",
            hint="pip install onnxruntime onnx (both are dependencies of reagent-local), or set "
            "retrieval.embedder_backend = \"torch\" (REAGENT_RETRIEVAL_EMBEDDER_BACKEND=torch)",
        ) from None
    return onnxruntime


def export_folder(models_dir: Path, name: str) -> Path:
    """Where the ONNX export of embedder ``name`` lives: ``<models>/onnx/<slug>``."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(name).name if "/" in name else name).strip("-.") or "model"
    if "/" in name or os.sep in name:  # a local folder: its path tells two same-named folders apart
        from hashlib import sha256

        slug += "-" + sha256(str(Path(name).expanduser().resolve()).encode()).hexdigest()[:8]
    return Path(models_dir) / "onnx" / slug


def read_export(folder: Path) -> dict | None:
    """The export manifest, or None when there is none or it is unreadable."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("format") == EXPORT_FORMAT else None


def export_problem(folder: Path, manifest: dict | None, backend: str, weights: Path) -> str | None:
    """Why the export in ``folder`` cannot serve ``backend`` (missing, damaged, stale), or None."""
    if manifest is None:
        return "there is no export yet" if not (folder / MANIFEST).exists() else f"{folder / MANIFEST} is unreadable"
    entry = (manifest.get("files") or {}).get(backend)
    if not entry:
        return f"{folder / MANIFEST} lists no {backend} file"
    file = folder / entry["file"]
    size = file.stat().st_size if file.is_file() else None
    if size != entry["bytes"]:
        return f"{file} is {'missing' if size is None else f'{size:,} bytes'}, the export wrote {entry['bytes']:,}"
    if file_sha256(file) != entry["sha256"]:
        return f"{file} is damaged (its sha256 differs from {MANIFEST})"
    source = manifest.get("source") or {}
    stat = weights.stat()
    if (stat.st_size, stat.st_mtime_ns) != (source.get("weights_bytes"), source.get("weights_mtime_ns")):
        if file_sha256(weights) != source.get("weights_sha256"):
            return f"the weights {weights} changed since the export"
        source["weights_mtime_ns"] = stat.st_mtime_ns  # same bytes, touched: remember, to skip hashing next time
        try:
            _write_json(folder / MANIFEST, manifest)
        except OSError:  # a read-only models folder: hash again next time
            pass
    return None


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2), encoding="utf-8")
    os.replace(tmp, path)


def ensure_export(name: str, models_dir: Path, backend: str, *, force: bool = False,
                  log: Callable[[str], None] = _stderr) -> tuple[Path, dict]:
    """The export folder and manifest for ``backend``, exporting first when missing, damaged or stale."""
    require_onnxruntime(backend)
    source = resolve_model_path(name)
    weights = weights_file(source)
    folder = export_folder(models_dir, name)
    if not force:  # the common case, without taking the lock
        manifest = read_export(folder)
        if export_problem(folder, manifest, backend, weights) is None:
            return folder, manifest
    reason = unwritable_reason(folder.parent)
    if reason is not None:
        raise ModelIntegrityError(
            f"the ONNX export of {name} is needed in {folder}, but {folder.parent} is not writable ({reason})",
            hint="run `reagent models export-embedder` where it is writable, set paths.models_dir (REAGENT_PATHS_MODELS_DIR) "
            "to a writable folder, or set REAGENT_RETRIEVAL_EMBEDDER_BACKEND=torch",
        )
    with file_lock(folder.parent / f".{folder.name}.lock", purpose=f"exporting {name} to ONNX"):
        manifest = read_export(folder)  # another process may have exported it while this one waited
        problem = "--force" if force else export_problem(folder, manifest, backend, weights)
        if problem is not None:
            if problem != "--force" and manifest is not None:
                log(f"the ONNX export of {name} cannot be used: {problem}; exporting it again")
            log(f"exporting {name} to ONNX (fp32 and int8) from {source} into {folder}; once, about 20-60 s ...")
            manifest = onnx_export.export_embedder(name, folder, partial(_encode_files, name, models_dir))
            sizes = ", ".join(f"{backend_} {entry['bytes'] / 1e6:.1f} MB" for backend_, entry in manifest["files"].items())
            log(f"exported: {sizes}")
    return folder, manifest


def _encode_files(name: str, models_dir: Path, backend: str, folder: Path, manifest: dict,
                  texts: Sequence[str]) -> np.ndarray:
    """Encode with one backend's file of an export in ``folder`` as it is (how the exporter checks a new export)."""
    embedder = OnnxEmbedder(name, backend=backend, models_dir=models_dir)
    embedder.open_files(folder, manifest)
    return embedder.encode(texts)


class OnnxEmbedder:
    """Encodes texts with ONNX Runtime to L2-normalised float32 vectors; thread-safe.

    ``backend`` is "onnx" (fp32, the same vectors as PyTorch) or "onnx-int8" (weights
    quantised to int8). ``threads`` None lets onnxruntime use one thread per core.
    """

    def __init__(self, name: str, *, backend: str = "onnx-int8", models_dir: Path, batch_size: int = 64,
                 threads: int | None = None, spinning: bool = False,
                 log: Callable[[str], None] = _stderr) -> None:
        if backend not in FILES:
            raise ConfigError(f"unknown ONNX backend {backend!r}", hint=f"choose one of {', '.join(FILES)}")
        self.name = name
        self.backend = backend
        self.batch_size = batch_size
        self.models_dir = Path(models_dir)
        self.threads = threads
        self.spinning = spinning
        self.export: dict | None = None
        self._log = log
        self._session = None
        self._tokenizer = None
        self._lock = threading.Lock()

    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is None:
                folder, manifest = ensure_export(self.name, self.models_dir, self.backend, log=self._log)
                self._open(folder, manifest)

    def open_files(self, folder: Path, manifest: dict) -> None:
        """Use the export in ``folder`` as it is, unchecked (the exporter's own check runs this way)."""
        with self._lock:
            self._open(folder, manifest)

    def _open(self, folder: Path, manifest: dict) -> None:
        ort = require_onnxruntime(self.backend)
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(resolve_model_path(self.name) / "tokenizer.json"))
        tokenizer.enable_truncation(max_length=int(manifest["max_seq_length"]))
        tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads or 0
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only
        # Spinning threads burn CPU waiting for work: on a shared machine that is other people's CPU.
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if self.spinning else "0")
        path = folder / manifest["files"][self.backend]["file"]
        try:
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own exception types
            raise ModelIntegrityError(f"onnxruntime cannot load {path}: {' '.join(str(exc).split())[:300]}",
                                      hint="export it again: `reagent models export-embedder --force`") from None
        self._tokenizer, self.export, self._session = tokenizer, manifest, session

    @property
    def dimension(self) -> int:
        """Length of the vectors this embedder returns."""
        if self.export is None and self.name in KNOWN_DIMENSIONS:
            return KNOWN_DIMENSIONS[self.name]
        self._load()
        return int(self.export["dimension"])

    def record(self) -> dict:
        """What an index manifest records about this embedder's files (after it has encoded)."""
        if self.export is None:
            return {}
        entry = self.export["files"][self.backend]
        return {"onnx_file": entry["file"], "onnx_sha256": entry["sha256"],
                "source_weights_sha256": self.export["source"]["weights_sha256"]}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` as a (len(texts), dimension) float32 array, rows of norm 1."""
        self._load()
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(-lengths, kind="stable")  # similar lengths share a batch: little padding
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            width = int(lengths[rows].max())
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for i, row in enumerate(rows):
                n = lengths[row]
                ids[i, :n] = encodings[row].ids
                mask[i, :n] = 1
            out[rows] = self._session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return out
