"""`index watch` on a real temporary folder; index states and their fixes; progress lines without a terminal;
rates only when meaningful; the warning about a file far larger than the rest. The hash embedder: no model."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path

from click.testing import CliRunner
from docs_support import hash_config

from reagent_local.cli import cli
from reagent_local.locks import FileLock
from reagent_local.retrieval import Index, build_index
from reagent_local.retrieval.estimate import warn_large_files
from reagent_local.retrieval.layout import building_dir, lock_path
from reagent_local.retrieval.progress import LineReporter, meaningful_rate, reporter
from reagent_local.retrieval.status import BUILDING, INTERRUPTED, READY, index_status, statuses
from reagent_local.retrieval.watch import watch_index


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "notes"
    docs.mkdir()
    (docs / "kettle.md").write_text("# Kettle\n\nDescale the kettle every month with vinegar.\n", encoding="utf-8")
    return docs


def _watch_in_thread(config, logs: list[str], **options) -> tuple[threading.Thread, dict]:
    box: dict = {}
    thread = threading.Thread(target=lambda: box.update(result=watch_index("notes", config, progress=False,
                                                                           log=logs.append, **options)))
    thread.start()
    deadline = time.monotonic() + 60
    while not any(line.startswith("watching") for line in logs):
        assert thread.is_alive() and time.monotonic() < deadline, logs
        time.sleep(0.05)
    time.sleep(0.3)  # the watcher is registered once watch() runs; give it a moment
    return thread, box


def test_watch_updates_the_index_after_a_change_and_stops_once(tmp_path: Path) -> None:
    docs, config = _folder(tmp_path), hash_config(tmp_path)
    build_index(docs, "notes", config, progress=False)
    logs: list[str] = []
    thread, box = _watch_in_thread(config, logs, settle=0.3, once=True, timeout=60)
    (docs / "roof.md").write_text("# Roof\n\nThe workshop roof leaks when it rains.\n", encoding="utf-8")
    thread.join(90)
    assert not thread.is_alive()
    result = box["result"]
    assert (result.updates, result.failed) == (2, 0)  # the catch-up, then the change
    assert result.stopped.startswith("once") and any("roof.md" in line for line in logs)
    with Index.open("notes", config) as index:
        assert index.search("roof leaks", k=1, mode="sparse")[0].passage.origin.path == "roof.md"
    assert index_status(config, "notes").state == READY


def test_watch_ignores_hidden_files_and_stops_at_its_timeout(tmp_path: Path) -> None:
    docs, config = _folder(tmp_path), hash_config(tmp_path)
    build_index(docs, "notes", config, progress=False)
    logs: list[str] = []
    thread, box = _watch_in_thread(config, logs, settle=0.2, timeout=3)
    (docs / ".scratch.md").write_text("# Scratch\n\nnot for the index\n", encoding="utf-8")
    thread.join(60)
    assert box["result"].updates == 1 and box["result"].stopped == "time is up"


def test_watch_command_runs_for_its_timeout(tmp_path: Path, monkeypatch) -> None:
    docs, config = _folder(tmp_path), hash_config(tmp_path)
    build_index(docs, "notes", config, progress=False)
    monkeypatch.setenv("REAGENT_HOME", str(config.paths.home))
    monkeypatch.setenv("REAGENT_RETRIEVAL_EMBEDDER", "hash-64")
    result = CliRunner().invoke(cli, ["index", "watch", "notes", "--timeout", "1", "--quiet"])
    assert result.exit_code == 0, result.output
    assert "stopped watching notes (time is up): 1 update" in result.output


def test_states_building_interrupted_ready_each_with_its_fix(tmp_path: Path, monkeypatch) -> None:
    docs, config = _folder(tmp_path), hash_config(tmp_path)
    build_index(docs, "notes", config, progress=False)
    assert index_status(config, "notes").state == READY
    # a first build running now: its lock held, its folder there
    building_dir(config, "fresh").mkdir(parents=True)
    lock = FileLock(lock_path(config, "fresh"), purpose="building index fresh")
    lock.acquire()
    try:
        status = index_status(config, "fresh")
        assert status.state == BUILDING and not status.answers and status.fix is None
        assert "is building it" in status.detail
    finally:
        lock.close()
    # the same build killed: its folder and recorded command left, nobody holding the lock
    (building_dir(config, "fresh") / "build-state.json").write_text(
        json.dumps({"command": f"reagent index build {docs} --name fresh"}), encoding="utf-8")
    status = index_status(config, "fresh")
    assert status.state == INTERRUPTED and status.fix == f"reagent index build {docs} --name fresh"
    # an update killed: the old index answers, and the fix is `index update`, not a refused `index build`
    building_dir(config, "notes").mkdir()
    status = index_status(config, "notes")
    assert (status.state, status.answers, status.fix) == (INTERRUPTED, True, "reagent index update notes")
    assert {s.name: s.state for s in statuses(config)} == {"fresh": INTERRUPTED, "notes": INTERRUPTED}
    monkeypatch.setenv("REAGENT_HOME", str(config.paths.home))
    listed = CliRunner().invoke(cli, ["index", "list"])
    assert "fix: `reagent index update notes`" in listed.output and "--name fresh`" in listed.output
    shown = CliRunner().invoke(cli, ["index", "info", "notes"])
    assert "state      interrupted" in shown.output and "reagent index update notes" in shown.output


def test_progress_lines_without_a_terminal_and_only_meaningful_rates() -> None:
    assert meaningful_rate(7_362, 0.001) is None and meaningful_rate(0, 10) is None
    assert meaningful_rate(100, 4.0) == 25.0
    stream = io.StringIO()
    with reporter(True, stream=stream) as report:
        assert isinstance(report, LineReporter)  # not a terminal: lines, not a bar
    lines = LineReporter(stream, period=0)
    handle = lines.step("embedding passages", 100, "passages")
    lines.skip(handle, 60)  # done before: counted, not in the rate
    lines.advance(handle, 10)
    lines.finish(handle)
    out = stream.getvalue().splitlines()
    assert out[0].startswith("embedding passages: 70/100 passages (70%), 60 already done in 0 s")
    assert "passages/s" not in stream.getvalue()  # 10 passages in a few microseconds: no rate printed
    assert out[-1].startswith("embedding passages: done, 70 passages, 60 already done")


def test_a_file_far_larger_than_the_rest_is_named_with_its_size_and_a_time() -> None:
    files = [("a.md", 4_000), ("b.md", 6_000), ("dump/log.txt", 50 << 20)]
    warnings = warn_large_files(files, "onnx-int8")
    assert len(warnings) == 1 and warnings[0].startswith("warning: dump/log.txt is 50.0 MB")
    assert "min" in warnings[0] and "--exclude" in warnings[0]
    assert warn_large_files([("a.txt", 40 << 20), ("b.txt", 45 << 20)], "onnx-int8") == []  # none stands out
    assert warn_large_files(files, "hash-64") == []  # no known rate: no guess
