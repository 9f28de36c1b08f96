"""Benchmarks stay fair: each record says whether its seconds shared the machine, and the report marks them."""

from __future__ import annotations

import json
from pathlib import Path

from reagent_local.bench.report import write_report
from reagent_local.bench.runner import answer_one
from reagent_local.bench.methods import MethodResult
from reagent_local.datasets import Question
from reagent_local.runtime import contention
from reagent_local.runtime.contention import CpuMeter, Sharing, machine_record


def test_the_cpu_meter_counts_other_processes_time_not_this_ones(monkeypatch):
    ticks = iter([(1000, 100), (1000 + 150, 100 + 50)])  # 1.5 s busy in all, 0.5 s of it this process's
    monkeypatch.setattr(contention, "_TICKS", 100)
    current = {}

    def read() -> None:
        current["busy"], current["own"] = next(ticks)

    monkeypatch.setattr(contention, "_busy_ticks", lambda: current["busy"])
    monkeypatch.setattr(contention, "_own_ticks", lambda: current["own"])
    clock = iter([10.0, 11.0])
    monkeypatch.setattr(contention.time, "monotonic", lambda: next(clock))
    meter = CpuMeter(cores=2)
    read()
    start = meter.mark()
    read()
    assert meter.others_share(start, meter.mark()) == 0.5  # 1 s of others' CPU over 2 cores x 1 s


def test_the_meter_says_nothing_without_proc(monkeypatch):
    monkeypatch.setattr(contention, "_busy_ticks", lambda: None)
    meter = CpuMeter(cores=2)
    assert meter.others_share(meter.mark(), meter.mark()) is None


def test_machine_records_local_and_served_models():
    quiet = Sharing()
    quiet.add(threads=2, others=0, seconds=3.0)
    assert machine_record(quiet, 0.05, 4.0) == {"via": "local", "others_cpu": 0.05, "model_processes": 0,
                                                "threads": 2, "waited_seconds": None, "shared": False}
    beside = Sharing()
    beside.add(threads=1, others=1, seconds=3.0)
    assert machine_record(beside, 0.1, 4.0)["shared"]  # another model process was busy
    assert machine_record(quiet, 0.6, 4.0)["shared"]  # other processes took the cores
    served = Sharing(via="server")
    served.add(threads=2, seconds=2.0, waited=3.0, others_cpu=0.0)  # waited while the server answered others
    record = machine_record(served, 0.9, 6.0)  # this process's own meter sees the server working for it: ignored
    assert record["via"] == "server" and record["waited_seconds"] == 3.0 and record["others_cpu"] == 0.5
    assert record["shared"]
    served.reset()
    served.add(threads=2, seconds=2.0, waited=0.0, others_cpu=0.0)
    assert not machine_record(served, 0.9, 2.1)["shared"] and served.via == "server"


def test_answer_one_records_the_machine_of_each_question():
    class Model:
        sharing = Sharing()

    class Method:
        name = "fake"

        def answer(self, question: str) -> MethodResult:
            Model.sharing.add(threads=1, others=1, seconds=0.01)
            return MethodResult(prediction="x", llm_calls=1)

    Model.sharing.add(threads=2, others=3, seconds=5.0)  # an earlier question's call: not this one's
    question = Question(id="q", dataset="hotpotqa", question="Who?", answers=("x",), type="bridge", paragraphs=(),
                        supporting=(), supporting_titles=())
    record = answer_one(Method(), question, Model())
    assert record["machine"]["model_processes"] == 1 and record["machine"]["threads"] == 1
    assert record["machine"]["shared"] and record["machine"]["via"] == "local"


def test_bench_report_marks_seconds_measured_under_contention(tmp_path: Path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"dataset": "hotpotqa", "file": "/d.json", "seed": 1, "n": 2,
                                                    "question_ids": ["a", "b"], "methods": ["rag", "closed-book"],
                                                    "model": {"id": "m"}}))
    base = {"dataset": "hotpotqa", "type": "bridge", "question": "Q?", "prediction": "p", "answers": ["p"], "em": 1.0,
            "f1": 1.0, "cited": [], "support_precision": None, "support_recall": 0.0, "llm_calls": 1,
            "prompt_tokens": 10, "completion_tokens": 1, "seconds": 2.0, "code": "0.1.0+gaaaaaaa"}
    shared = {"via": "local", "others_cpu": 0.5, "model_processes": 1, "threads": 1, "waited_seconds": None,
              "shared": True}
    records = [{**base, "method": "rag", "id": "a", "machine": shared},
               {**base, "method": "rag", "id": "b", "machine": {**shared, "shared": False}},
               {**base, "method": "closed-book", "id": "a"}, {**base, "method": "closed-book", "id": "b"}]
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = write_report(folder)
    assert summary["methods"]["rag"]["seconds_shared"] == 1 and summary["methods"]["closed-book"]["seconds_shared"] == 0
    table = (folder / "results.md").read_text()
    rag_row = next(line for line in table.splitlines() if line.startswith("| rag "))
    book_row = next(line for line in table.splitlines() if line.startswith("| closed-book "))
    assert "†" in rag_row and "†" not in book_row
    assert "† Seconds measured under contention (rag 1 of 2 questions)" in table

    from reagent_local.bench.tables import folder_table

    assert "†" in folder_table(folder)


def test_bench_ablate_marks_seconds_measured_under_contention():
    from reagent_local.bench.ablate import cost
    from reagent_local.bench.ablate_view import _cost

    quiet = [{"llm_calls": 4, "seconds": 10.0, "machine": {"shared": False}}, {"llm_calls": 6, "seconds": 12.0}]
    shared = [{"llm_calls": 4, "seconds": 30.0, "machine": {"shared": True}}, {"llm_calls": 6, "seconds": 12.0}]
    row = {"cost": {"baseline": cost(quiet), "ablated": cost(shared)}}
    assert row["cost"]["baseline"]["seconds_shared"] == 0 and row["cost"]["ablated"]["seconds_shared"] == 1
    assert _cost(row, "seconds_median", 1) == "11.0 / 21.0 †"
    assert _cost(row, "calls_median", 1) == "5.0 / 5.0"
