"""The ONNX Runtime embedder: export manifest, vectors against PyTorch's, damaged or missing pieces, index checks.

One real export (about 30 s on 2 busy cores) into a temporary models folder serves the
module; throughput is measured by scripts/bench_embed.py, not here.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from reagent_local.config import load_config
from reagent_local.errors import ConfigError, IndexMismatchError, ModelIntegrityError
from reagent_local.paths import file_sha256
from reagent_local.retrieval import Index, build_index
from reagent_local.retrieval import onnx_export
from reagent_local.retrieval.embed import Embedder, make_embedder, resolve_model_path, vectors_agree
from reagent_local.retrieval.index import check_embedder
from reagent_local.retrieval.onnx_embed import MANIFEST, OnnxEmbedder, ensure_export, export_folder, export_problem, read_export

NAME = "all-MiniLM-L6-v2"
SENTENCES = [
    "Who directed the film Actrius?",
    "Which state's capital is Montgomery?",
    "Actrius\nActrius is a 1996 film directed by Ventura Pons. In the film, there are no male actors.",
    "Alabama\nAlabama is a state in the southeastern region of the United States. Its capital is Montgomery.",
    "Albedo\nAlbedo is the measure of the diffuse reflection of solar radiation out of the total solar radiation. " * 15,
]


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("models")
    ensure_export(NAME, folder, "onnx-int8", log=lambda _m: None)
    return folder


@pytest.fixture(scope="module")
def torch_vectors() -> np.ndarray:
    return Embedder().encode(SENTENCES)


def _copy_export(models_dir: Path, tmp_path: Path) -> Path:
    target = tmp_path / "models"
    shutil.copytree(models_dir, target)
    return target


def test_export_manifest_records_source_opset_quantisation_and_files(models_dir):
    folder = export_folder(models_dir, NAME)
    manifest = json.loads((folder / MANIFEST).read_text())
    weights = resolve_model_path(NAME) / "model.safetensors"
    assert manifest["source"]["weights_sha256"] == file_sha256(weights)
    assert manifest["opset"] == onnx_export.OPSET and manifest["dimension"] == 384 and manifest["max_seq_length"] == 256
    assert manifest["files"]["onnx-int8"]["quantization"]["per_channel"] is True
    assert manifest["files"]["onnx"]["quantization"] is None
    for entry in manifest["files"].values():
        assert (folder / entry["file"]).stat().st_size == entry["bytes"]
        assert file_sha256(folder / entry["file"]) == entry["sha256"]
    assert manifest["fused_operators"].get("Attention") == 6  # the optimizer fused every layer's attention
    assert manifest["agreement"]["onnx"]["min_cosine"] > 0.9999
    assert manifest["agreement"]["onnx-int8"]["min_cosine"] >= onnx_export.MIN_COSINE["onnx-int8"]
    assert sorted(p.name for p in folder.iterdir()) == [MANIFEST, "model-fp32.onnx", "model-int8.onnx"]


@pytest.mark.parametrize("backend, minimum", [("onnx", 0.9999), ("onnx-int8", 0.98)])
def test_vectors_agree_with_pytorch(models_dir, torch_vectors, backend, minimum):
    embedder = OnnxEmbedder(NAME, backend=backend, models_dir=models_dir)
    vectors = embedder.encode(SENTENCES)
    assert vectors.shape == (len(SENTENCES), 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert (vectors * torch_vectors).sum(axis=1).min() > minimum
    assert embedder.encode([]).shape == (0, 384)


def test_batching_and_padding_do_not_change_vectors(models_dir):
    embedder = OnnxEmbedder(NAME, backend="onnx", models_dir=models_dir, batch_size=2)
    together = embedder.encode(SENTENCES)
    alone = np.vstack([embedder.encode([s]) for s in SENTENCES])
    assert np.abs(together - alone).max() < 1e-5


def test_missing_onnxruntime_is_a_clear_error(models_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime now raises ImportError
    with pytest.raises(ConfigError) as caught:
        OnnxEmbedder(NAME, backend="onnx-int8", models_dir=models_dir).encode(["x"])
    assert "pip install onnxruntime" in caught.value.hint and "REAGENT_RETRIEVAL_EMBEDDER_BACKEND=torch" in caught.value.hint


def test_damaged_truncated_and_stale_exports_are_found(models_dir, tmp_path):
    folder = export_folder(_copy_export(models_dir, tmp_path), NAME)
    weights = resolve_model_path(NAME) / "model.safetensors"
    manifest = read_export(folder)
    assert export_problem(folder, manifest, "onnx-int8", weights) is None
    file = folder / "model-int8.onnx"
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one byte flipped in the weights: same size
    file.write_bytes(bytes(data))
    assert "damaged" in export_problem(folder, manifest, "onnx-int8", weights)
    file.write_bytes(bytes(data[:1000]))
    assert "1,000 bytes" in export_problem(folder, manifest, "onnx-int8", weights)
    assert export_problem(folder, manifest, "onnx", weights) is None  # the fp32 file is intact
    stale = dict(manifest, source=dict(manifest["source"], weights_sha256="0" * 64, weights_mtime_ns=0))
    assert "changed since the export" in export_problem(folder, stale, "onnx", weights)
    (folder / MANIFEST).write_text("{not json")
    assert "unreadable" in export_problem(folder, read_export(folder), "onnx", weights)


def test_a_damaged_export_is_exported_again_and_said(models_dir, tmp_path, monkeypatch):
    target = _copy_export(models_dir, tmp_path)
    folder = export_folder(target, NAME)
    file = folder / "model-int8.onnx"
    data = bytearray(file.read_bytes())
    data[-100] ^= 0xFF
    file.write_bytes(bytes(data))
    good = export_folder(models_dir, NAME)
    exported = []

    def fake_export(name: str, into: Path, encode) -> dict:  # the real one takes ~30 s; its result is tested above
        exported.append(name)
        shutil.rmtree(into)
        shutil.copytree(good, into)
        return read_export(into)

    monkeypatch.setattr(onnx_export, "export_embedder", fake_export)
    said = []
    OnnxEmbedder(NAME, backend="onnx-int8", models_dir=target, log=said.append).encode(["Paris"])
    assert exported == [NAME] and "damaged" in said[0]
    assert file_sha256(file) == read_export(folder)["files"]["onnx-int8"]["sha256"]


def test_an_unloadable_file_names_it_and_the_fix(models_dir, tmp_path):
    folder = export_folder(_copy_export(models_dir, tmp_path), NAME)
    manifest = read_export(folder)
    (folder / "model-int8.onnx").write_bytes(b"not an onnx graph")
    with pytest.raises(ModelIntegrityError) as caught:
        OnnxEmbedder(NAME, backend="onnx-int8", models_dir=tmp_path).open_files(folder, manifest)
    assert "model-int8.onnx" in caught.value.message and "export-embedder --force" in caught.value.hint


def test_an_unwritable_models_folder_is_refused_with_what_to_do(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the models folder should be")
    with pytest.raises(ModelIntegrityError) as caught:
        ensure_export(NAME, blocker, "onnx", log=lambda _m: None)
    assert "not writable" in caught.value.message and "REAGENT_RETRIEVAL_EMBEDDER_BACKEND=torch" in caught.value.hint


def test_backend_setting_is_checked():
    with pytest.raises(ConfigError):
        load_config(env={"REAGENT_RETRIEVAL_EMBEDDER_BACKEND": "tensorrt"})
    assert load_config(env={"REAGENT_RETRIEVAL_EMBEDDER_BACKEND": "onnx"}).retrieval.embedder_backend == "onnx"
    with pytest.raises(ConfigError):
        make_embedder(NAME, backend="tensorrt", models_dir=Path("."))


def test_index_backend_checks():
    where = Path("/indexes/x")
    legacy = {"embedder": {"name": NAME, "dimension": 384}}  # built before backends were recorded: PyTorch
    check_embedder(legacy, NAME, 384, where, "onnx")  # fp32 ONNX gives PyTorch's vectors
    check_embedder({"embedder": {"name": NAME, "dimension": 384, "backend": "onnx"}}, NAME, 384, where, "torch")
    check_embedder({"embedder": {"name": "hash-64", "dimension": 64, "backend": "hash"}}, "hash-64", 64, where, "onnx-int8")
    backends = ("torch", "onnx", "onnx-int8", "onnx-fp16")  # the last as a newer version might write it
    refused = []
    for built, query in [(b, q) for b in backends for q in backends[:3]]:
        manifest = {"embedder": {"name": NAME, "dimension": 384, "backend": built}}
        if vectors_agree(built, query):
            check_embedder(manifest, NAME, 384, where, query)
            continue
        with pytest.raises(IndexMismatchError) as caught:
            check_embedder(manifest, NAME, 384, where, query)
        assert f"REAGENT_RETRIEVAL_EMBEDDER_BACKEND={built}" in caught.value.hint and "--force" in caught.value.hint
        refused.append((built, query))
    assert refused == [("onnx-fp16", "torch"), ("onnx-fp16", "onnx"), ("onnx-fp16", "onnx-int8")]


def test_an_index_records_its_backend_and_is_searched_through_it(models_dir, tmp_path):
    docs = [("Actrius", "Actrius is a 1996 Catalan drama film directed by Ventura Pons."),
            ("Alabama", "Alabama is a state in the southeastern United States. Its capital is Montgomery."),
            ("Albedo", "Albedo is the fraction of sunlight that a surface reflects.")]
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in docs), encoding="utf-8")
    config = load_config({"paths.home": str(tmp_path / "home"), "paths.models_dir": str(models_dir),
                          "retrieval.embedder_backend": "onnx-int8"}, env={})
    path = build_index(source, "small", config, kg=False, progress=False)
    recorded = json.loads((path / "manifest.json").read_text())["embedder"]
    assert recorded["backend"] == "onnx-int8" and recorded["name"] == NAME
    assert recorded["onnx_sha256"] == read_export(export_folder(models_dir, NAME))["files"]["onnx-int8"]["sha256"]
    with Index.open("small", config) as index:
        assert index.search("Who directed Actrius?", k=1, mode="dense")[0].passage.title == "Actrius"
    for other in ("torch", "onnx"):
        other_config = load_config({"paths.home": str(tmp_path / "home"), "retrieval.embedder_backend": other}, env={})
        if vectors_agree("onnx-int8", other):
            Index.open("small", other_config).close()
        else:
            with pytest.raises(IndexMismatchError):
                Index.open("small", other_config)
