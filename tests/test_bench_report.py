"""Report rendering from a run folder's records, and the `reagent bench` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reagent_local.bench.report import write_report
from reagent_local.cli import main
from reagent_local.errors import BenchRunError


def rec(method: str, qid: str, prediction: str, em: float, f1: float, **extra) -> dict:
    base = {
        "method": method, "id": qid, "dataset": "hotpotqa", "type": "bridge", "question": f"Question {qid}?",
        "prediction": prediction, "answers": [f"gold {qid}"], "em": em, "f1": f1, "cited": [],
        "support_precision": None, "support_recall": 0.0, "llm_calls": 1, "prompt_tokens": 100,
        "completion_tokens": 10, "seconds": 2.0, "backtracks": {"local": 0, "global": 0},
        "run_id": None, "uncertain": None, "error": None, "code": "0.1.0+gaaaaaaa",
    }
    return {**base, **extra}


@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    folder.mkdir()
    config = {"dataset": "hotpotqa", "file": "/data/h.json", "seed": 13, "n": 2, "question_ids": ["a", "b"],
              "methods": ["rag", "reagent-none", "reagent-both"], "model": {"id": "qwen2.5-coder-1.5b"}}
    (folder / "config.json").write_text(json.dumps(config))
    records = [
        rec("rag", "a", "gold a", 1.0, 1.0, support_precision=0.4, support_recall=1.0, seconds=8.0,
            prompt_tokens=1000),
        rec("rag", "b", "wrong", 0.0, 0.5, support_precision=0.2, support_recall=0.5, seconds=9.0,
            prompt_tokens=1200),
        rec("reagent-none", "a", "gold a", 1.0, 1.0, llm_calls=10, code="0.1.0+gaaaaaaa"),
        rec("reagent-none", "b", "wrong", 0.0, 0.0, llm_calls=12),
        rec("reagent-both", "a", "Gold A", 1.0, 1.0, llm_calls=14),  # same answer up to case
        rec("reagent-both", "b", "gold b", 1.0, 1.0, llm_calls=20, backtracks={"local": 1, "global": 1},
            error=None, uncertain=True, signals=["two-roads"]),
    ]
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def test_summary_averages_and_changes(run_folder: Path) -> None:
    summary = write_report(run_folder)
    rag = summary["methods"]["rag"]
    assert rag["n"] == 2 and rag["em"] == 0.5 and rag["f1"] == 0.75
    assert rag["support_precision"] == pytest.approx(0.3) and rag["support_recall"] == 0.75
    assert rag["tokens_per_question"] == 1110 and rag["seconds_per_question"] == 8.5
    none = summary["methods"]["reagent-none"]
    assert none["support_precision"] is None and none["llm_calls_per_question"] == 11
    both = summary["methods"]["reagent-both"]
    assert both["backtracks_global"] == 1 and both["uncertain"] == 1
    assert summary["seconds_total"] == 8 + 9 + 2 * 4
    (change,) = summary["backtracking_changed_answers"]["reagent-both"]
    assert change == {"id": "b", "gold": "gold b", "reagent-none": "wrong", "reagent-both": "gold b", "f1_change": 1.0}
    assert json.loads((run_folder / "summary.json").read_text()) == summary
    # reagent-both got b right where rag did not; both got a right
    duels = summary["head_to_head"]
    assert list(duels) == ["reagent-none vs rag", "reagent-none vs reagent-both", "reagent-both vs rag"]
    assert duels["reagent-both vs rag"] == {
        "questions": 2,
        "f1": {"wins": 1, "losses": 0, "ties": 1, "p_value": 1.0, "won": ["b"], "lost": []},
        "em": {"wins": 1, "losses": 0, "ties": 1, "p_value": 1.0, "won": ["b"], "lost": []},
    }
    assert duels["reagent-none vs rag"]["f1"] == {"wins": 0, "losses": 1, "ties": 1, "p_value": 1.0, "won": [],
                                                  "lost": ["b"]}
    assert duels["reagent-none vs rag"]["em"]["ties"] == 2
    # old records (no backtracking fields): it fired on b, the answer before it is unknown
    assert summary["backtracking"] == {"reagent-both": {"questions": 2, "fired": 1, "changed": 0, "unknown": 1,
                                                        "exact": 0, "fixed": [], "broken": [], "shadow_calls": 0,
                                                        "shadow_seconds": 0}}
    assert summary["against_reagent_none"]["reagent-both"] == {"questions": 2, "changed": 1, "fixed": ["b"],
                                                                "broken": [], "delta_f1": 0.5}


def test_markdown_table_and_chart(run_folder: Path) -> None:
    write_report(run_folder)
    table = (run_folder / "results.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| rag |"))
    # 8 and 9 seconds: the standard median 8.5 (not the lower median 8), p90 interpolated 8.9
    assert row == "| rag | 2 | .500 | .750 | .300 | .750 | 1.0 (1.0, 1.0) | 1110 | 8.5 (8.5, 8.9) | 0 |"
    assert "| reagent-none | 2 | .500 | .500 | - | .000 |" in table
    assert "reagent-none -> reagent-both: 1 answer(s) changed" in table
    assert "| b | gold b | wrong | gold b | +1.000 |" in table
    assert ("- reagent-both vs rag (2 questions): F1 1 won, 0 lost, 1 tied, p = 1.000; EM 1 won, 0 lost, "
            "p = 1.000; won b") in table
    assert "| reagent-both | 2 | 1 | 0 | 0 | 0 | 1 |" in table  # backtracking: fired 1, before unknown 1
    assert "| reagent-both | 2 | 1 | 1 | 0 | +0.500 |" in table  # against reagent-none
    assert "| reagent-both | two-roads | 1 | 1 | 1 | 0 | +1.00 |" in table  # the signal b raised, against none
    assert "Records: commit 0.1.0+gaaaaaaa (6 records); configuration unknown (6 records)." in table
    assert (run_folder / "chart.png").read_bytes()[:4] == b"\x89PNG"


def test_a_table_of_two_commits_is_refused_unless_mixing_is_allowed(run_folder: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    path = run_folder / "records.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    records[3]["code"] = "0.1.0+gbbbbbbb"  # reagent-none's b: resumed after a commit
    records[5]["config_id"] = "c0ffee000000"  # reagent-both's b: another configuration
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(BenchRunError, match="mixes records of commits 0.1.0[+]gaaaaaaa [(]5 records[)], "
                                            "0.1.0[+]gbbbbbbb [(]1 record[)]; configurations unknown [(]5"):
        write_report(run_folder)
    summary = write_report(run_folder, allow_mixed=True)
    assert summary["origin"]["mixed"] and summary["origin"]["commits"] == {"0.1.0+gaaaaaaa": 5, "0.1.0+gbbbbbbb": 1}
    assert summary["methods"]["rag"]["origin"]["mixed"] is False
    table = (run_folder / "results.md").read_text()
    assert "**Mixed**: these records come from commits 0.1.0+gaaaaaaa (5 records), 0.1.0+gbbbbbbb (1 record)" in table
    assert ("- reagent-none: commits 0.1.0+gaaaaaaa (1 record), 0.1.0+gbbbbbbb (1 record); "
            "configuration unknown (2 records)") in table
    assert "- reagent-both: commit 0.1.0+gaaaaaaa (2 records); configurations unknown (1 record), c0ffee000000 (1 record)" in table
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(["bench", "report", str(run_folder)])
    err = capsys.readouterr().err
    assert info.value.code == 1 and "--allow-mixed" in err and "Traceback" not in err
    main(["bench", "report", str(run_folder), "--allow-mixed"])
    assert "**Mixed**" in capsys.readouterr().out


def test_duplicate_records_are_refused(run_folder: Path) -> None:
    path = run_folder / "records.jsonl"
    path.write_text(path.read_text() + json.dumps(rec("rag", "a", "x", 0.0, 0.0)) + "\n")
    with pytest.raises(BenchRunError, match="two records for method 'rag' and question 'a'"):
        write_report(run_folder)


def test_cli_report_prints_the_table(run_folder: Path, capsys: pytest.CaptureFixture) -> None:
    (run_folder / "summary.json").unlink(missing_ok=True)
    main(["bench", "report", str(run_folder)])
    assert "| rag | 2 |" in capsys.readouterr().out
    assert (run_folder / "summary.json").is_file()


def test_cli_report_on_a_non_run_folder_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as info:
        main(["bench", "report", str(tmp_path)])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert "not a benchmark run folder" in err and "Traceback" not in err


def test_cli_run_rejects_too_large_n(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    data = tmp_path / "h.json"
    data.write_text(json.dumps([{"_id": "x", "question": "Q?", "answer": "A", "type": "bridge", "level": "easy",
                                 "supporting_facts": [["T", 0]], "context": [["T", ["Text."]]]}]))
    with pytest.raises(SystemExit):
        main(["bench", "run", "--dataset", "hotpotqa", "--file", str(data), "--n", "5", "--out", str(tmp_path / "o")])
    assert "asked for 5 questions but the file has only 1" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_backtracking_accounting_in_the_report(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    config = {"dataset": "hotpotqa", "file": "/data/h.json", "seed": 13, "n": 5, "question_ids": [f"q{i}" for i in range(1, 6)],
              "methods": ["reagent-none", "reagent-both"], "model": {"id": "m"},
              "ids": {"file": "/splits/hotpotqa-test.txt", "sha256": "0" * 64, "count": 170}, "exclude_ids": None}
    (folder / "config.json").write_text(json.dumps(config))
    fired = {"backtracks": {"local": 1, "global": 0}, "backtracked": True}
    records = [
        rec("reagent-none", "q1", "x", 0.0, 0.0), rec("reagent-none", "q2", "gold q2", 1.0, 1.0),
        rec("reagent-none", "q3", "gold q3", 1.0, 1.0), rec("reagent-none", "q4", "y", 0.0, 0.25),
        rec("reagent-none", "q5", "z", 0.0, 0.0),
        rec("reagent-both", "q1", "gold q1", 1.0, 1.0, **fired, answer_before_backtracking="x", em_before=0.0,
            f1_before=0.0, backtracking_changed_answer=True, rules_fired=["span-check"], signals=["type"]),
        rec("reagent-both", "q2", "gold", 0.0, 0.2, **fired, answer_before_backtracking="gold q2", em_before=1.0,
            f1_before=1.0, backtracking_changed_answer=True, rules_fired=["span-check", "bridge"], signals=["type"]),
        rec("reagent-both", "q3", "gold q3", 1.0, 1.0, **fired, answer_before_backtracking="Gold Q3.", em_before=1.0,
            f1_before=1.0, backtracking_changed_answer=False),
        rec("reagent-both", "q4", "gold y", 0.0, 0.5, backtracked=False, backtracking_changed_answer=False),
        rec("reagent-both", "q5", "z", 0.0, 0.0, **fired, answer_before_backtracking=None),
    ]
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = write_report(folder)
    assert summary["backtracking"] == {"reagent-both": {"questions": 5, "fired": 4, "changed": 2, "unknown": 1,
                                                        "exact": 0, "fixed": ["q1"], "broken": ["q2"],
                                                        "shadow_calls": 0, "shadow_seconds": 0}}
    paired = summary["against_reagent_none"]["reagent-both"]
    # F1 changes: +1, -0.8, 0, +0.25, 0 -> mean 0.09
    assert paired == {"questions": 5, "changed": 3, "fixed": ["q1"], "broken": ["q2"], "delta_f1": pytest.approx(0.09)}
    assert summary["methods"]["reagent-both"]["rules_fired"] == {"span-check": 2, "bridge": 1}
    assert summary["methods"]["reagent-both"]["signals"] == {"type": 2}
    duel = summary["head_to_head"]["reagent-none vs reagent-both"]["f1"]
    assert (duel["wins"], duel["losses"], duel["ties"]) == (1, 2, 2) and duel["p_value"] == 1.0
    table = (folder / "results.md").read_text()
    assert "| reagent-both | 5 | 4 | 2 | 1 | 1 | 1 | 0, 0.0 |" in table
    assert "- reagent-both; fixed q1; broken q2" in table
    assert "| reagent-both | 5 | 3 | 1 | 1 | +0.090 |" in table
    assert "Questions filtered by --ids `/splits/hotpotqa-test.txt` (170 ids) before the draw." in table


def test_the_roads_verdicts_in_the_report(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    config = {"dataset": "hotpotqa", "file": "/data/h.json", "seed": 13, "n": 3, "question_ids": ["q1", "q2", "q3"],
              "methods": ["reagent-both"], "model": {"id": "m"}}
    (folder / "config.json").write_text(json.dumps(config))

    def roads(chain: str, whole: str, winner: str, judged: bool = False) -> dict:
        return {"chain": chain, "whole": whole, "winner": winner, "judged": judged, "reason": "r"}

    records = [  # rec's gold answer for q is "gold q"
        rec("reagent-both", "q1", "gold q1", 1.0, 1.0, roads=roads("wrong", "gold q1", "whole question")),
        rec("reagent-both", "q2", "wrong", 0.0, 0.0, roads=roads("gold q2", "wrong", "whole question", judged=True)),
        rec("reagent-both", "q3", "x", 0.0, 0.0, roads=roads("x", "y", "chain")),
    ]
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = write_report(folder)
    assert summary["roads"] == {"reagent-both": {"settled": 3, "judged": 1, "better": ["q1"], "worse": ["q2"],
                                                 "equal": 1, "chain_kept": 1}}
    table = (folder / "results.md").read_text()
    assert "| reagent-both | 3 | 1 | 1 | 1 | 1 | 1 |" in table
    assert "- reagent-both; kept the better q1; kept the worse q2" in table


def test_tables_of_two_machines_and_what_the_seconds_measured(run_folder: Path, tmp_path: Path) -> None:
    from reagent_local.bench.tables import tables

    text = tables([run_folder])
    assert "Seconds: all of these records were written before each method's question began with an empty" in text
    path = run_folder / "records.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**r, "machine_id": "m1", "cold_start": True, "cached_prompt_tokens": 64})
                            + "\n" for r in records))
    other = tmp_path / "other"
    other.mkdir()
    (other / "config.json").write_text((run_folder / "config.json").read_text())
    (other / "records.jsonl").write_text("".join(json.dumps({**r, "machine_id": "m2"}) + "\n" for r in records))
    with pytest.raises(BenchRunError, match="these tables would pair records of different machines"):
        tables([run_folder, other])
    shown = tables([run_folder, other], allow_mixed=True)
    assert f"**Mixed machines**: {run_folder} on m1; {other} on m2" in shown
    assert "Seconds: cold per method per question." in tables([run_folder])
    assert "Prompt tokens per question taken from that cache: rag 64" in tables([run_folder])
    # one folder of two machines is a mixed table
    path.write_text("".join(json.dumps({**r, "machine_id": "m1" if n else "m2"}) + "\n"
                            for n, r in enumerate(records)))
    with pytest.raises(BenchRunError, match="machines m1 [(]5 records[)], m2 [(]1 record[)]"):
        write_report(run_folder)
