"""Model processes share the cores: the fair split, the machine's registry, and llama.cpp's threads between calls."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reagent_local.runtime import cores
from reagent_local.runtime.cores import CoreShare, Member, fair_threads, read_members


def member(pid: int, *, busy: bool = True, since: float = 0.0, fixed: int | None = None) -> Member:
    return Member(pid=pid, proc_start=None, fixed_threads=fixed, busy=busy, since=since)


@pytest.mark.parametrize("cores_, others, mine", [
    (2, [], 2),  # alone: every core
    (2, [member(2)], 1),  # two on two cores: one each
    (2, [member(2), member(3)], 1),  # never fewer than one
    (4, [member(2), member(3)], 2),  # 4 cores, 3 processes: the lowest pid gets the extra core
    (4, [member(2, fixed=1)], 3),  # a process with a fixed count keeps it; the rest is shared
    (2, [member(2, busy=False, since=-100.0)], 2),  # an idle process (a notebook between questions) takes nothing
    (2, [member(2, busy=False, since=-1.0)], 1),  # idle for a moment: still counted (its next call is near)
])
def test_fair_threads_splits_the_cores_among_the_busy_processes(cores_, others, mine):
    me = member(1)
    assert fair_threads(cores_, 1, [me, *others], now=0.0) == mine


def test_the_split_adds_up_to_the_cores():
    members = [member(pid) for pid in (11, 12, 13)]
    assert sum(fair_threads(8, m.pid, members, now=0.0) for m in members) == 8


@pytest.fixture
def other_process():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield child.pid
    child.kill()
    child.wait()


def test_the_registry_follows_processes_as_they_start_and_end(tmp_path, other_process, monkeypatch):
    mine = CoreShare(model="m", folder=tmp_path, cores=2)
    other = CoreShare(model="m", folder=tmp_path, cores=2, pid=other_process)
    mine.register()
    assert mine.begin().threads == 2 and mine.begin().others == 0  # alone
    mine.end()
    other.begin()  # the other process is in a call
    share = mine.begin()
    assert (share.threads, share.others) == (1, 1)
    other.end()
    monkeypatch.setattr(cores, "HOLD_SECONDS", 0.0)  # the other's hold has passed
    assert mine.begin().threads == 2
    other.unregister()
    assert {m.pid for m in read_members(tmp_path)} == {mine.pid}


def test_a_killed_process_file_is_ignored_and_removed(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: its pid is gone
    dead = tmp_path / f"{child.pid}.json"
    dead.write_text(json.dumps({"pid": child.pid, "proc_start": 1, "busy": True, "since": time.time()}))
    (tmp_path / "garbage.json").write_text("{not json")
    assert read_members(tmp_path) == []
    assert not dead.exists()


def test_a_registry_that_cannot_be_written_costs_fairness_not_the_call(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    share = CoreShare(model="m", folder=blocked / "cores", cores=2)
    assert share.begin().threads == 2
    share.end()
    share.unregister()


def test_the_model_changes_llama_cpp_threads_between_calls(tmp_path, monkeypatch, other_process):
    llama_cpp = pytest.importorskip("llama_cpp")
    from reagent_local.runtime.llm import LlamaModel

    calls = []
    monkeypatch.setattr(llama_cpp, "llama_set_n_threads", lambda ctx, n, nb: calls.append((ctx, n, nb)))

    class FakeLlama:
        ctx = "ctx"

    model = LlamaModel(Path("unused.gguf"))
    model._cores = CoreShare(model="m", folder=tmp_path, cores=2)
    model._threads = 2
    assert model._take_share(FakeLlama()) == 2 and calls == []  # alone: unchanged, no call into llama.cpp
    model._cores.end()
    CoreShare(model="m", folder=tmp_path, cores=2, pid=other_process).begin()
    assert model._take_share(FakeLlama()) == 1
    assert calls == [("ctx", 1, 1)]


def test_passive_waiting_is_set_before_llama_cpp_starts_unless_the_user_chose(monkeypatch):
    from reagent_local.runtime import openmp

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delitem(sys.modules, "llama_cpp", raising=False)
    assert openmp.prefer_passive_wait() and openmp.wait_policy() == "PASSIVE"
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert not openmp.prefer_passive_wait() and openmp.wait_policy() == "ACTIVE"
    monkeypatch.delenv("OMP_WAIT_POLICY")
    monkeypatch.setenv("GOMP_SPINCOUNT", "300000")  # GNU OpenMP's own default, as before
    assert not openmp.prefer_passive_wait() and "OMP_WAIT_POLICY" not in os.environ
    assert openmp.wait_policy() == "default, spin 300000"
