"""The noise floor: answers that change between two thread counts, read from two run folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reagent_local.bench.noise import NOISE_FILE, changed_answers, noise_line, noise_result, read_noise
from reagent_local.errors import BenchRunError


def rec(qid: str, prediction: str, **extra) -> dict:
    return {"method": "rag", "id": qid, "prediction": prediction, **extra}


def test_changed_answers_exactly_and_after_normalisation() -> None:
    one = [rec("a", "Paris"), rec("b", "the Seine"), rec("c", "1901"), rec("d", "x")]
    two = [rec("a", "Paris"), rec("b", "Seine"), rec("c", "1902")]
    assert changed_answers(one, two) == {"questions": 3, "changed": 2, "changed_normalised": 1,
                                         "changed_ids": ["b", "c"]}


def write(folder: Path, records: list[dict]) -> Path:
    folder.mkdir(parents=True)
    machine = {"machine_id": "m1", "cpu": "cpu", "flags": [], "llama_cpp": "0.3", "extra_buffers": False}
    (folder / "config.json").write_text(json.dumps({"dataset": "hotpotqa", "model": {"id": "q"},
                                                    "sessions": [{"machine": machine}]}))
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def test_the_result_from_two_folders_names_the_machine(tmp_path: Path) -> None:
    one = write(tmp_path / "threads-1", [rec("a", "x"), rec("b", "y"), rec("c", "", error="boom")])
    two = write(tmp_path / "threads-2", [rec("a", "x"), rec("b", "z"), rec("c", "w")])
    result = noise_result({2: two, 1: one}, "rag")
    assert result["threads"] == [1, 2] and result["questions"] == 2 and result["changed_ids"] == ["b"]
    assert result["machine"]["machine_id"] == "m1" and result["model"] == "q"
    line = noise_line(result, ["m2"])
    assert line and "1 of 2 rag answers changed" in line and "(another machine than these records')" in line
    with pytest.raises(BenchRunError, match="two thread counts"):
        noise_result({1: one}, "rag")


def test_the_shipped_measurement_reads() -> None:
    shipped = read_noise(NOISE_FILE)
    if shipped is None:
        pytest.skip("no noise.json shipped yet")
    assert shipped["threads"] == [1, 2] and 0 <= shipped["changed"] <= shipped["questions"]
    assert shipped["machine"]["machine_id"] and noise_line(shipped)
    assert read_noise(Path("/nonexistent.json")) is None


def test_a_measurement_runs_one_folder_per_thread_count_and_writes_its_json(driver: dict, tmp_path: Path) -> None:
    from reagent_local.bench.noise import measure_noise

    llm, retriever, config = driver["build"](driver["data"])
    options = dict(config=config, out=tmp_path / "noise", n=4, llm=llm, retriever=retriever)
    result = measure_noise("hotpotqa", driver["data"], write=tmp_path / "noise.json", **options)
    assert result["threads"] == [1, 2] and result["questions"] == 4 and result["changed"] == 0  # a fake: no noise
    for count in (1, 2):
        run = json.loads((tmp_path / "noise" / f"threads-{count}" / "config.json").read_text())
        assert run["config"]["llm"]["n_threads"] == count and run["methods"] == ["rag"]
    assert read_noise(tmp_path / "noise.json") == result
    assert measure_noise("hotpotqa", driver["data"], **options)["questions"] == 4  # the folders are resumed
    with pytest.raises(BenchRunError, match="two different counts"):
        measure_noise("hotpotqa", driver["data"], threads=(2, 2), **options)


def test_the_command_refuses_threads_that_are_not_numbers(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from reagent_local.cli import main

    data = tmp_path / "d.json"
    data.write_text("[]")
    with pytest.raises(SystemExit):
        main(["bench", "noise", "--dataset", "hotpotqa", "--file", str(data), "--threads", "one,two",
              "--out", str(tmp_path / "o")])
    assert "--threads takes two numbers" in capsys.readouterr().err
