"""Benchmark records under faults: torn last lines, writers killed at many points, two runs
into one folder, a full disk. Records must be neither lost nor duplicated."""

from __future__ import annotations

import errno
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from process_support import held_lock

from reagent_local.bench import records as records_module
from reagent_local.bench.records import RECORDS_FILE, RecordStore, read_records
from reagent_local.bench.rundir import LOCK_FILE
from reagent_local.errors import BenchRunError


def _record(i: int) -> dict:
    return {"method": "rag", "id": f"q{i}", "prediction": "x" * (i % 7), "em": 1.0}


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize("tail", [b'{"method":"rag","id":"q2","predic', b'{"method":"rag","id":"q2"}', b"{"])
def test_a_torn_last_line_is_truncated_away_and_redone(tmp_path: Path, tail: bytes) -> None:
    path = tmp_path / RECORDS_FILE
    with RecordStore(path) as store:
        store.append(_record(0))
        store.append(_record(1))
    path.write_bytes(path.read_bytes() + tail)  # killed while writing the third line (no newline yet)
    with RecordStore(path) as store:
        assert store.dropped_torn_line and [r["id"] for r in store.records] == ["q0", "q1"]
        assert not path.read_bytes().endswith(tail)  # truncated on open, before anything is appended
        store.append(_record(2))
    assert [json.loads(line)["id"] for line in _lines(path)] == ["q0", "q1", "q2"]
    assert all(line.endswith(b"\n") for line in _lines(path))


def test_a_clean_file_is_not_touched(tmp_path: Path) -> None:
    path = tmp_path / RECORDS_FILE
    with RecordStore(path) as store:
        store.append(_record(0))
    before = path.read_bytes()
    with RecordStore(path) as store:
        assert not store.dropped_torn_line and len(store.records) == 1
    assert path.read_bytes() == before


# A writer that appends numbered records until killed, continuing from what the file holds.
WRITER = r'''
import sys, time
from reagent_local.bench.records import RecordStore
with RecordStore(sys.argv[1]) as store:
    i = len(store.records)
    print(i, flush=True)
    while True:
        store.append({"method": "rag", "id": f"q{i}", "prediction": "y" * (i * 37 % 5000)})
        i += 1
'''


def test_writers_killed_at_many_points_neither_lose_nor_duplicate(tmp_path: Path) -> None:
    path = tmp_path / RECORDS_FILE
    rng = random.Random(7)
    confirmed = 0
    for _ in range(8):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
        start = int(proc.stdout.readline())
        assert start >= confirmed  # what an earlier writer fsynced is still there
        time.sleep(rng.uniform(0.0, 0.15))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        records = read_records(path)
        ids = [r["id"] for r in records]
        assert ids == [f"q{i}" for i in range(len(ids))]  # contiguous: nothing lost, nothing twice
        confirmed = len(ids)
    assert confirmed > 0
    with RecordStore(path) as store:  # whatever the last kill tore is dropped, and the file is whole again
        assert len(store.records) == confirmed
    assert all(line.endswith(b"\n") for line in _lines(path))


def test_a_full_disk_while_appending_leaves_no_torn_line(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / RECORDS_FILE
    store = RecordStore(path)
    store.append(_record(0))
    real_write = os.write

    def half_then_full(fd: int, data: bytes) -> int:
        if len(data) > 10:
            return real_write(fd, data[: len(data) // 2])  # short writes ...
        raise OSError(errno.ENOSPC, "No space left on device")  # ... then the disk is full

    monkeypatch.setattr(records_module.os, "write", half_then_full)
    with pytest.raises(BenchRunError, match="disk full while writing") as err:
        store.append(_record(1))
    assert "--resume" in str(err.value)
    monkeypatch.undo()
    store.close()
    assert [json.loads(line)["id"] for line in _lines(path)] == ["q0"]


# --------------------------------------------------------------------- two runs into one folder



def test_a_second_run_into_a_busy_folder_fails_naming_the_holder(driver: dict, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with held_lock(out / LOCK_FILE, "bench run into run") as holder:
        for resume in (False, True):
            with pytest.raises(BenchRunError) as err:
                driver["run"](driver["data"], out, resume=resume)
            assert f"{out} is in use: process {holder.pid}" in str(err.value) and "--out" in str(err.value)
        assert [p.name for p in out.iterdir()] == [LOCK_FILE]  # it wrote nothing
    outcome = driver["run"](driver["data"], out)  # the holder is gone: the folder is free (and counts as empty)
    assert outcome.new_records == 18


def test_two_run_processes_into_one_folder_then_a_kill_and_resume(driver: dict, tmp_path: Path) -> None:
    out = tmp_path / "run"
    command = [sys.executable, str(driver["script"]), str(driver["data"]), str(out)]
    gate = tmp_path / "hold"  # while it exists the first run waits at its next model call: no race with a slow start
    first = subprocess.Popen(command, env={**os.environ, "BENCH_SLOW": "0.05", "BENCH_GATE": str(gate)})
    path = out / RECORDS_FILE
    deadline = time.monotonic() + 60
    while not (path.exists() and path.read_bytes().count(b"\n") >= 2):
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.02)
    gate.touch()
    second = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=60)
    assert second.returncode != 0 and f"is in use: process {first.pid}" in second.stderr
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    partial = read_records(path)
    assert 2 <= len(partial) < 18
    resumed = driver["run"](driver["data"], out, resume=True)  # the kernel freed the killed run's lock
    records = read_records(path)
    assert resumed.resumed_records == len(partial) and len(records) == 18
    assert len({(r["method"], r["id"]) for r in records}) == 18
