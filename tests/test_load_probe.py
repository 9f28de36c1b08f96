"""The AMX rule, the extra-buffers setting reaching llama.cpp, and the child-process load probe."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from reagent_local.runtime import load_probe
from reagent_local.config import load_config
from reagent_local.runtime.cpu import CpuInfo, extra_buffers_enabled, parse_cpuinfo
from reagent_local.errors import ConfigError, NativeCrashError
from reagent_local.runtime.load_probe import safe_extra_buffers

XEON_AMX = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8488C
flags\t\t: fpu vme sse4_2 avx avx2 fma avx512f avx512_vnni avx512_bf16 amx_bf16 avx512_fp16 amx_tile amx_int8
processor\t: 1
model name\t: Intel(R) Xeon(R) Platinum 8488C
flags\t\t: fpu vme sse4_2 avx avx2 fma avx512f avx512_vnni avx512_bf16 amx_bf16 avx512_fp16 amx_tile amx_int8
"""
EPYC = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9R14
flags\t\t: fpu vme sse4_2 avx avx2 fma avx512f avx512_vnni avx512_bf16
"""
GRAVITON = """processor\t: 0
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm sve
"""
BUILD = ("0.3.36", "CPU : AVX2 = 1 | AMX_INT8 = 1 |")


def cpu_of(text: str) -> CpuInfo:
    model, flags = parse_cpuinfo(text)
    return CpuInfo(model=model, flags=flags, usable_cores=2)


def test_the_amx_rule_reads_the_first_processor_of_cpuinfo() -> None:
    xeon, epyc, arm = cpu_of(XEON_AMX), cpu_of(EPYC), cpu_of(GRAVITON)
    assert xeon.model == "Intel(R) Xeon(R) Platinum 8488C" and xeon.has_amx
    assert not epyc.has_amx and "avx512f" in epyc.notable_flags()
    assert not arm.has_amx and "asimd" in arm.notable_flags()
    assert extra_buffers_enabled("auto", xeon) is False
    assert extra_buffers_enabled("auto", epyc) is True
    assert extra_buffers_enabled("on", xeon) is True and extra_buffers_enabled("off", epyc) is False
    with pytest.raises(ValueError):
        extra_buffers_enabled("maybe", epyc)


def test_the_setting_is_read_from_the_environment_and_checked() -> None:
    assert load_config(env={}).llm.extra_buffers == "auto"
    assert load_config(env={"REAGENT_LLM_EXTRA_BUFFERS": "off"}).llm.extra_buffers == "off"
    with pytest.raises(ConfigError, match="extra_buffers"):
        load_config(env={"REAGENT_LLM_EXTRA_BUFFERS": "sometimes"})


def test_the_setting_reaches_llama_cpps_model_parameters() -> None:
    native = pytest.importorskip("llama_cpp.llama_cpp")
    from reagent_local.runtime.native_load import model_params_with

    default = native.llama_model_default_params().use_extra_bufts
    with model_params_with(extra_buffers=False):
        assert native.llama_model_default_params().use_extra_bufts is False
    with model_params_with(extra_buffers=True):
        assert native.llama_model_default_params().use_extra_bufts is True
    assert native.llama_model_default_params().use_extra_bufts == default  # restored afterwards


def test_wiring_passes_the_setting_and_the_homes_cache_to_the_model(tmp_path: Path) -> None:
    from reagent_local.reasoning.wiring import load_llm

    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + b"\0" * 64)
    config = load_config({"llm.extra_buffers": "off", "paths.home": str(tmp_path)}, env={})
    llm = load_llm(str(gguf), config)
    assert llm.extra_buffers == "off" and llm.probe_cache == tmp_path / ".cache"


# -- the probe, with children that really die -------------------------------------------------

def crashing_child(crash_when: set[bool], calls: list[bool]):
    """A probe command whose child process kills itself with SIGSEGV for the given settings."""
    def command(model: Path, extra: bool, gpu_layers: int, threads: int, speed: bool = False) -> list[str]:
        calls.append(extra)
        code = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)" if extra in crash_when else "print('ok')"
        return [sys.executable, "-c", code]
    return command


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + b"\0" * 64)
    load_probe.forget_verdicts()
    yield path
    load_probe.forget_verdicts()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_under_auto_a_crash_is_retried_with_the_safe_setting_and_remembered(model_file: Path, tmp_path: Path) -> None:
    calls: list[bool] = []
    epyc = cpu_of(EPYC)
    verdict = safe_extra_buffers(model_file, "auto", cache_dir=tmp_path / "cache", cpu=epyc, build=BUILD,
                                 command=crashing_child({True}, calls))
    assert calls == [True, False]
    assert verdict.extra_buffers is False and verdict.ok and not verdict.from_cache
    assert [a.outcome for a in verdict.attempts] == ["crashed", "ok"]
    assert verdict.attempts[0].signal == "SIGSEGV"
    saved = json.loads((tmp_path / "cache" / "llm-probe" / f"{verdict.key}.json").read_text())
    assert saved["extra_buffers"] is False

    load_probe.forget_verdicts()  # a new process: only the file remembers
    again = safe_extra_buffers(model_file, "auto", cache_dir=tmp_path / "cache", cpu=epyc, build=BUILD,
                               command=crashing_child({True}, calls))
    assert calls == [True, False], "a remembered verdict runs no child"
    assert again.from_cache and again.extra_buffers is False


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_crash_with_the_setting_forced_on_is_one_clear_error(model_file: Path, tmp_path: Path) -> None:
    with pytest.raises(NativeCrashError) as caught:
        safe_extra_buffers(model_file, "on", cache_dir=tmp_path, cpu=cpu_of(XEON_AMX), build=BUILD,
                           command=crashing_child({True}, []))
    text = str(caught.value)
    assert "tiny.gguf" in text and "0.3.36" in text and "amx_int8" in text and "Xeon" in text
    assert "SIGSEGV" in text and 'extra_buffers = "off"' in text
    # remembered too: the next load fails at once, without a child
    calls: list[bool] = []
    with pytest.raises(NativeCrashError):
        safe_extra_buffers(model_file, "on", cache_dir=tmp_path, cpu=cpu_of(XEON_AMX), build=BUILD,
                           command=crashing_child({True}, calls))
    assert calls == []


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_auto_on_an_amx_cpu_tries_the_safe_setting_first(model_file: Path, tmp_path: Path) -> None:
    calls: list[bool] = []
    verdict = safe_extra_buffers(model_file, "auto", cache_dir=tmp_path, cpu=cpu_of(XEON_AMX), build=BUILD,
                                 command=crashing_child({True}, calls))
    assert calls == [False] and verdict.extra_buffers is False


def test_a_child_that_fails_without_crashing_is_not_a_verdict(model_file: Path, tmp_path: Path) -> None:
    def failing(model: Path, extra: bool, gpu_layers: int, threads: int, speed: bool = False) -> list[str]:
        return [sys.executable, "-c", "raise SystemExit('llama.cpp could not load the file')"]

    verdict = safe_extra_buffers(model_file, "auto", cache_dir=tmp_path, cpu=cpu_of(EPYC), build=BUILD, command=failing)
    assert verdict.attempts[0].outcome == "failed" and "could not load" in verdict.attempts[0].stderr_tail
    assert verdict.extra_buffers is True  # the CPU rule's choice: the in-process load reports the real error
    assert not (tmp_path / "llm-probe").exists() or not any((tmp_path / "llm-probe").iterdir())


def timed_child(rates: dict[bool, tuple[float, float]], calls: list[tuple[bool, bool]]):
    """A probe command whose child loads and, asked to time itself, reports the given (prefill, decode) rates."""
    def command(model: Path, extra: bool, gpu_layers: int, threads: int, speed: bool = False) -> list[str]:
        calls.append((extra, speed))
        prefill, decode = rates[extra]
        out = {"text": "x", "tokens": 4, **({"prefill_tps": prefill, "decode_tps": decode} if speed else {})}
        return [sys.executable, "-c", f"print('loading'); print({json.dumps(json.dumps(out))})"]
    return command


def test_under_auto_both_safe_settings_are_timed_and_the_faster_is_kept(model_file: Path, tmp_path: Path) -> None:
    # the rates measured on an AMD EPYC Zen 4 (2 threads): repacked weights slower to prefill, faster to decode
    calls: list[tuple[bool, bool]] = []
    rates = {True: (93.0, 27.0), False: (130.0, 22.0)}
    verdict = safe_extra_buffers(model_file, "auto", cache_dir=tmp_path, cpu=cpu_of(EPYC), build=BUILD, threads=2,
                                 command=timed_child(rates, calls))
    assert calls == [(True, True), (False, True)]
    assert verdict.extra_buffers is False and verdict.ok
    on, off = verdict.attempts
    assert (on.prefill_tps, on.decode_tps) == (93.0, 27.0)
    assert off.typical_call_seconds() == pytest.approx(600 / 130 + 30 / 22)
    load_probe.forget_verdicts()  # remembered with its measurements
    again = safe_extra_buffers(model_file, "auto", cache_dir=tmp_path, cpu=cpu_of(EPYC), build=BUILD, threads=2,
                               command=timed_child(rates, calls))
    assert again.from_cache and again.extra_buffers is False and again.attempts[1].prefill_tps == 130.0
    assert len(calls) == 2
    # the thread count is part of the key: another count is timed afresh
    safe_extra_buffers(model_file, "auto", cache_dir=tmp_path, cpu=cpu_of(EPYC), build=BUILD, threads=1,
                       command=timed_child(rates, calls))
    assert len(calls) == 4


def test_the_repacked_weights_stay_unless_the_other_setting_is_clearly_faster() -> None:
    def attempt(extra: bool, prefill: float | None, decode: float | None, outcome: str = "ok"):
        return load_probe.ProbeAttempt(extra, outcome, 0, 1.0, prefill_tps=prefill, decode_tps=decode)

    faster = load_probe.faster_setting
    assert faster([attempt(True, 100, 25), attempt(False, 200, 25)], True) is False
    assert faster([attempt(True, 100, 25), attempt(False, 102, 25)], True) is True  # a near tie: the default
    assert faster([attempt(True, 200, 30), attempt(False, 100, 25)], True) is True
    assert faster([attempt(True, 100, 25), attempt(False, None, None)], True) is True  # not measured
    assert faster([attempt(True, 100, 25, "crashed"), attempt(False, 50, 10)], False) is False
    assert load_probe._speeds("ok\n") == (None, None)
    assert load_probe._speeds('{"prefill_tps": 90.5, "decode_tps": 20}') == (90.5, 20.0)


def test_forced_settings_and_amx_cpus_load_once_without_timing(model_file: Path, tmp_path: Path) -> None:
    calls: list[tuple[bool, bool]] = []
    rates = {True: (93.0, 27.0), False: (130.0, 22.0)}
    on = safe_extra_buffers(model_file, "on", cache_dir=tmp_path, cpu=cpu_of(EPYC), build=BUILD,
                            command=timed_child(rates, calls))
    amx = safe_extra_buffers(model_file, "auto", cache_dir=tmp_path, cpu=cpu_of(XEON_AMX), build=BUILD,
                             command=timed_child(rates, calls))
    assert calls == [(True, False), (False, False)]
    assert on.extra_buffers is True and amx.extra_buffers is False


def test_the_key_changes_with_the_setting_the_build_and_the_file(model_file: Path) -> None:
    epyc = cpu_of(EPYC)
    key = load_probe.probe_key(model_file, "auto", epyc, BUILD, 0)
    assert key == load_probe.probe_key(model_file, "auto", epyc, BUILD, 0)
    assert key != load_probe.probe_key(model_file, "on", epyc, BUILD, 0)
    assert key != load_probe.probe_key(model_file, "auto", epyc, ("0.3.37", BUILD[1]), 0)
    assert key != load_probe.probe_key(model_file, "auto", cpu_of(XEON_AMX), BUILD, 0)
    assert key != load_probe.probe_key(model_file, "auto", epyc, BUILD, 0, threads=2)
    model_file.write_bytes(model_file.read_bytes() + b"\0")
    assert key != load_probe.probe_key(model_file, "auto", epyc, BUILD, 0)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_real_model_loads_with_extra_buffers_off_when_the_probe_child_dies(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import pulled_model
    from reagent_local.runtime.llm import LlamaModel
    from reagent_local.runtime.native_load import extra_buffers_of

    path = pulled_model("smollm2-135m")
    load_probe.forget_verdicts()
    calls: list[bool] = []
    monkeypatch.setattr(load_probe, "child_command", crashing_child({True}, calls))
    monkeypatch.setattr(load_probe, "read_cpu", lambda: cpu_of(EPYC))
    model = LlamaModel(path, extra_buffers="auto", probe_cache=tmp_path)
    try:
        llama = model.load()
        assert calls == [True, False]
        assert extra_buffers_of(llama) is False
        assert model.load_verdict.extra_buffers is False
    finally:
        model.close()
        load_probe.forget_verdicts()


@pytest.mark.slow
def test_the_real_probe_child_loads_and_generates(tmp_path: Path) -> None:
    from conftest import pulled_model

    path = pulled_model("smollm2-135m")
    load_probe.forget_verdicts()
    verdict = safe_extra_buffers(path, "auto", cache_dir=tmp_path, threads=1)
    assert verdict.ok and all(a.outcome == "ok" for a in verdict.attempts)
    assert all(a.seconds < 60 for a in verdict.attempts)
    if len(verdict.attempts) == 2:  # both settings safe here: both timed by the real child
        assert all(a.prefill_tps > 0 and a.decode_tps > 0 for a in verdict.attempts)
    load_probe.forget_verdicts()
