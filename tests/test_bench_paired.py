"""`bench compare`: two sides paired on the same questions, with known answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reagent_local.bench.compare_view import comparison, markdown
from reagent_local.bench.paired import compare_records, pair_records, paired_stats
from reagent_local.cli import main
from reagent_local.errors import BenchRunError


def rec(method: str, qid: str, em: float, f1: float, dataset: str = "hotpotqa", qtype: str = "bridge",
        **extra) -> dict:
    return {"method": method, "id": qid, "dataset": dataset, "type": qtype, "em": em, "f1": f1,
            "prediction": "", "answers": ["x"], "llm_calls": 1, "prompt_tokens": 1, "completion_tokens": 1,
            "seconds": 1.0, "code": "0.1.0+gaaaaaaa", "config_id": "c1", **extra}


# A against B, by (em, f1): h1 fixed, h2 broken, h3 won on F1 only, h4 tied, w1 fixed, w2 tied;
# h5 only in A, w3 only in B
A = [rec("x", "h1", 1, 1.0), rec("x", "h2", 0, 0.5, qtype="comparison"), rec("x", "h3", 0, 0.6),
     rec("x", "h4", 1, 1.0, qtype="comparison"), rec("x", "h5", 1, 1.0),
     rec("x", "w1", 1, 1.0, "2wiki", "compositional"), rec("x", "w2", 0, 0.0, "2wiki", "compositional")]
B = [rec("y", "h1", 0, 0.2), rec("y", "h2", 1, 1.0, qtype="comparison"), rec("y", "h3", 0, 0.4),
     rec("y", "h4", 1, 1.0, qtype="comparison"), rec("y", "w1", 0, 0.0, "2wiki", "compositional"),
     rec("y", "w2", 0, 0.0, "2wiki", "compositional"), rec("y", "w3", 1, 1.0, "2wiki", "compositional")]


def test_pairs_on_dataset_and_id_and_names_the_questions_left_out() -> None:
    pairs, only_a, only_b = pair_records(A, B)
    assert [a["id"] for a, _ in pairs] == ["h1", "h2", "h3", "h4", "w1", "w2"]
    assert (only_a, only_b) == (["h5"], ["w3"])
    # the same id in two datasets is two questions
    pairs, only_a, only_b = pair_records([rec("x", "q", 1, 1.0)], [rec("y", "q", 1, 1.0, "musique")])
    assert pairs == [] and only_a == ["q"] and only_b == ["q"]
    with pytest.raises(BenchRunError, match="side A answers question 'h1' [(]hotpotqa[)] twice"):
        pair_records([A[0], A[0]], B)


def test_known_differences_won_lost_fixed_broken() -> None:
    result = compare_records(A, B, resamples=2000)
    overall = result["all"]
    assert result["questions"] == 6
    assert overall["f1_diff"] == pytest.approx((0.8 - 0.5 + 0.2 + 0 + 1.0 + 0) / 6, abs=1e-6)
    assert overall["em_diff"] == pytest.approx((1 - 1 + 0 + 0 + 1 + 0) / 6, abs=1e-6)
    assert overall["won"] == ["h1", "h3", "w1"] and overall["lost"] == ["h2"] and overall["tied"] == 2
    assert overall["p_value"] == pytest.approx(0.625)  # 3 won, 1 lost: 2 * (1 + 4) / 16
    assert overall["fixed"] == ["h1", "w1"] and overall["broken"] == ["h2"]
    low, high = overall["f1_interval"]
    assert low < overall["f1_diff"] < high
    assert result["by_dataset"]["2wiki"]["f1_diff"] == pytest.approx(0.5)
    assert result["by_dataset"]["hotpotqa"]["fixed"] == ["h1"]
    assert list(result["by_type"]) == ["2wiki: compositional", "hotpotqa: bridge", "hotpotqa: comparison"]
    assert result["by_type"]["hotpotqa: comparison"]["broken"] == ["h2"]
    assert result["by_type"]["hotpotqa: comparison"]["f1_diff"] == pytest.approx(-0.25)
    assert compare_records(A, B, resamples=2000) == result  # seeded: the same interval every time


def test_no_pairs_gives_empty_statistics() -> None:
    empty = paired_stats([])
    assert empty["questions"] == 0 and empty["f1_diff"] is None and empty["f1_interval"] is None
    assert empty["p_value"] == 1.0


def write_run(folder: Path, records: list[dict], config: dict | None = None) -> Path:
    folder.mkdir(parents=True)
    run = {"dataset": "hotpotqa", "methods": sorted({r["method"] for r in records}), "question_ids": [],
           "config": config or {"pipeline": {"two_roads": True}}}
    (folder / "config.json").write_text(json.dumps(run))
    (folder / "records.jsonl").write_text("".join(json.dumps({k: v for k, v in r.items() if k != "config_id"})
                                                  + "\n" for r in records))
    return folder


def test_two_folders_two_methods_and_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    run_a = write_run(tmp_path / "a", [{**r, "method": "reagent-both"} for r in A])
    run_b = write_run(tmp_path / "b", [{**r, "method": "reagent-both"} for r in B],
                      {"pipeline": {"two_roads": False}})
    result = comparison([run_a, run_b], resamples=1000)
    assert result["a"]["method"] == result["b"]["method"] == "reagent-both"
    assert result["config_changes"] == ["pipeline.two_roads: True -> False"]
    text = markdown(result)
    assert "- left out, answered only in A (1): h5" in text and "- left out, answered only in B (1): w3" in text
    assert "| all | 6 | .683 | .433 | +.250 [" in text
    assert "| 3 / 1 / 2 | 0.625 | 2 / 1 |" in text
    assert "| hotpotqa: comparison | 2 |" in text and "- fixed (2): h1, w1" in text
    main(["bench", "compare", str(run_a), str(run_b), "--json", "--resamples", "500"])
    data = json.loads(capsys.readouterr().out)
    assert data["all"]["fixed"] == ["h1", "w1"] and data["bootstrap"]["resamples"] == 500
    # one folder with both methods
    both = write_run(tmp_path / "both", [{**r, "method": "reagent-both"} for r in A]
                     + [{**r, "method": "reagent-none"} for r in B])
    main(["bench", "compare", str(both), "--methods", "reagent-both,reagent-none"])
    out = capsys.readouterr().out
    assert "# reagent-both (A) against reagent-none (B)" in out and "| all | 6 |" in out
    # which method, when a folder holds several
    with pytest.raises(SystemExit):
        main(["bench", "compare", str(both), str(run_b)])
    assert "holds 2 methods (reagent-both, reagent-none): which one?" in capsys.readouterr().err
    main(["bench", "compare", str(both), str(run_b), "--method", "reagent-both"])
    assert "| all | 6 |" in capsys.readouterr().out


def test_a_side_pooled_over_folders_and_a_mixed_side(tmp_path: Path) -> None:
    hot = write_run(tmp_path / "a-hot", [r for r in A if r["dataset"] == "hotpotqa"])
    wiki = write_run(tmp_path / "a-wiki", [r for r in A if r["dataset"] == "2wiki"])
    other = write_run(tmp_path / "b", [{**r, "method": "x"} for r in B])
    result = comparison([f"{hot},{wiki}", other], resamples=500)
    assert result["questions"] == 6 and result["a"]["folders"] == [str(hot), str(wiki)]
    records = [json.loads(line) for line in (wiki / "records.jsonl").read_text().splitlines()]
    records[0]["code"] = "0.1.0+gbbbbbbb"
    (wiki / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(BenchRunError, match="mixes records of commits 0.1.0[+]gaaaaaaa [(]6 records[)], 0.1.0[+]gbbbbbbb [(]1 record[)]"):
        comparison([f"{hot},{wiki}", other])
    mixed = comparison([f"{hot},{wiki}", other], allow_mixed=True, resamples=500)
    assert mixed["a"]["origin"]["mixed"] and "commits 0.1.0+gaaaaaaa (6 records)" in markdown(mixed)


def test_sides_of_two_machines_are_refused_unless_allowed_and_then_labelled(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture) -> None:
    run_a = write_run(tmp_path / "a", [{**r, "machine_id": "aaaa"} for r in A])
    run_b = write_run(tmp_path / "b", [{**r, "method": "x", "machine_id": "bbbb"} for r in B])
    with pytest.raises(BenchRunError, match="pair records of different machines [(]A on aaaa; B on bbbb[)]"):
        comparison([run_a, run_b], resamples=200)
    with pytest.raises(SystemExit):
        main(["bench", "compare", str(run_a), str(run_b)])
    assert "--allow-mixed" in capsys.readouterr().err
    result = comparison([run_a, run_b], resamples=200, allow_mixed=True)
    assert "- **Mixed machines**: A on aaaa; B on bbbb;" in markdown(result)
    # records older than machine ids beside new ones: nothing says they ran there
    old = write_run(tmp_path / "old", [{**r, "method": "x"} for r in B])
    with pytest.raises(BenchRunError, match="A on aaaa; B on unknown"):
        comparison([run_a, old], resamples=200)
    # two old folders still pair, as before
    assert comparison([write_run(tmp_path / "old-a", A), old], resamples=200)["machines_mixed"] is None


def test_the_noise_floor_is_printed_beside_the_difference(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    noise = {"threads": [1, 2], "changed": 3, "changed_normalised": 2, "questions": 20, "method": "rag",
             "measured": "2026-12-07T05:00:00+00:00", "commit": "0.1.0+gabc",
             "machine": {"machine_id": "aaaa", "cpu": "Intel Xeon", "flags": ["avx2"], "llama_cpp": "0.3.36",
                         "extra_buffers": False}}
    path = tmp_path / "noise.json"
    path.write_text(json.dumps(noise))
    monkeypatch.setattr("reagent_local.bench.compare_view.read_noise", lambda: json.loads(path.read_text()))
    run_a = write_run(tmp_path / "a", [{**r, "machine_id": "aaaa"} for r in A])
    run_b = write_run(tmp_path / "b", [{**r, "method": "x", "machine_id": "aaaa"} for r in B])
    text = markdown(comparison([run_a, run_b], resamples=200))
    assert ("Noise floor (`reagent bench noise`, 2026-12-07, commit 0.1.0+gabc): between 1 and 2 threads on "
            "Intel Xeon (avx2), llama-cpp-python 0.3.36, extra buffers off (the machine of these records), 3 of 20 "
            "rag answers changed (2 after normalisation).") in text
    monkeypatch.setattr("reagent_local.bench.compare_view.read_noise", lambda: None)
    assert "Noise floor" not in markdown(comparison([run_a, run_b], resamples=200))
