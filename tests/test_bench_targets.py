"""`reagent bench targets`: each target of issues 49 and 51 computed from records, met or missed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reagent_local.bench.targets import (
    baseline_row, check_targets, cost_rows, none_calls, repair_counts, repairs_row, time_rows, trust_row, without_row,
)
from reagent_local.cli import main
from reagent_local.errors import BenchRunError


def both(qid: str, em: float, *, without: float | None = None, fired: bool = False, calls: int = 4,
         dataset: str = "hotpotqa", shadow: dict | None = None, **extra) -> dict:
    """A reagent-both record: right (em 1) or wrong, and its answer without backtracking right or wrong."""
    without = em if without is None else without
    return {"method": "reagent-both", "id": qid, "dataset": dataset, "prediction": "x", "em": em, "f1": em,
            "backtracked": fired, "em_without_backtracking": without, "f1_without_backtracking": without,
            "llm_calls": calls, "without_backtracking_cost": shadow, "code": "0.1.0+gaaaaaaa", **extra}


def test_repairs_count_caught_wrong_answers_and_broken_right_ones() -> None:
    records = [both("a", 1, without=0, fired=True), both("b", 0, without=0, fired=True),
               both("c", 0, without=0, fired=True), both("d", 0, without=1, fired=True),
               both("e", 0, without=0), both("f", 1, without=1, fired=True)]
    assert repair_counts(records) == {"fired": 5, "caught": 3, "repaired": 1, "broken": 1}
    row = repairs_row(records, "pooled")
    # 1 of 3 caught is a third, but 1 broken is more than a third of 1 repaired
    assert row["met"] is False and row["value"] == "1 of 3 caught repaired (33%), 1 broken"
    assert repairs_row(records[:3] + records[4:], "pooled")["met"] is True
    assert repairs_row([both("e", 0)], "pooled")["met"] is None  # nothing caught: no verdict


def test_both_minus_none_needs_the_gain_and_an_interval_above_zero() -> None:
    gained = [both(str(i), 1, without=0) for i in range(10)] + [both(f"s{i}", 1) for i in range(10)]
    row = without_row(gained, "pooled")
    assert row["met"] is True and row["value"].startswith("+.500 [")
    mixed = [both("a", 1, without=0), both("b", 0, without=1)] + [both(f"s{i}", 1) for i in range(8)]
    assert without_row(mixed, "pooled")["met"] is False
    assert without_row([{**both("a", 1), "f1_without_backtracking": None}], "pooled")["met"] is None


def test_trust_needs_precision_coverage_and_auroc() -> None:
    def scored(qid: str, em: float, p: float) -> dict:
        return both(qid, em, trust={"probability": p, "trusted": p >= 0.5})

    good = [scored(f"r{i}", 1, 0.9) for i in range(6)] + [scored(f"w{i}", 0, 0.2) for i in range(4)]
    assert trust_row(good, "pooled")["met"] is True
    few = [scored(f"r{i}", 1, 0.9) for i in range(3)] + [scored(f"w{i}", 0, 0.2) for i in range(7)]
    assert trust_row(few, "pooled")["met"] is False  # right when trusted, but covering 30%
    assert trust_row([both("a", 1)], "pooled")["met"] is None


def test_the_better_baseline_is_chosen_per_dataset() -> None:
    mine = [both(str(i), 1.0) for i in range(4)]
    rag = [{"method": "rag", "id": str(i), "em": 0, "f1": 0.5} for i in range(4)]
    ircot = [{"method": "ircot", "id": str(i), "em": 0, "f1": f} for i, f in enumerate([1.0, 1.0, 0.9, 0.9])]
    row = baseline_row(mine, {"rag": rag, "ircot": ircot}, "hotpotqa")
    assert row["value"].startswith("+.050") and "against ircot" in row["value"] and row["met"] is True
    assert baseline_row(mine, {"rag": rag, "ircot": []}, "x")["met"] is None  # no question answered by all


def test_calls_against_the_answer_without_backtracking() -> None:
    assert none_calls(both("a", 1, calls=7, fired=True, shadow={"calls": 1, "replayed": 2})) == 3
    assert none_calls(both("a", 1, calls=4)) == 4  # nothing fired: the paths never parted
    records = [both("a", 1, calls=9, fired=True, shadow={"calls": 1, "replayed": 2}), both("b", 1, calls=3),
               both("c", 1, calls=3)]
    median, ratio = cost_rows(records, "pooled")
    assert median["value"] == "3" and median["met"] is True
    assert ratio["value"] == "3.00x none's" and ratio["met"] is False


def test_time_per_dataset() -> None:
    timed = [both(str(i), 1, seconds=s) for i, s in enumerate([10, 12, 14, 16, 30])]
    timed += [both(f"w{i}", 1, dataset="2wiki", seconds=s) for i, s in enumerate([20, 20, 20])]
    hot, wiki = time_rows(timed)
    assert (hot["scope"], hot["met"]) == ("hotpotqa", True) and hot["value"].startswith("median 14.0 s")
    assert (wiki["scope"], wiki["met"]) == ("2wiki", False)


def test_every_target_has_a_row() -> None:
    rows = check_targets([both("a", 1), both("b", 0, dataset="2wiki")],
                         {"rag": [{"method": "rag", "id": "a", "dataset": "hotpotqa", "em": 0, "f1": 0}]})
    assert [(r["target"], r["scope"]) for r in rows] == [
        ("repairs", "pooled"), ("both - none", "pooled"), ("both - none", "hotpotqa"), ("both - none", "2wiki"),
        ("trust", "pooled"), ("over the baselines", "hotpotqa"),
        ("over the baselines", "2wiki"), ("median calls", "pooled"), ("calls where it fired", "pooled")]


def write_run(folder: Path, records: list[dict]) -> Path:
    folder.mkdir(parents=True)
    run = {"dataset": records[0]["dataset"], "methods": sorted({r["method"] for r in records}), "question_ids": [],
           "config": {"pipeline": {"two_roads": True}}}
    (folder / "config.json").write_text(json.dumps(run))
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def test_the_command_reads_run_folders_and_refuses_two_machines(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture) -> None:
    def baseline(method: str, qid: str, f1: float) -> dict:
        return {"method": method, "id": qid, "dataset": "hotpotqa", "em": 0, "f1": f1, "code": "0.1.0+gaaaaaaa"}

    run = write_run(tmp_path / "hot", [both("a", 1, without=0, fired=True, shadow={"calls": 1, "replayed": 2}),
                                       both("b", 1), baseline("rag", "a", 0.2), baseline("rag", "b", 0.4),
                                       baseline("ircot", "a", 0.1), baseline("ircot", "b", 0.1)])
    quiet = write_run(tmp_path / "quiet", [both("a", 1, seconds=12.0), both("b", 1, seconds=14.0)])
    main(["bench", "targets", str(run), "--time", str(quiet)])
    out = capsys.readouterr().out
    assert "| repairs | pooled | 1 of 1 caught repaired (100%), 0 broken |" in out
    assert "| over the baselines | hotpotqa | +.700 [" in out and "against rag" in out
    assert "| time | hotpotqa | median 13.0 s, p90 13.8 s |" in out
    main(["bench", "targets", str(run), "--json"])
    assert json.loads(capsys.readouterr().out)["rows"][0]["met"] is True
    other = write_run(tmp_path / "other", [{**both("a", 1), "machine_id": "bbbb"}])
    with pytest.raises(BenchRunError, match="different machines"):
        from reagent_local.bench.targets import read_targets
        read_targets([run], time_folders=[other])
    with pytest.raises(SystemExit):
        main(["bench", "targets", str(run), "--time", str(other)])
    assert "different machines" in capsys.readouterr().err
