"""`bench ablate`: only the questions where a part acted are answered again, the rest are carried over exactly.

The scripted scenario (bench_support: ablation_*) answers through the real pipeline: on the four
"founder" questions the rule anchor-each-step sends a plan back and makes them right, on the four
"born" questions the low-confidence retry breaks a right answer, on "w0" the whole question is read
(no signal fires), on "c0" nothing acts. Every ablation is also run in full over all ten questions,
so the carried-over answers are checked against what the ablation really gives.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from reagent_local.bench.ablate import ablated_side, differences, run_ablations, verdict
from reagent_local.bench.ablate_plan import CHECK_SEED
from reagent_local.bench.ablate_spec import parse_spec, resolve_spec
from reagent_local.bench.acted import Trace, acted, marks, switched_off
from reagent_local.bench.records import RECORDS_FILE, read_records
from reagent_local.cli import main
from reagent_local.errors import BenchRunError

from bench_support import ablation_config, ablation_index, ablation_model, run_ablation_baseline, write_ablation_dataset

FOUNDER_IDS = ["f0", "f1", "f2", "f3"]
BORN_IDS = ["b0", "b1", "b2", "b3"]
ALL_IDS = ["f0", "f1", "f2", "f3", "c0", "w0", "b0", "b1", "b2", "b3"]
SAME = ("prediction", "llm_calls", "prompt_tokens", "completion_tokens")


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The baseline (reagent-both) and every ablation run in full, over all ten questions."""
    folder = tmp_path_factory.mktemp("ablate")
    data = write_ablation_dataset(folder / "scenario.json")
    full = {
        "rule": run_ablation_baseline(data, folder / "full-rule", ["reagent-both-no-anchor-each-step"]),
        "confidence": run_ablation_baseline(data, folder / "full-confidence",
                                            config=ablation_config(**{"pipeline.min_confidence": 0})),
        "roads": run_ablation_baseline(data, folder / "full-roads", config=ablation_config(**{"pipeline.two_roads": False})),
        "local": run_ablation_baseline(data, folder / "full-local", ["reagent-local"]),
        "global": run_ablation_baseline(data, folder / "full-global", ["reagent-global"]),
    }
    base = run_ablation_baseline(data, folder / "base")
    return {"folder": folder, "data": data, "base": folder / "base", "records": {r["id"]: r for r in base},
            "full": {name: {r["id"]: r for r in records} for name, records in full.items()}}


def ablate(scenario: dict, whats: list[str], out: Path, llm=None, baselines=None, **options) -> list[dict]:
    data = scenario["data"]
    return run_ablations(baselines or [scenario["base"]], whats, out=out, llm=llm or ablation_model(),
                         retriever=lambda folder: ablation_index(data), resamples=2000, **options)


def paired(result: dict) -> dict[str, dict]:
    lines = (Path(result["folder"]) / "paired.jsonl").read_text(encoding="utf-8").splitlines()
    return {row["id"]: row for row in map(json.loads, lines)}


def assert_exact(result: dict, full: dict[str, dict]) -> None:
    """The ablated side (answered again or carried over) is what the ablation gives on every question."""
    rows = paired(result)
    assert list(rows) == ALL_IDS
    for qid, row in rows.items():
        assert {f: row["ablated"][f] for f in SAME} == {f: full[qid][f] for f in SAME}, qid


def test_a_rule_is_ablated_where_it_fired_and_the_rest_is_carried_over(scenario: dict, tmp_path: Path) -> None:
    llm = ablation_model()
    (result,) = ablate(scenario, ["rule:anchor-each-step"], tmp_path / "out", llm=llm)
    (row,) = result["datasets"]
    assert result["ablated_method"] == "reagent-both-no-anchor-each-step" and row["affected"] == FOUNDER_IDS
    assert (row["reran"], row["carried_over"], result["reran_all"]) == (4, 6, False)
    rerun = Path(row["rerun_folder"])
    assert rerun == tmp_path / "out" / "rule-anchor-each-step" / "base"
    assert [r["id"] for r in read_records(rerun / RECORDS_FILE)] == FOUNDER_IDS
    assert json.loads((rerun / "config.json").read_text())["question_ids"] == FOUNDER_IDS
    # the model was asked about the founder questions only
    asked = {r.messages[-1]["content"].splitlines()[0] for r in llm.requests_for("Decomposition")}
    assert asked == {f"Question: When was the founder of the {firm} Company born?"
                     for firm in ("Ardent", "Borel", "Calder", "Dunmore")}
    assert not any("Norland" in r.messages[-1]["content"] or "Brandt born" in r.messages[-1]["content"]
                   for r in llm.requests)
    rows = paired(result)
    assert [q for q, r in rows.items() if r["carried_over"]] == ["c0", "w0", *BORN_IDS]
    for qid in ("c0", "w0", *BORN_IDS):
        assert rows[qid]["ablated"] == rows[qid]["baseline"]
    assert_exact(result, scenario["full"]["rule"])
    stats = result["pooled"]["stats"]
    assert stats["fixed"] == FOUNDER_IDS and stats["broken"] == [] and stats["won"] == FOUNDER_IDS
    assert stats["f1_diff"] == pytest.approx(0.4) and stats["f1_interval"][0] > 0
    assert result["pooled"]["verdict"] == "pays" and result["exact"] is None
    cost = result["pooled"]["cost"]
    assert cost["baseline"]["calls"] == sum(r["llm_calls"] for r in scenario["records"].values())
    # without the rule the first plan stands: its second step, searched on its own words, finds nothing (a failed
    # check is not retried), the model assembles the two unlinked steps (no answer) and the whole question is read
    # (none): a call more than the plan the rule sent back
    assert cost["ablated"]["calls"] == cost["baseline"]["calls"] + 4 * (5 - 4)
    text = (tmp_path / "out" / "ablation.md").read_text()
    assert "| `rule:anchor-each-step` | base | 10 | 4 | +.400 [" in text and "| **pays** | not checked |" in text


def test_settings_are_ablated_where_the_table_says_they_acted(scenario: dict, tmp_path: Path) -> None:
    results = ablate(scenario, ["setting:pipeline.min_confidence=0", "setting:pipeline.two_roads=false",
                                "setting:retrieval.focus_chars=500", "setting:pipeline.min_confidence=0.9"],
                     tmp_path / "out")
    confidence, roads, focus, higher = results
    assert confidence["datasets"][0]["affected"] == BORN_IDS
    assert confidence["config_changes"] == ["pipeline.min_confidence: 0.7 -> 0.0"]
    assert confidence["pooled"]["stats"]["broken"] == BORN_IDS and confidence["pooled"]["verdict"] == "hurts"
    assert_exact(confidence, scenario["full"]["confidence"])
    # w0 shows the second road only in the event log: the whole question read, the roads agreeing
    assert roads["datasets"][0]["affected"] == ["w0"]
    assert_exact(roads, scenario["full"]["roads"])
    assert paired(roads)["w0"]["ablated"]["llm_calls"] == paired(roads)["w0"]["baseline"]["llm_calls"] - 1
    assert roads["pooled"]["verdict"] == "not shown"
    # not in the table, or a change that can act where the baseline's value did not: every question again
    for result in (focus, higher):
        assert result["reran_all"] and result["datasets"][0]["affected"] == ALL_IDS
    assert "not in the table" in focus["acted_where"] and "0.7 -> 0.9" in higher["acted_where"]


def test_backtracking_kinds_are_ablated_where_they_acted(scenario: dict, tmp_path: Path) -> None:
    local_off, global_off = ablate(scenario, ["method:reagent-global", "method:reagent-local"], tmp_path / "out")
    assert local_off["ablated_method"] == "reagent-global" and local_off["datasets"][0]["affected"] == BORN_IDS
    assert_exact(local_off, scenario["full"]["global"])
    assert global_off["datasets"][0]["affected"] == ["w0"]
    assert_exact(global_off, scenario["full"]["local"])


def test_check_answers_carried_over_questions_again(scenario: dict, tmp_path: Path) -> None:
    (result,) = ablate(scenario, ["setting:pipeline.min_confidence=0"], tmp_path / "out", check=3)
    check = result["datasets"][0]["check"]
    carried = [q for q in ALL_IDS if q not in BORN_IDS]
    assert check["ids"] == [q for q in carried if q in random.Random(CHECK_SEED).sample(carried, 3)]
    assert check["folder"] == str(tmp_path / "out" / "setting-pipeline.min_confidence-0" / "base-check3")
    assert [r["id"] for r in read_records(Path(check["folder"]) / RECORDS_FILE)] == check["ids"]
    assert check["identical"] == 3 and check["differ"] == [] and result["exact"] is True
    assert result["datasets"][0]["reran"] == 4 + 3
    # the comparison still carries the checked questions over from the baseline
    assert all(paired(result)[q]["carried_over"] for q in check["ids"])
    assert "| checked: identical |" in (tmp_path / "out" / "ablation.md").read_text()


def test_check_reports_a_model_that_is_not_deterministic(scenario: dict, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture) -> None:
    flaky = ablation_model(flaky=True)  # the capital question's answer changes every time it is asked
    run_ablation_baseline(scenario["data"], tmp_path / "base", llm=flaky)
    results = ablate(scenario, ["rule:anchor-each-step"], tmp_path / "out", llm=flaky, baselines=[tmp_path / "base"],
                     check=6)
    (result,) = results
    check = result["datasets"][0]["check"]
    assert check["ids"] == ["c0", "w0", *BORN_IDS] and check["identical"] == 5
    # asked again, the model first answers "Norland" (in the question: a failed check), which stands uncertain: the
    # whole question is read too (the model then says Vesk), and the two roads disagree
    (differ,) = check["differ"]
    assert differ["id"] == "c0" and differ["fields"]["llm_calls"] == [2, 4]
    assert differ["fields"]["signals"] == [[], ["two-roads"]]
    assert result["exact"] is False and any("NOT EXACT" in label for label in result["labels"])
    from reagent_local.bench.ablate_view import markdown, markdown_summary

    assert "**NOT EXACT**: 1 of 6 carried-over question(s) answered again differ" in markdown(result)
    assert "base c0: llm_calls 2 -> 4, " in markdown(result)
    assert "| **NOT EXACT** |" in markdown_summary(results)


def test_pooled_over_several_baselines(scenario: dict, tmp_path: Path) -> None:
    first, second = ["f0", "f1", "c0", "b0", "b1"], ["f2", "f3", "w0", "b2", "b3"]
    for name, ids in (("part-a", first), ("part-b", second)):
        run_ablation_baseline(scenario["data"], tmp_path / name, ids=ids)
    (pooled,) = ablate(scenario, ["rule:anchor-each-step"], tmp_path / "out",
                       baselines=[tmp_path / "part-a", tmp_path / "part-b"])
    (single,) = ablate(scenario, ["rule:anchor-each-step"], tmp_path / "single")
    assert [(r["label"], r["affected"]) for r in pooled["datasets"]] == [("part-a", ["f0", "f1"]), ("part-b", ["f2", "f3"])]
    assert (tmp_path / "out" / "rule-anchor-each-step" / "part-b" / RECORDS_FILE).exists()
    assert pooled["pooled"]["affected"] == 4 and pooled["pooled"]["questions"] == 10
    for key in ("f1_diff", "em_diff", "won", "lost", "tied", "fixed", "broken", "p_value"):
        a, b = pooled["pooled"]["stats"][key], single["pooled"]["stats"][key]
        assert (sorted(a) if isinstance(a, list) else a) == (sorted(b) if isinstance(b, list) else b), key
    assert pooled["datasets"][0]["stats"]["fixed"] == ["f0", "f1"]
    text = (tmp_path / "out" / "ablation.md").read_text()
    assert "| `rule:anchor-each-step` | part-a | 5 | 2 |" in text and "|  | pooled | 10 | 4 |" in text


def rewrite(folder: Path, change) -> None:
    records = read_records(folder / RECORDS_FILE)
    for n, record in enumerate(records):
        change(n, record)
    (folder / RECORDS_FILE).write_text("".join(json.dumps(r) + "\n" for r in records))


def test_refusals(scenario: dict, tmp_path: Path) -> None:
    base = tmp_path / "base"
    shutil.copytree(scenario["base"], base)
    run = lambda **kw: ablate(scenario, ["rule:anchor-each-step"], tmp_path / "out", baselines=[base], **kw)  # noqa: E731
    rewrite(base, lambda n, r: r.update(code="0.1.0+gdeadbee") if n == 0 else None)
    with pytest.raises(BenchRunError, match="mixes records of commits"):
        run()
    rewrite(base, lambda n, r: r.update(code="0.1.0+gdeadbee"))  # one commit, but not this code's
    with pytest.raises(BenchRunError, match="the baseline is commit 0.1.0\\+gdeadbee but this code is") as info:
        run()
    assert "git checkout deadbee" in info.value.hint
    (result,) = run(allow_mixed=True)
    assert any(label.startswith("mixed commits: baseline 0.1.0+gdeadbee") for label in result["labels"])
    assert "**mixed commits: baseline 0.1.0+gdeadbee" in (tmp_path / "out" / "ablation.md").read_text()
    with pytest.raises(BenchRunError, match="already hold runs"):  # the reruns are there: --resume continues
        run(allow_mixed=True)
    (again,) = run(allow_mixed=True, resume=True)
    assert again["pooled"]["stats"] == result["pooled"]["stats"]
    rewrite(base, lambda n, r: r.update(config_id="0123456789ab") if n == 0 else None)
    with pytest.raises(BenchRunError, match="configuration"):
        run(allow_mixed=True)
    lines = (scenario["base"] / RECORDS_FILE).read_text().splitlines()
    (base / RECORDS_FILE).write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(BenchRunError, match="is not finished: 1 of 10 questions have no reagent-both record"):
        run()
    with pytest.raises(BenchRunError, match="no records of 'reagent-none'"):
        run(method="reagent-none")


def test_a_baseline_stopped_early_is_ablated_on_what_it_answered_when_asked(scenario: dict, tmp_path: Path) -> None:
    base = tmp_path / "base"
    shutil.copytree(scenario["base"], base)
    lines = (base / RECORDS_FILE).read_text().splitlines()
    (base / RECORDS_FILE).write_text("\n".join(lines[:-3]) + "\n")  # stopped with three questions to go
    answered = [json.loads(line)["id"] for line in lines[:-3]]
    with pytest.raises(BenchRunError, match="is not finished: 3 of 10") as info:
        ablate(scenario, ["setting:pipeline.min_confidence=0"], tmp_path / "refused", baselines=[base])
    assert "--answered-only" in info.value.hint
    (result,) = ablate(scenario, ["setting:pipeline.min_confidence=0"], tmp_path / "out", baselines=[base],
                       answered_only=True)
    assert list(paired(result)) == answered
    assert "base: 7 of the 10 drawn questions (the run stopped early)" in result["labels"]
    assert "7 of the 10 drawn questions" in (tmp_path / "out" / "ablation.md").read_text()


def test_baselines_of_two_configurations_are_refused(scenario: dict, tmp_path: Path) -> None:
    run_ablation_baseline(scenario["data"], tmp_path / "other", config=ablation_config(**{"retrieval.top_k": 2}))
    with pytest.raises(BenchRunError, match="the baselines ran in 2 configurations"):
        ablate(scenario, ["rule:anchor-each-step"], tmp_path / "out", baselines=[scenario["base"], tmp_path / "other"])


@pytest.mark.parametrize(("spec", "error"), [
    ("anchor-each-step", "cannot read --what"),
    ("rules:anchor-each-step", "cannot read --what"),
    ("setting:pipeline.two_roads", "a setting is SECTION.FIELD=VALUE"),
    ("setting:pipeline.backtracking=none", "use method:reagent-MODE"),
    ("setting:paths.home=/tmp", "cannot be ablated"),
    ("setting:pipeline.no_such=1", "unknown setting pipeline.no_such"),
    ("setting:pipeline.min_confidence=high", "invalid value 'high'"),
    ("setting:pipeline.two_roads=true", "already ran with pipeline.two_roads = True"),
    ("rule:no-such-rule", "no rule named 'no-such-rule'"),
    ("rule:option-snap", "the rule option-snap was removed on 2026-12-07"),  # every method runs without it
    ("method:reagent-local-no-same-x", "the rule same-x was removed on 2026-12-07"),
    ("signal:low-confidence", "has its own switch"),
    ("signal:no-such-signal", "no signal named 'no-such-signal'"),
    ("signal:plan-failed", "no signal named 'plan-failed'"),
    ("setting:pipeline.max_replans=0", "pipeline.max_replans in .* is no longer a setting"),
    ("signal:broken-bridge", "broken-bridge was removed"),  # the assembler's escalations: nothing to switch
    ("signal:check-failed", "check-failed was removed"),  # the retry of a failed check: nothing to switch
    ("setting:pipeline.signals_off=check-failed", "no signal is left that it switches"),
    ("method:reagent-both", "the baseline's own method"),
    ("method:nonsense", "unknown method"),
])
def test_specs_that_cannot_be_ablated(scenario: dict, tmp_path: Path, spec: str, error: str) -> None:
    with pytest.raises(BenchRunError, match=error):
        ablate(scenario, [spec], tmp_path / "out")
    assert not (tmp_path / "out").exists()  # refused before any work


def test_a_rule_the_baseline_did_not_use_is_refused(scenario: dict, tmp_path: Path) -> None:
    base = tmp_path / "base"
    run_ablation_baseline(scenario["data"], base, ["reagent-both-no-anchor-each-step"])
    with pytest.raises(BenchRunError, match="the rule is already off in the baseline"):
        ablate(scenario, ["rule:anchor-each-step"], tmp_path / "out", baselines=[base],
               method="reagent-both-no-anchor-each-step")


def test_what_shows_a_part_acted() -> None:
    quiet = Trace(frozenset(), frozenset(), frozenset(), frozenset({"two-roads"}), False, False)
    assert not acted(marks(signals=["low-confidence"]), quiet)
    assert acted(marks(signals=["low-confidence"]), Trace(frozenset({"low-confidence"}), frozenset(), frozenset()))
    assert acted(marks(rules=["both-yes"]), Trace(frozenset(), frozenset({"both-yes"}), frozenset()))
    # a record of a run before a rule was removed (rules.REMOVED_RULES) may name it: it reads, and marks nothing else
    assert not acted(marks(rules=["both-yes"]), Trace(frozenset(), frozenset({"same-x"}), frozenset()))
    assert acted(marks(backtracks=["global"]), Trace(frozenset(), frozenset(), frozenset({"global"})))
    assert acted(marks(checked=["two-roads"]), quiet) and not acted(marks(whole_read=True, escalated=True), quiet)
    # a mark only the event log shows, for a question the log does not hold: answered again
    assert acted(marks(whole_read=True), Trace(frozenset(), frozenset(), frozenset()))
    # a run that stopped on an error shows nothing of what acted before it: answered again
    assert acted(marks(signals=["low-confidence"]), Trace(frozenset(), frozenset(), frozenset(), error=True))
    assert switched_off("reagent-both", "reagent-local") == (["global"], [])
    assert switched_off("reagent-local", "reagent-both") == ([], ["global"])
    assert switched_off("reagent-both", "reagent-none") == (["local", "global"], [])


def test_a_method_that_switches_backtracking_on_reruns_everything() -> None:
    from reagent_local.config import load_config

    config = load_config(env={})
    assert resolve_spec(parse_spec("method:reagent-both"), "reagent-local", config).marks is None
    assert resolve_spec(parse_spec("method:rag"), "reagent-both", config).marks is None
    off = resolve_spec(parse_spec("method:reagent-none"), "reagent-both-no-both-yes", config)
    assert off.method == "reagent-none-no-both-yes" and off.marks is not None
    assert "low-confidence" in off.marks.signals and off.marks.backtracks == {"local", "global"}
    assert off.marks.whole_read
    assert parse_spec("setting:pipeline.min_confidence=0").slug == "setting-pipeline.min_confidence-0"


def test_verdicts_and_pure_parts() -> None:
    assert verdict({"f1_interval": [0.01, 0.2]}) == "pays"
    assert verdict({"f1_interval": [-0.2, -0.01]}) == "hurts"
    assert verdict({"f1_interval": [-0.1, 0.2]}) == verdict({"f1_interval": [0.0, 0.2]}) == "not shown"
    assert verdict({"f1_interval": None}) == "not shown"
    base = [{"id": "a", "prediction": "x", "llm_calls": 2}, {"id": "b", "prediction": "y", "llm_calls": 3}]
    side = ablated_side(base, [{"id": "b", "prediction": "z", "llm_calls": 1}])
    assert side == [{**base[0], "carried_over": True}, {"id": "b", "prediction": "z", "llm_calls": 1}]
    assert differences(base, [{"id": "a", "prediction": "x", "llm_calls": 3}]) == [
        {"id": "a", "fields": {"llm_calls": [2, 3]}}]


def test_cli_prints_each_ablation_and_the_summary(scenario: dict, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture) -> None:
    # both-yes fired nowhere: no question is answered again and no model is loaded
    out = tmp_path / "out"
    main(["bench", "ablate", str(scenario["base"]), "--what", "rule:both-yes", "--out", str(out)])
    captured = capsys.readouterr()
    assert "## rule:both-yes" in captured.out and "# Ablations" in captured.out
    assert "| `rule:both-yes` | base | 10 | 0 | +.000 [+.000, +.000] |" in captured.out
    assert "0 of 10 questions to answer again" in captured.err and (out / "ablation.md").exists()
    assert not (out / "rule-both-yes" / "base").exists()
    main(["bench", "ablate", str(scenario["base"]), "--what", "rule:both-yes", "--out", str(out), "--json"])
    (line,) = capsys.readouterr().out.strip().splitlines()
    assert json.loads(line)["pooled"]["verdict"] == "not shown"
    with pytest.raises(SystemExit) as exit_info:
        main(["bench", "ablate", str(scenario["base"]), "--what", "rule:nope", "--out", str(out)])
    assert exit_info.value.code == 1 and "no rule named 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:  # a rule removed with its code: when and why, no traceback
        main(["bench", "ablate", str(scenario["base"]), "--what", "rule:same-x", "--out", str(out)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1 and "the rule same-x was removed on 2026-12-07" in err and "Traceback" not in err
    with pytest.raises(SystemExit) as exit_info:  # a Ray option without --ray
        main(["bench", "ablate", str(scenario["base"]), "--what", "rule:both-yes", "--ray-workers", "2"])
    assert exit_info.value.code == 2 and "--ray-workers only applies with --ray" in capsys.readouterr().err


def test_rule_each_plans_one_ablation_per_rule_the_baseline_used(scenario: dict, tmp_path: Path) -> None:
    from reagent_local.bench.ablate_plan import plan_ablations
    from reagent_local.rules import RULES

    plan = plan_ablations([scenario["base"]], ["rule:each", "setting:pipeline.two_roads=false"],
                          method="reagent-both", check=0, out=tmp_path, allow_mixed=False)
    specs = [step.ablation.spec.text for step in plan.steps]
    assert specs == [f"rule:{name}" for name in RULES] + ["setting:pipeline.two_roads=false"]
    affected = {step.ablation.spec.name: step.parts[0].affected for step in plan.steps}
    assert affected["anchor-each-step"] == FOUNDER_IDS and affected["both-yes"] == []
    assert affected["chain-last-step"] == [q for q in ALL_IDS if q != "w0"]
    with pytest.raises(BenchRunError, match="an ablation is asked twice \\(rule-both-yes\\)"):
        plan_ablations([scenario["base"]], ["rule:each", "rule:both-yes"], method="reagent-both", check=0, out=tmp_path,
                       allow_mixed=False)


def test_reruns_on_another_machine_than_the_baselines_are_refused_unless_allowed(scenario: dict,
                                                                                 tmp_path: Path) -> None:
    base = tmp_path / "base"
    shutil.copytree(scenario["base"], base)
    run = lambda **kw: ablate(scenario, ["rule:anchor-each-step"], tmp_path / "out", baselines=[base], **kw)  # noqa: E731
    rewrite(base, lambda n, r: r.update(machine_id="0ther0machine"))
    with pytest.raises(BenchRunError, match="this ablation would pair records of different machines "
                                            "[(]baseline on 0ther0machine; reruns on ") as info:
        run()
    assert "--allow-mixed" in info.value.hint
    assert not (tmp_path / "out").exists()  # refused before any work
    (result,) = run(allow_mixed=True)
    assert any(label.startswith("**Mixed machines**: baseline on 0ther0machine") for label in result["labels"])


def test_threads_are_not_an_ablation() -> None:
    with pytest.raises(BenchRunError, match="llm.n_threads cannot be ablated") as info:
        parse_spec("setting:llm.n_threads=1")
    assert "bench noise" in info.value.hint
