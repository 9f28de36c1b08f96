"""The runner: run folder, records, resume (also after SIGKILL and a torn line), refusals."""

from __future__ import annotations

import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import reagent_local

from reagent_local.bench.records import RECORDS_FILE, read_records
from reagent_local.bench.runner import run_benchmark
from reagent_local.config import load_config
from reagent_local.errors import BenchRunError

from bench_support import river_answers


def index_of(paragraphs: list[tuple[str, str]]) -> "object":
    from reagent_local.testing import InMemoryIndex

    index = InMemoryIndex()
    for n, (title, text) in enumerate(paragraphs):
        index.add(title, text, n)
    return index


def keys(records: list[dict]) -> list[tuple[str, str]]:
    return [(r["method"], r["id"]) for r in records]


def test_run_writes_folder_records_and_report(driver: dict, tmp_path: Path) -> None:
    out = tmp_path / "run"
    console_out = io.StringIO()
    from rich.console import Console

    outcome = driver["run"](driver["data"], out, console=Console(file=console_out, width=120))
    records = read_records(out / RECORDS_FILE)
    assert len(records) == 18 and len(set(keys(records))) == 18 and outcome.new_records == 18
    config = json.loads((out / "config.json").read_text())
    assert config["seed"] == 5 and config["n"] == 6 and config["methods"] == ["closed-book", "rag", "ircot"]
    assert len(config["file_sha256"]) == 64 and config["model"]["id"] == "scripted"
    assert config["config"]["retrieval"]["top_k"] == 2
    # question-major order: every method answers a question before the next one starts
    assert keys(records)[:3] == [(m, config["question_ids"][0]) for m in ("closed-book", "rag", "ircot")]
    by_method = {m: [r for r in records if r["method"] == m] for m in ("closed-book", "rag", "ircot")}
    assert all(r["em"] == 0.0 and r["prediction"] == "Paris" for r in by_method["closed-book"])
    assert all(r["cited"] == [] and r["support_precision"] is None and r["support_recall"] == 0.0
               for r in by_method["closed-book"])
    assert all(r["em"] == 1.0 for r in by_method["ircot"])
    ircot = by_method["ircot"][0]
    # two reasoning steps (the first one searches again), then the reader
    assert ircot["llm_calls"] == 3 and ircot["support_recall"] == 1.0 and 0 < ircot["support_precision"] <= 1
    assert ircot["answers"] == [ircot["prediction"]] and ircot["backtracks"] == {"local": 0, "global": 0}
    assert ircot["code"].startswith(reagent_local.__version__)  # + the git commit in a checkout
    summary = json.loads((out / "summary.json").read_text())
    assert summary["methods"]["ircot"]["em"] == 1.0 and summary["methods"]["closed-book"]["f1"] == 0.0
    assert (out / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| ircot | 6 | 1.000 |" in (out / "results.md").read_text()
    shown = console_out.getvalue()
    assert "ircot" in shown and "EM 1.000" in shown


def test_existing_folder_needs_resume_and_matching_settings(driver: dict, tmp_path: Path) -> None:
    out = tmp_path / "run"
    driver["run"](driver["data"], out)
    with pytest.raises(BenchRunError, match="--resume"):
        driver["run"](driver["data"], out)
    again = driver["run"](driver["data"], out, resume=True)
    assert again.new_records == 0 and again.resumed_records == 18
    llm, retriever, config = driver["build"](driver["data"])
    with pytest.raises(BenchRunError) as info:
        run_benchmark("hotpotqa", driver["data"], config=config, n=6, seed=6, methods=["rag"], out=out,
                      resume=True, llm=llm, retriever=retriever)
    assert "seed: folder has 5, now 6" in str(info.value)
    llm.model_id = "another-model"
    with pytest.raises(BenchRunError, match="model.id: folder has 'scripted', now 'another-model'"):
        run_benchmark("hotpotqa", driver["data"], config=config, n=6, seed=5, methods=["rag"], out=out,
                      resume=True, llm=llm, retriever=retriever)
    llm.model_id = "scripted"
    # a method can be added to a finished run: only its records are added
    more = run_benchmark("hotpotqa", driver["data"], config=config, n=6, seed=5, methods=["rag"],
                         out=tmp_path / "small", llm=llm, retriever=retriever)
    assert more.new_records == 6
    grown = run_benchmark("hotpotqa", driver["data"], config=config, n=6, seed=5, methods=["ircot", "rag"],
                          out=tmp_path / "small", resume=True, llm=llm, retriever=retriever)
    assert (grown.new_records, grown.resumed_records) == (6, 6)
    assert json.loads((tmp_path / "small" / "config.json").read_text())["methods"] == ["rag", "ircot"]


def test_records_carry_the_session_and_a_resume_in_another_configuration_is_refused(driver: dict,
                                                                                    tmp_path: Path) -> None:
    from dataclasses import replace

    from reagent_local.bench.provenance import config_id

    llm, retriever, config = driver["build"](driver["data"])
    out = tmp_path / "run"
    run = dict(n=6, seed=5, out=out, llm=llm, retriever=retriever)
    run_benchmark("hotpotqa", driver["data"], config=config, methods=["rag"], **run)
    folder = json.loads((out / "config.json").read_text())
    (session,) = folder["sessions"]
    assert session["config_id"] == config_id(folder["config"]) and session["code"].startswith(reagent_local.__version__)
    assert folder["configs"] == {session["config_id"]: folder["config"]}
    assert {r["config_id"] for r in read_records(out / RECORDS_FILE)} == {session["config_id"]}
    # where files live does not change the configuration; a setting that shapes answers does
    moved = replace(config, paths=replace(config.paths, home=tmp_path / "elsewhere"))
    assert run_benchmark("hotpotqa", driver["data"], config=moved, methods=["rag"], resume=True, **run).new_records == 0
    other = replace(config, pipeline=replace(config.pipeline, min_confidence=0.5))
    with pytest.raises(BenchRunError, match="its records come from commit .*; this run is commit .*, configuration"):
        run_benchmark("hotpotqa", driver["data"], config=other, methods=["rag", "ircot"], resume=True, **run)
    assert not any(r["method"] == "ircot" for r in read_records(out / RECORDS_FILE))  # refused before any work
    mixed = run_benchmark("hotpotqa", driver["data"], config=other, methods=["rag", "ircot"], resume=True,
                          allow_mixed=True, **run)
    assert mixed.new_records == 6 and mixed.summary["origin"]["mixed"]
    assert len(mixed.summary["origin"]["configs"]) == 2 and "**Mixed**" in (out / "results.md").read_text()
    folder = json.loads((out / "config.json").read_text())
    assert len(folder["sessions"]) == 3 and len(folder["configs"]) == 2
    assert folder["configs"][config_id(folder["configs"][folder["sessions"][2]["config_id"]])]["pipeline"][
        "min_confidence"] == 0.5


def test_resume_drops_a_torn_last_line(driver: dict, tmp_path: Path) -> None:
    out = tmp_path / "run"
    driver["run"](driver["data"], out)
    path = out / RECORDS_FILE
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:10]) + lines[10][: len(lines[10]) // 2])  # killed while writing line 11
    outcome = driver["run"](driver["data"], out, resume=True)
    assert outcome.dropped_torn_line and outcome.resumed_records == 10 and outcome.new_records == 8
    records = read_records(path)
    assert len(records) == 18 and len(set(keys(records))) == 18


def test_corrupt_middle_line_is_refused(driver: dict, tmp_path: Path) -> None:
    out = tmp_path / "run"
    driver["run"](driver["data"], out)
    path = out / RECORDS_FILE
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = b"{not json\n"
    path.write_bytes(b"".join(lines))
    with pytest.raises(BenchRunError, match="line 4"):
        driver["run"](driver["data"], out, resume=True)


def test_model_errors_are_recorded_and_the_run_goes_on(driver: dict, tmp_path: Path) -> None:
    llm, retriever, config = driver["build"](driver["data"])
    from reagent_local.testing import Rule

    llm.rules.insert(0, Rule({"answer": "y" * 100}, schema="SpanAnswer", contains="Riv"))  # too long: invalid
    outcome = run_benchmark("hotpotqa", driver["data"], config=config, n=3, seed=1, methods=["rag", "ircot"],
                            out=tmp_path / "run", llm=llm, retriever=retriever)
    records = read_records(tmp_path / "run" / RECORDS_FILE)
    assert len(records) == 6  # both methods end in the broken reader; every question still gets its record
    assert all(r["prediction"] == "" and "LLMOutputError" in r["error"] for r in records)
    assert outcome.summary["methods"]["rag"]["errors"] == 3


def test_sigkill_mid_run_then_resume_matches_an_uninterrupted_run(driver: dict, tmp_path: Path) -> None:
    reference = tmp_path / "reference"
    driver["run"](driver["data"], reference)
    expected = read_records(reference / RECORDS_FILE)

    out = tmp_path / "killed"
    env = {**os.environ, "BENCH_SLOW": "0.05"}
    proc = subprocess.Popen([sys.executable, str(driver["script"]), str(driver["data"]), str(out)], env=env)
    path = out / RECORDS_FILE
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().count(b"\n") >= 5:
            break
        if proc.poll() is not None:
            pytest.fail(f"the driver exited early with code {proc.returncode}")
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    partial = read_records(path)
    assert 5 <= len(partial) < len(expected)

    subprocess.run([sys.executable, str(driver["script"]), str(driver["data"]), str(out), "--resume"], check=True,
                   timeout=120)
    records = read_records(path)
    assert len(records) == len(expected)
    assert len(set(keys(records))) == len(records)
    assert sorted(keys(records)) == sorted(keys(expected))
    strip = lambda r: {k: v for k, v in r.items() if k not in ("seconds", "machine")}  # noqa: E731
    assert sorted(map(json.dumps, map(strip, records))) == sorted(map(json.dumps, map(strip, expected)))


def test_musique_support_is_matched_by_title_and_text(tmp_path: Path) -> None:
    from reagent_local.testing import Rule, ScriptedLLM

    record = {
        "id": "2hop__1_2", "question": "Where was the founder of Acme born?", "answer": "Springfield",
        "answer_aliases": ["Springfield, Ohio"], "answerable": True, "question_decomposition": [],
        "paragraphs": [
            {"idx": 0, "title": "Acme", "paragraph_text": "Acme was founded by Jo Smith.", "is_supporting": True},
            {"idx": 1, "title": "Acme", "paragraph_text": "Acme makes anvils for coyotes.", "is_supporting": False},
            {"idx": 2, "title": "Jo Smith", "paragraph_text": "Jo Smith was born in Springfield.", "is_supporting": True},
        ],
    }
    data = tmp_path / "musique_tiny.jsonl"
    data.write_text(json.dumps(record) + "\n", encoding="utf-8")
    # the retriever returns both Acme paragraphs first: one supporting, one not (same title)
    retriever = index_of([("Acme", "Acme makes anvils for coyotes."), ("Acme", "Acme was founded by Jo Smith."),
                          ("Jo Smith", "Jo Smith was born in Springfield.")])
    llm = ScriptedLLM(rules=[Rule({"answer": "springfield, ohio"}, schema="SpanAnswer")])
    config = load_config({"retrieval.top_k": 2}, env={})
    run_benchmark("musique", data, config=config, methods=["rag"], out=tmp_path / "run", llm=llm, retriever=retriever)
    (rec,) = read_records(tmp_path / "run" / RECORDS_FILE)
    assert [c["title"] for c in rec["cited"]] == ["Acme", "Acme"]
    assert rec["support_precision"] == 0.5 and rec["support_recall"] == 0.5
    assert rec["em"] == 1.0  # best over the aliases


@pytest.mark.parametrize(
    ("dataset", "name"),
    [
        ("hotpotqa", "hotpotqa/hotpot_dev_distractor_sample200.json"),
        ("2wiki", "2wikimultihopqa/dev_distractor_sample464.json"),
        ("musique", "musique/musique_ans_dev_sample100.jsonl"),
    ],
)
def test_real_sample_files_run_end_to_end(shared_data: Path, tmp_path: Path, dataset: str, name: str) -> None:
    from reagent_local.datasets import load_questions, open_corpus
    from reagent_local.testing import Rule, ScriptedLLM

    file = shared_data / name
    questions = load_questions(file, dataset)
    retriever = index_of([(p.title, p.text) for p in open_corpus(questions)])
    llm = ScriptedLLM(rules=[Rule({"answer": "yes"}, schema="SpanAnswer")])
    outcome = run_benchmark(dataset, file, config=load_config({}, env={}), n=8, seed=13,
                            methods=["closed-book", "rag"], out=tmp_path / "run", llm=llm, retriever=retriever)
    records = read_records(tmp_path / "run" / RECORDS_FILE)
    assert len(records) == 16 and outcome.summary["questions"] == 8
    by_id = {q.id: q for q in questions}
    for record in records:
        gold_yes = any(a.strip().lower() == "yes" for a in by_id[record["id"]].answers)
        assert record["em"] == float(gold_yes)
        if record["method"] == "rag":
            assert 0 < len(record["cited"]) <= 5 and record["support_recall"] is not None


def test_cli_rejects_unknown_methods(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from reagent_local.cli import main

    with pytest.raises(SystemExit):
        main(["bench", "run", "--dataset", "hotpotqa", "--file", str(tmp_path / "missing.json")])
    assert "does not exist" in capsys.readouterr().err
    data = tmp_path / "h.json"
    data.write_text("[]")
    with pytest.raises(SystemExit):
        main(["bench", "run", "--dataset", "hotpotqa", "--file", str(data), "--methods", "rag,nope"])
    err = capsys.readouterr().err
    assert "unknown method(s): nope" in err and "Traceback" not in err


def test_reagent_methods_run_through_the_real_pipeline(driver: dict, tmp_path: Path) -> None:
    from reagent_local.testing import Rule

    llm, retriever, config = driver["build"](driver["data"])
    llm.rules[:] = [Rule(river_answers)]
    outcome = run_benchmark("hotpotqa", driver["data"], config=config, n=3, seed=2,
                            methods=["reagent-none", "reagent-both"], out=tmp_path / "run", llm=llm, retriever=retriever)
    records = read_records(tmp_path / "run" / RECORDS_FILE)
    assert len(records) == 6
    for record in records:
        assert record["error"] is None and record["em"] == 1.0, record
        # a chain needs no assembler call, and a trusted one no second road
        assert record["run_id"] and record["llm_calls"] == 3 and record["uncertain"] is False
        assert record["support_recall"] == 1.0 and record["support_precision"] == 1.0
    assert (tmp_path / "run" / "events.duckdb").is_file()
    from reagent_local.core.log import EventLog

    with EventLog(tmp_path / "run" / "events.duckdb", read_only=True) as log:
        assert log.get_run(records[0]["run_id"])["answer"] == records[0]["prediction"]
    assert outcome.summary["methods"]["reagent-both"]["em"] == 1.0


def test_ids_filters_are_recorded_and_resume_refuses_another_selection(driver: dict, tmp_path: Path) -> None:
    import random

    keep = tmp_path / "keep.txt"
    keep.write_text("# a split\nq1\nq2\n\nq3\nq5\nq7\n", encoding="utf-8")
    drop = tmp_path / "drop.txt"
    drop.write_text("q3\n", encoding="utf-8")
    out = tmp_path / "run"
    llm, retriever, config = driver["build"](driver["data"])

    def run(**kwargs):
        return run_benchmark("hotpotqa", driver["data"], config=config, n=3, seed=5, methods=["rag"], out=out,
                             llm=llm, retriever=retriever, **kwargs)

    run(ids=keep, exclude_ids=drop)
    saved = json.loads((out / "config.json").read_text())
    assert saved["question_ids"] == random.Random(5).sample(["q1", "q2", "q5", "q7"], 3)
    assert saved["ids"]["file"] == str(keep.resolve()) and saved["ids"]["count"] == 5
    assert saved["exclude_ids"]["sha256"] == hashlib.sha256(b"q3\n").hexdigest()
    assert {r["id"] for r in read_records(out / RECORDS_FILE)} == set(saved["question_ids"])
    assert run(ids=keep, exclude_ids=drop, resume=True).new_records == 0
    with pytest.raises(BenchRunError, match="exclude_ids.sha256: folder has '[0-9a-f]+', now None"):
        run(ids=keep, resume=True)
    keep.write_text("q1\nq2\nq5\nq0\n", encoding="utf-8")
    with pytest.raises(BenchRunError, match="ids.sha256") as info:
        run(ids=keep, exclude_ids=drop, resume=True)
    assert "question_ids: folder has 3 questions, now 3 (1 dropped, 1 new)" in str(info.value)
    with pytest.raises(BenchRunError, match="cannot resume"):
        run(resume=True)  # no filter at all: another selection


def test_old_run_folders_without_selection_fields_still_resume(driver: dict, tmp_path: Path) -> None:
    out = tmp_path / "run"
    driver["run"](driver["data"], out)
    path = out / "config.json"
    saved = json.loads(path.read_text())
    for key in ("ids", "exclude_ids", "prebuilt_index"):
        del saved[key]
    path.write_text(json.dumps(saved))
    assert driver["run"](driver["data"], out, resume=True).new_records == 0
    del saved["config"]["retrieval"]["focus_chars"]  # before the setting existed, passages were cut, as now
    path.write_text(json.dumps(saved))
    assert driver["run"](driver["data"], out, resume=True).new_records == 0
    saved["config"]["retrieval"]["focus_chars"] = 500  # a folder whose passages were focused
    path.write_text(json.dumps(saved))
    with pytest.raises(BenchRunError, match="focus_chars: folder has 500, now 0"):
        driver["run"](driver["data"], out, resume=True)


def test_cli_names_unknown_ids_in_one_line(driver: dict, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from reagent_local.cli import main

    ids = tmp_path / "ids.txt"
    ids.write_text("q1\nnot-a-question\n", encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        main(["bench", "run", "--dataset", "hotpotqa", "--file", str(driver["data"]), "--ids", str(ids),
              "--methods", "rag", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert info.value.code == 1 and "Traceback" not in err
    assert "1 of 2 --ids id(s)" in err and "not-a-question" in err
    assert not (tmp_path / "o").exists()
    with pytest.raises(SystemExit):
        main(["bench", "run", "--dataset", "hotpotqa", "--file", str(driver["data"]), "--exclude-ids",
              str(tmp_path / "missing.txt")])
    assert "does not exist" in capsys.readouterr().err


def test_bench_run_help_lists_the_new_options() -> None:
    from click.testing import CliRunner

    from reagent_local.cli import cli

    result = CliRunner().invoke(cli, ["bench", "run", "--help"])
    assert result.exit_code == 0
    assert "--ids" in result.output and "--exclude-ids" in result.output and "--index NAME" in result.output


def test_records_name_their_machine_and_the_session_keeps_its_identity(driver: dict, tmp_path: Path) -> None:
    from reagent_local.runtime.identity import machine_identity

    llm, retriever, config = driver["build"](driver["data"])
    out = tmp_path / "run"
    run_benchmark("hotpotqa", driver["data"], config=config, n=6, seed=5, methods=["rag"], out=out, llm=llm,
                  retriever=retriever)
    (session,) = json.loads((out / "config.json").read_text())["sessions"]
    here = machine_identity(llm)
    assert session["machine_id"] == here["machine_id"] and session["machine"]["cpu"] == here["cpu"]
    assert session["machine"]["host"] and "openmp" in session["machine"]
    assert {r["machine_id"] for r in read_records(out / RECORDS_FILE)} == {here["machine_id"]}
    assert "machine " + here["machine_id"] in (out / "results.md").read_text()


def test_threads_are_part_of_the_configuration_id(driver: dict, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    monkeypatch.setattr("reagent_local.bench.rundir.physical_threads", lambda: 2)
    llm, retriever, config = driver["build"](driver["data"])
    ids = {}
    for threads in (None, 1, 2):
        counted = replace(config, llm=replace(config.llm, n_threads=threads))
        out = tmp_path / f"run-{threads}"
        run_benchmark("hotpotqa", driver["data"], config=counted, n=2, seed=5, methods=["rag"], out=out, llm=llm,
                      retriever=retriever)
        folder = json.loads((out / "config.json").read_text())
        assert folder["config"]["llm"]["n_threads"] == (threads or 2)  # unset: resolved to the cores
        ids[threads] = folder["sessions"][0]["config_id"]
    assert ids[1] != ids[2] and ids[None] == ids[2]
    one = replace(config, llm=replace(config.llm, n_threads=1))
    with pytest.raises(BenchRunError, match="its records come from"):
        run_benchmark("hotpotqa", driver["data"], config=one, n=2, seed=5, methods=["rag"], out=tmp_path / "run-2",
                      resume=True, llm=llm, retriever=retriever)


def test_a_resume_on_another_machine_is_refused_unless_mixing_is_allowed(driver: dict, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from reagent_local.bench import runner

    llm, retriever, config = driver["build"](driver["data"])
    out = tmp_path / "run"
    run = dict(n=6, seed=5, out=out, llm=llm, retriever=retriever)
    run_benchmark("hotpotqa", driver["data"], config=config, methods=["rag"], **run)
    real = runner.machine_identity
    monkeypatch.setattr(runner, "machine_identity", lambda model: {**real(model), "machine_id": "0ther0machine"})
    with pytest.raises(BenchRunError, match="this run is commit .*, machine 0ther0machine") as info:
        run_benchmark("hotpotqa", driver["data"], config=config, methods=["rag", "ircot"], resume=True, **run)
    assert "one machine" in info.value.hint
    mixed = run_benchmark("hotpotqa", driver["data"], config=config, methods=["rag", "ircot"], resume=True,
                          allow_mixed=True, **run)
    assert mixed.new_records == 6 and mixed.summary["origin"]["machines"]["0ther0machine"] == 6
    assert "machines" in (out / "results.md").read_text() and "**Mixed**" in (out / "results.md").read_text()


def test_each_method_begins_each_question_with_an_empty_prompt_cache(driver: dict, tmp_path: Path) -> None:
    from dataclasses import dataclass, field

    from reagent_local.runtime.prefill import PromptReuse
    from reagent_local.testing import ScriptedLLM

    @dataclass
    class CachingLLM(ScriptedLLM):
        """A model whose cache holds 7 prompt tokens for every call after the first since it was emptied."""

        prompts: PromptReuse = field(default_factory=PromptReuse)
        log: list[str] = field(default_factory=list)

        def forget_prompts(self) -> None:
            self.log.append("forget")

        def generate_json(self, messages, schema, **kwargs):  # type: ignore[no-untyped-def]
            warm = bool(self.log) and self.log[-1] != "forget"
            self.log.append("call")
            self.prompts.add(7 if warm else 0, 10)
            return super().generate_json(messages, schema, **kwargs)

    scripted, retriever, config = driver["build"](driver["data"])
    llm = CachingLLM(rules=scripted.rules)
    out = tmp_path / "run"
    run_benchmark("hotpotqa", driver["data"], config=config, n=3, seed=5, methods=["rag", "ircot"], out=out, llm=llm,
                  retriever=retriever)
    records = read_records(out / RECORDS_FILE)
    assert llm.log.count("forget") == len(records) == 6  # once before every (method, question)
    for record in records:
        assert record["cold_start"] is True
        assert record["cached_prompt_tokens"] == 7 * (record["llm_calls"] - 1)  # only the question's own calls
    assert "Seconds: cold per method per question" in (out / "results.md").read_text()
