"""`reagent doctor`: its JSON keys, and exit status 1 with the fix when something is wrong."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from reagent_local.runtime import load_probe
from reagent_local.cli import cli

KEYS = {"python", "packages", "llama_cpp", "cpu", "llm", "home", "models", "indexes", "probe", "ok", "problems"}


def doctor(home: Path, monkeypatch: pytest.MonkeyPatch, *args: str):
    monkeypatch.setenv("REAGENT_HOME", str(home))
    monkeypatch.delenv("REAGENT_CONFIG", raising=False)
    monkeypatch.chdir(home)
    return CliRunner().invoke(cli, ["doctor", *args])


def fake_gguf(folder: Path) -> Path:
    path = folder / "fake.gguf"
    path.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + b"\0" * 64)
    return path


def test_a_missing_default_model_is_a_problem_with_its_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = doctor(tmp_path, monkeypatch, "--json")
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert KEYS <= set(data)
    assert data["packages"]["click"] and data["cpu"]["usable_cores"] >= 1
    assert data["llm"]["extra_buffers_setting"] == "auto" and isinstance(data["llm"]["extra_buffers"], bool)
    assert data["probe"] is None and data["ok"] is False
    assert any("reagent models pull qwen2.5-coder-1.5b" in p["fix"] for p in data["problems"])
    assert {m["name"]: m["state"] for m in data["models"]}["qwen2.5-coder-1.5b"] == "missing"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_failing_probe_is_a_problem_naming_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_probe.forget_verdicts()
    model = fake_gguf(tmp_path)
    crash = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"]
    monkeypatch.setattr(load_probe, "child_command", lambda *args, **kwargs: crash)
    result = doctor(tmp_path, monkeypatch, "--model", str(model), "--json")
    load_probe.forget_verdicts()
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["probe"]["ok"] is False and "crashed loading fake.gguf" in data["probe"]["error"]
    assert any("SIGSEGV" in p["what"] for p in data["problems"])

    text = doctor(tmp_path, monkeypatch, "--model", str(model))  # the remembered verdict, as a screen
    load_probe.forget_verdicts()
    assert text.exit_code == 1 and "PROBLEM: llama.cpp" in text.output and "->" in text.output


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_probe_that_passes_is_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load_probe.forget_verdicts()
    model = fake_gguf(tmp_path)
    runs: list[int] = []

    def ok_child(*args, **kwargs):
        runs.append(1)
        return [sys.executable, "-c", "print('ok')"]

    monkeypatch.setattr(load_probe, "child_command", ok_child)
    first = json.loads(doctor(tmp_path, monkeypatch, "--model", str(model), "--json").output)
    load_probe.forget_verdicts()
    second = json.loads(doctor(tmp_path, monkeypatch, "--model", str(model), "--json").output)
    load_probe.forget_verdicts()
    assert first["probe"]["ok"] and not first["probe"]["remembered"]
    assert second["probe"]["ok"] and second["probe"]["remembered"]
    assert len(runs) == len(first["probe"]["attempts"]), "a remembered verdict starts no child"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")
def test_the_probes_timing_and_choice_are_shown_and_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reagent_local.runtime.cpu import CpuInfo

    load_probe.forget_verdicts()
    model = fake_gguf(tmp_path)
    rates = {"on": (98.0, 19.0), "off": (146.0, 16.0)}  # an AMD EPYC Zen 4's, 2 threads

    def timed_child(model, extra, gpu_layers, threads, speed=False):
        prefill, decode = rates["on" if extra else "off"]
        line = json.dumps({"prefill_tps": prefill, "decode_tps": decode} if speed else {"text": "x"})
        return [sys.executable, "-c", f"print({line!r})"]

    monkeypatch.setattr(load_probe, "child_command", timed_child)
    monkeypatch.setattr(load_probe, "read_cpu", lambda: CpuInfo("AMD EPYC", frozenset({"avx2", "avx512f"}), 2))
    first = json.loads(doctor(tmp_path, monkeypatch, "--model", str(model), "--json").output)
    load_probe.forget_verdicts()
    text = doctor(tmp_path, monkeypatch, "--model", str(model)).output
    load_probe.forget_verdicts()
    assert first["probe"]["extra_buffers"] is False and first["llm"]["extra_buffers"] is False
    assert [a["prefill_tps"] for a in first["probe"]["attempts"]] == [98.0, 146.0]
    assert "loads with extra buffers off (remembered; timed then: on, prompt 98 tok/s" in text
    assert "off, prompt 146 tok/s, generation 16 tok/s, a typical call 6.0 s" in text


def test_doctor_says_where_models_come_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared-models"
    shared.mkdir()
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("REAGENT_MODELS", str(shared))
    data = json.loads(doctor(tmp_path / "home", monkeypatch, "--json", "--no-probe").output)
    folder = data["models_folder"]
    assert folder["path"] == str(shared) and folder["origin"] == "REAGENT_MODELS"
    assert folder["shared"] is True and folder["exists"] is True
    assert all(Path(m["path"]).parent == shared for m in data["models"])  # every GGUF looked for there
    text = doctor(tmp_path / "home", monkeypatch, "--no-probe").output
    assert f"models from   {shared} (set by REAGENT_MODELS)" in text


def test_doctor_says_whether_role_prefixes_start_warm_and_what_the_cache_holds(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from reagent_local.runtime.warm import WarmPrefixes, WarmState

    home = tmp_path / "home"
    home.mkdir()
    text = doctor(home, monkeypatch, "--no-probe").output
    assert f"warm          role prefixes kept in {home / '.cache' / 'warm-prefixes'}: none yet" in text
    identity = {"model": "/m/small.gguf", "threads": 1, "extra_buffers": False, "prefill_block": "64/256"}
    store = WarmPrefixes(home / ".cache", identity, block=64)
    for n in (64, 128):
        assert store.write(WarmState(tokens=tuple(range(1, n + 1)), state=b"\1" * 2**20, seed=0))
    (store.folder / "damaged.json").write_text("[1, 2")  # unreadable, and a list that is no state: both left out
    (store.folder / "list.json").write_text("[1, 2]")
    (store.folder / "list.state").write_bytes(b"x")
    data = json.loads(doctor(home, monkeypatch, "--json", "--no-probe").output)
    assert data["warm"]["on"] and data["warm"]["stored"] == [
        {"key": store.key, "model": "small.gguf", "threads": 1, "extra_buffers": False, "cpu": None, "states": 2,
         "bytes": 2 * 2**20, "prefill_block": "64/256"}]
    text = doctor(home, monkeypatch, "--no-probe").output
    assert "2 states, 2 MiB (small.gguf, 1 thread, extra buffers off, blocks 64/256: 2 states)" in text
    monkeypatch.setenv("REAGENT_LLM_WARM_PREFIXES", "0")
    assert "warm          role prefixes start cold (llm.warm_prefixes is false)" in doctor(home, monkeypatch, "--no-probe").output
