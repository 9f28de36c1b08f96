"""A machine's identity: what it holds, and which parts its short id hashes."""

from __future__ import annotations

from pathlib import Path

import pytest

from reagent_local.runtime import identity
from reagent_local.runtime.identity import describe_machine, machine_id, machine_identity
from reagent_local.runtime.llm import LlamaModel
from reagent_local.runtime.load_probe import LoadVerdict
from reagent_local.testing import ScriptedLLM

BASE = {"cpu": "Intel Xeon", "flags": ["avx2", "avx512f"], "llama_cpp": "0.3.36", "system_info": "AVX2 = 1",
        "extra_buffers": False, "threads": 2, "host": "a", "openmp": {"wait_policy": "PASSIVE", "env": {}}}


def test_the_id_hashes_what_changes_answers_and_not_the_host_threads_or_openmp() -> None:
    assert len(machine_id(BASE)) == 12
    same = {**BASE, "host": "b", "threads": 1, "openmp": {"wait_policy": "default", "env": {"GOMP_SPINCOUNT": "1"}}}
    assert machine_id(same) == machine_id(BASE)
    for key, value in (("cpu", "AMD EPYC"), ("flags", ["avx2"]), ("llama_cpp", "0.3.37"),
                       ("system_info", "AVX2 = 1 | AMX_INT8 = 1"), ("extra_buffers", True)):
        assert machine_id({**BASE, key: value}) != machine_id(BASE), key


def test_identity_of_a_scripted_model_names_this_machine() -> None:
    found = machine_identity(ScriptedLLM())
    assert found["machine_id"] == machine_id(found) and found["host"]
    assert found["via"] == "ScriptedLLM" and found["threads"] is None and found["extra_buffers"] is None
    assert found["cpu"] and isinstance(found["flags"], list)
    assert "wait_policy" in found["openmp"] and isinstance(found["openmp"]["env"], dict)
    assert machine_identity(ScriptedLLM()) == found  # stable within a process


def test_a_local_model_reports_its_threads_and_the_extra_buffers_verdict(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    model = LlamaModel(tmp_path / "m.gguf", n_threads=3)
    model.load_verdict = LoadVerdict(key="k", extra_buffers=True)  # as a load (or the probe) leaves it
    found = machine_identity(model)
    assert (found["threads"], found["extra_buffers"], found["via"]) == (3, True, "local")
    model.load_verdict = LoadVerdict(key="k", extra_buffers=False)
    assert machine_identity(model)["machine_id"] != found["machine_id"]
    monkeypatch.setattr("reagent_local.runtime.llm.physical_threads", lambda: 5)
    unset = LlamaModel(tmp_path / "m.gguf")
    unset.load_verdict = LoadVerdict(key="k", extra_buffers=False)
    assert identity.model_facts(unset)[0] == 5  # unset threads: the cores this process may use


def test_openmp_settings_are_the_omp_and_gomp_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    monkeypatch.setenv("GOMP_SPINCOUNT", "0")
    monkeypatch.setenv("OMPX_OTHER", "x")
    settings = identity.openmp_settings()
    assert settings["OMP_WAIT_POLICY"] == "PASSIVE" and settings["GOMP_SPINCOUNT"] == "0"
    assert "OMPX_OTHER" not in settings


def test_a_machine_reads_as_one_line() -> None:
    assert describe_machine(BASE) == "Intel Xeon (avx2, avx512f), llama-cpp-python 0.3.36, extra buffers off"
    assert describe_machine({}) == "unknown (no flags read), llama-cpp-python unknown, extra buffers unknown"
