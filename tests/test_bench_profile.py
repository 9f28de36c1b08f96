"""`bench profile` and `bench tables` on run folders with known records (and a scripted run's event log)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reagent_local.bench.profile import by_role, by_signal, method_profile, profile_run
from reagent_local.bench.profile_view import markdown
from reagent_local.bench.tables import folder_table, tables
from reagent_local.cli import main
from reagent_local.errors import BenchRunError

from bench_support import run_exact, write_exact_dataset


def rec(qid: str, calls: int, seconds: float, signals=(), **extra) -> dict:
    return {"method": "reagent-both", "id": qid, "dataset": "hotpotqa", "type": "bridge", "em": 1.0, "f1": 1.0,
            "llm_calls": calls, "seconds": seconds, "prompt_tokens": 100 * calls, "completion_tokens": 10 * calls,
            "signals": list(signals), "code": "0.1.0+gaaaaaaa", **extra}


def test_by_signal_shares_and_extra_calls() -> None:
    again = {"calls": 1, "replayed": 2, "seconds": 0.5, "run_id": "r"}
    records = [rec("a", 3, 10.0), rec("b", 3, 10.0), rec("c", 8, 30.0, ["low-confidence"],
                                                        without_backtracking_cost=again),
               rec("d", 6, 50.0, ["low-confidence", "two-roads"])]
    rows = by_signal(records)
    assert list(rows) == ["(nothing fired)", "low-confidence", "two-roads"]
    assert rows["(nothing fired)"]["questions"] == 2 and rows["(nothing fired)"]["calls_share"] == 0.3
    low = rows["low-confidence"]
    assert (low["questions"], low["calls"], low["seconds"], low["seconds_share"]) == (2, 14, 80.0, 0.8)
    assert low["extra_calls"] == 8 - 3 and low["extra_known"] == 1  # d has no second run: not counted
    assert rows["two-roads"]["extra_calls"] is None
    profile = method_profile(records)
    assert profile["seconds"]["median"] == 20.0 and profile["llm_calls"]["p90"] == pytest.approx(7.4)
    assert profile["answered_again"] == {"questions": 1, "calls": 1, "replayed": 2, "seconds": 0.5}
    assert "roles" not in profile  # no event log


def test_by_role_from_logged_calls() -> None:
    calls = [{"agent": "verifier", "seconds": 3.0, "prompt_tokens": 500, "completion_tokens": 20},
             {"agent": "verifier", "seconds": 5.0, "prompt_tokens": 700, "completion_tokens": 30},
             {"agent": "decomposer", "seconds": 2.0, "prompt_tokens": 400, "completion_tokens": 40}]
    roles = by_role(calls)
    assert list(roles) == ["verifier", "decomposer"]
    assert roles["verifier"]["calls"] == 2 and roles["verifier"]["seconds_share"] == 0.8
    assert roles["decomposer"]["calls_share"] == pytest.approx(1 / 3) and roles["decomposer"]["prompt_tokens"] == 400


def test_profile_of_a_scripted_run_with_its_event_log(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = write_exact_dataset(tmp_path / "tiny.json")
    records = run_exact(data, tmp_path / "run", ["reagent-both", "rag"])
    both = [r for r in records if r["method"] == "reagent-both"]
    profile = profile_run(tmp_path / "run", ["reagent-both"])
    p = profile["methods"]["reagent-both"]
    assert profile["event_log"] and p["logged_questions"] == 3
    assert sum(r["calls"] for r in p["roles"].values()) == sum(r["llm_calls"] for r in both) == 11
    assert p["roles"]["decomposer"]["calls"] == 3  # one plan per question
    assert set(p["roles"]) >= {"decomposer", "verifier"}
    # q1: 5 calls, 3 needed without backtracking; q2: 4 calls, 2 needed
    assert p["signals"]["low-confidence"]["extra_calls"] == (5 - 3) + (4 - 2)
    assert p["signals"]["low-confidence"]["questions"] == 2 and p["signals"]["low-confidence"]["calls"] == 5 + 4
    assert p["events"]["rollback_local"] == {"questions": 2, "times": 2}
    assert p["events"]["signal low-confidence"]["questions"] == 2
    assert p["answered_again"]["questions"] == 2 and p["answered_again"]["calls"] == 1
    main(["bench", "profile", str(tmp_path / "run")])
    out = capsys.readouterr().out
    assert "## reagent-both: 3 questions" in out and "## rag: 3 questions" in out
    assert "| low-confidence | 2 | 9 |" in out and "| rollback_local | 2 | 2 |" in out
    main(["bench", "profile", str(tmp_path / "run"), "--method", "reagent-both", "--json"])
    assert json.loads(capsys.readouterr().out)["methods"]["reagent-both"]["questions"] == 3
    with pytest.raises(BenchRunError, match="no records of ircot"):
        profile_run(tmp_path / "run", ["ircot"])
    assert "No event log" in markdown({"folder": "f", "dataset": "d", "event_log": False, "methods": {}})


def write_run(folder: Path, records: list[dict]) -> Path:
    folder.mkdir()
    run = {"dataset": "hotpotqa", "seed": 13, "n": 2, "question_ids": ["a", "b"], "methods": ["rag", "reagent-both"],
           "config": {"pipeline": {"two_roads": True}}}
    (folder / "config.json").write_text(json.dumps(run))
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def test_tables_one_row_per_method_and_the_best_em_in_bold(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    base = dict(support_precision=0.5, support_recall=1.0)
    folder = write_run(tmp_path / "run", [
        {**rec("a", 1, 8.0, method="rag", em=0.0, f1=0.5), **base, "method": "rag"},
        {**rec("b", 1, 9.0, em=1.0), **base, "method": "rag"},
        {**rec("a", 3, 20.0), **base}, {**rec("b", 5, 31.0), **base}])
    text = folder_table(folder)
    assert "**hotpotqa**: 2 questions, seed 13, total 0.02 h of question time; configuration " in text
    assert "| single-step RAG | .500 | .750 | .500 | 1.000 | 1.0 (1.0, 1.0) | 110 | 8.5 (8.5, 8.9) | aaaaaaa |" in text
    assert "| ReAgent, backtracking both | **1.000** | 1.000 | .500 | 1.000 | 4.0 (4.0, 4.8) | 440 | 25.5 (25.5, 29.9) " \
           "| aaaaaaa |" in text
    main(["bench", "tables", str(folder), str(folder)])
    assert capsys.readouterr().out.count("**hotpotqa**") == 2
    records = [json.loads(line) for line in (folder / "records.jsonl").read_text().splitlines()]
    records[3]["code"] = "0.1.0+gbbbbbbb"
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(BenchRunError, match="mixes records of commits"):
        tables([folder])
    mixed = tables([folder], allow_mixed=True)
    assert "| aaaaaaa, bbbbbbb |" in mixed and "**Mixed**: these records come from commits" in mixed
