"""Export a local SentenceTransformer (MiniLM) to ONNX, offline: fp32 and int8, checked against PyTorch.

The graph is the transformer, mean pooling over the attention mask and L2
normalisation, with inputs ``input_ids`` and ``attention_mask`` (batch and sequence
dynamic) and output ``sentence_embedding``. Steps: ``torch.onnx.export`` (the
TorchScript exporter, eager attention so that onnxruntime's BERT optimizer can fuse
it), ``onnxruntime.transformers.optimizer`` (Attention, SkipLayerNorm, BiasGelu
fusions) -> ``model-fp32.onnx``; ``quantize_dynamic`` (int8 weights per channel,
activations quantised per batch; MatMul and Attention only, embeddings stay fp32)
-> ``model-int8.onnx``. Both files are then run on CHECK_TEXTS next to PyTorch; an
export whose vectors do not agree (cosine below MIN_COSINE) is refused.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
import warnings
from importlib import metadata
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..errors import ConfigError, ModelIntegrityError
from ..paths import file_sha256
from .embed_model import Embedder, resolve_model_path

EXPORT_FORMAT = 1
MANIFEST = "export.json"
# backend name -> (precision, file in the export folder)
FILES = {"onnx": "model-fp32.onnx", "onnx-int8": "model-int8.onnx"}
# encodes texts with one backend's file of an export (folder and manifest): how an export is checked
Encode = Callable[[str, Path, dict, Sequence[str]], np.ndarray]
OPSET = 17
# The lowest cosine to PyTorch's vector each file must reach on every check text.
# Measured on 1,971 HotpotQA passages: fp32 >= 0.99999, int8 >= 0.987 (docs/retrieval.md).
MIN_COSINE = {"onnx": 0.999, "onnx-int8": 0.98}
QUANTIZATION = {"method": "onnxruntime.quantization.quantize_dynamic", "weight_type": "QInt8", "per_channel": True,
                "reduce_range": False, "op_types": ["MatMul", "Attention"], "activations": "uint8, per batch"}
# Real text of the kinds the index sees: questions, passages (title first), one past 256 tokens.
# (An empty text, which neither queries nor passages are, gives 0.974 with int8.)
CHECK_TEXTS = [
    "Who directed the film Actrius?",
    "Which magazine was started first, Arthur's Magazine or First for Women?",
    "What nationality was the director of the film whose composer was born in 1946?",
    "Actrius\nActrius (Catalan: Actrius) is a 1996 film directed by Ventura Pons. In the film, there are no male actors "
    "and the four leading actresses dubbed themselves in the Castilian version.",
    "Arthur's Magazine\nArthur's Magazine (1844-1846) was an American literary periodical published in Philadelphia "
    "in the 19th century. Edited by T.S. Arthur, it featured work by Edgar A. Poe, J.H. Ingraham and others.",
    "Jeff Porcaro\nJeffrey Thomas Porcaro (April 1, 1954 - August 5, 1992) was an American drummer, songwriter, and "
    "record producer, best known for his work with the rock band Toto.",
    "Alchemy\nAlchemy is an ancient branch of natural philosophy, a philosophical and protoscientific tradition "
    "practiced throughout Europe, Africa, and Asia. " * 12,
    "Anarchism is a political philosophy and movement that is sceptical of authority.",
    "Paris",
]


def weights_file(folder: Path) -> Path:
    """The weights file of a SentenceTransformer folder (safetensors, else a PyTorch .bin)."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (folder / name).is_file():
            return folder / name
    raise ConfigError(f"{folder} holds neither model.safetensors nor pytorch_model.bin",
                      hint="point retrieval.embedder at a saved SentenceTransformer folder")


def check_pooling(folder: Path) -> None:
    """Refuse models the exported graph would get wrong: only mean pooling is built in."""
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8")) if (folder / "modules.json").is_file() else []
    for module in modules:
        if module.get("type", "").endswith("Pooling"):
            config = json.loads((folder / module["path"] / "config.json").read_text(encoding="utf-8"))
            modes = sorted(k for k, v in config.items() if k.startswith("pooling_mode") and v)
            if modes != ["pooling_mode_mean_tokens"]:
                raise ConfigError(f"the ONNX export supports mean pooling only; {folder} pools by {modes}",
                                  hint="set retrieval.embedder_backend = \"torch\" for this model")


def _versions() -> dict[str, str]:
    out = {}
    for name in ("torch", "transformers", "sentence-transformers", "onnx", "onnxruntime"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _export_graph(transformer, path: Path) -> None:
    """torch.onnx.export of transformer + mean pooling + normalisation, batch and length dynamic."""
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self, model) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask,
                                token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    if hasattr(transformer, "set_attn_implementation"):  # SDPA's graph is one the optimizer cannot fuse
        transformer.set_attn_implementation("eager")
    else:
        transformer.config._attn_implementation = "eager"
    sample = torch.ones((2, 16), dtype=torch.long)
    axes = {"batch": 0, "sequence": 1}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and tracer notes
        torch.onnx.export(Pooled(transformer.eval()), (sample, sample), str(path), dynamo=False, opset_version=OPSET,
                          input_names=["input_ids", "attention_mask"], output_names=["sentence_embedding"],
                          dynamic_axes={"input_ids": {v: k for k, v in axes.items()},
                                        "attention_mask": {v: k for k, v in axes.items()},
                                        "sentence_embedding": {0: "batch"}})


def _optimize(raw: Path, out: Path, config) -> dict:
    """onnxruntime's BERT fusions; returns the fused operator counts."""
    from onnxruntime.transformers import optimizer

    model = optimizer.optimize_model(str(raw), model_type="bert", num_heads=int(config.num_attention_heads),
                                     hidden_size=int(config.hidden_size))
    model.save_model_to_file(str(out))
    return {k: v for k, v in model.get_fused_operator_statistics().items() if v}


def _quantize(fp32: Path, out: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    logging.disable(logging.WARNING)  # quantize_dynamic's "consider pre-processing" note on the root logger
    try:
        quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, per_channel=True,
                         op_types_to_quantize=QUANTIZATION["op_types"],
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    finally:
        logging.disable(logging.NOTSET)


def _dimension(model) -> int:
    getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(getter())


def _agreement(reference: np.ndarray, vectors: np.ndarray) -> dict:
    cosines = (reference * vectors).sum(axis=1)
    return {"min_cosine": round(float(cosines.min()), 6), "mean_cosine": round(float(cosines.mean()), 6),
            "texts": len(cosines), "cosines": [round(float(c), 6) for c in cosines]}


def export_embedder(name: str, folder: Path, encode: Encode) -> dict:
    """Export embedder ``name`` into ``folder`` (replacing it); returns the manifest written there.

    Reads only local files (the SentenceTransformer folder); needs torch, onnx and
    onnxruntime. The caller holds the export lock. ``encode`` runs each new file on the
    check texts (the ONNX embedder's own code path, onnx_embed.py).
    """
    began = time.perf_counter()
    source = resolve_model_path(name)
    weights = weights_file(source)
    check_pooling(source)
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f".{folder.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        model = Embedder(name).model
        transformer = model[0].auto_model
        _export_graph(transformer, tmp / "raw.onnx")
        fused = _optimize(tmp / "raw.onnx", tmp / FILES["onnx"], transformer.config)
        (tmp / "raw.onnx").unlink()
        _quantize(tmp / FILES["onnx"], tmp / FILES["onnx-int8"])
        stat = weights.stat()
        manifest = {
            "format": EXPORT_FORMAT, "embedder": name,
            "source": {"path": str(source), "weights": weights.name, "weights_sha256": file_sha256(weights),
                       "weights_bytes": stat.st_size, "weights_mtime_ns": stat.st_mtime_ns,
                       "tokenizer_sha256": file_sha256(source / "tokenizer.json")},
            "dimension": _dimension(model), "max_seq_length": int(model.max_seq_length),
            "pooling": "mean", "normalized": True, "opset": OPSET,
            "exporter": "torch.onnx.export (TorchScript, dynamo=False), eager attention",
            "fused_operators": fused,
            "files": {backend: {"file": file, "bytes": (tmp / file).stat().st_size, "sha256": file_sha256(tmp / file),
                                "quantization": QUANTIZATION if backend == "onnx-int8" else None}
                      for backend, file in FILES.items()},
            "versions": _versions(), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        reference = model.encode(CHECK_TEXTS, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        manifest["agreement"] = {}
        for backend in FILES:
            manifest["agreement"][backend] = _agreement(reference, encode(backend, tmp, manifest, CHECK_TEXTS))
        manifest["seconds"] = round(time.perf_counter() - began, 1)
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        for backend, minimum in MIN_COSINE.items():
            if manifest["agreement"][backend]["min_cosine"] < minimum:
                raise ModelIntegrityError(
                    f"the {backend} export of {name} disagrees with PyTorch: cosine "
                    f"{manifest['agreement'][backend]['min_cosine']:.4f} < {minimum} on a check text",
                    hint="set retrieval.embedder_backend = \"torch\" (REAGENT_RETRIEVAL_EMBEDDER_BACKEND=torch)")
        old = folder.parent / f".{folder.name}.old-{os.getpid()}"
        if folder.exists():
            os.replace(folder, old)
        os.replace(tmp, folder)
        shutil.rmtree(old, ignore_errors=True)
        return manifest
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
