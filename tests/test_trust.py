"""The answers' trust score: its metrics, its fit, its file, and what ask, --json, the trace and bench show of it."""

from __future__ import annotations

import json
import math
import random

import pytest
from click.testing import CliRunner
from rich.console import Console

from reagent_local.agents.logistic import LogisticModel
from reagent_local.agents.trust import TrustFacts, TrustModel, load_trust_model, record_facts, write_trust_model
from reagent_local.bench.fit_trust import (Example, PassageText, choose_threshold, fit_folders, fit_trust,
                                           record_example, render_fit)
from reagent_local.bench.report import write_report
from reagent_local.bench.selective import auroc, selective, trust_summary
from reagent_local.bench.tables import tables
from reagent_local.cli import cli
from reagent_local.core import events as ev
from reagent_local.core.log import EventLog
from reagent_local.errors import BenchRunError, ConfigError
from reagent_local.reasoning.answer import Answer
from reagent_local.reasoning.pipeline import Pipeline
from reagent_local.rules import RuleSet
from reagent_local.testing import InMemoryIndex, ScriptedLLM
from reagent_local.trace.load import load_trace
from reagent_local.trace.terminal import final_block

from scenario_runs import scenario_config


# -- metrics --------------------------------------------------------------------------------------------
def test_auroc_on_known_inputs_with_ties():
    assert auroc([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1]) == 1.0
    assert auroc([0.9, 0.8, 0.2, 0.1], [0, 0, 1, 1]) == 0.0
    assert auroc([0.5, 0.5, 0.5], [1, 0, 1]) == 0.5  # all tied: half
    # positives 0.4, 0.8; negatives 0.1, 0.4: 1 + 0.5 (the tie) + 1 + 1 of 4 pairs
    assert auroc([0.1, 0.4, 0.4, 0.8], [0, 1, 0, 1]) == pytest.approx(0.875)
    assert auroc([0.3, 0.7], [1, 1]) is None  # no wrong answer to rank against


def test_selective_accuracy_counts_the_answers_at_or_above_the_threshold():
    out = selective([0.9, 0.7, 0.7, 0.2], [1, 0, 1, 0], 0.7)
    assert out == {"n": 4, "trusted": 3, "coverage": 0.75, "em": pytest.approx(0.6667, abs=1e-4)}
    assert selective([0.1], [1], 0.5)["em"] is None


def _trust(p: float, trusted: bool, doubt: bool = False, grounded: bool = True) -> dict:
    return {"probability": p, "trusted": trusted, "doubt": doubt, "grounded": grounded}


def test_trust_summary_reads_only_records_with_a_score():
    records = [{"em": 1.0, "trust": _trust(0.9, True)}, {"em": 0.0, "trust": _trust(0.3, False, doubt=True)},
               {"em": 1.0, "trust": _trust(0.6, False, grounded=False)}, {"em": 0.0}]  # an old record: no trust
    out = trust_summary(records)
    assert out["n"] == 3 and out["trusted"] == 1 and out["em_trusted"] == 1.0 and out["em_rest"] == 0.5
    assert out["auroc"] == 1.0 and out["likely_wrong"] == 1 and out["em_likely_wrong"] == 0.0
    assert out["not_found"] == 1
    assert trust_summary([{"em": 1.0}, {"em": 0.0, "trust": None}]) is None


# -- the fit ----------------------------------------------------------------------------------------------
def synthetic(n: int = 300, seed: int = 1) -> list[Example]:
    """Examples whose EM follows ``signal`` (with noise); ``noise`` says nothing."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        signal = rng.random()
        out.append(Example(str(i), "hotpotqa", {"signal": signal, "noise": rng.random()},
                           float(rng.random() < 0.1 + 0.8 * signal), False))
    return out


def test_the_fit_learns_the_signal_and_chooses_a_threshold_on_train():
    fit = fit_trust(synthetic())
    model = fit.model.model
    weights = dict(zip(model.features, model.weights))
    assert weights["signal"] > 0.5 and abs(weights["noise"]) < weights["signal"] / 2
    assert fit.report["cv"]["auroc"] > 0.75
    trusted = fit.report["cv"]["trusted"]
    assert trusted["em"] >= 0.70 and 0.05 < model.threshold < 0.95  # the target precision, out of fold
    assert "| signal |" in render_fit(fit)


def test_the_threshold_falls_back_to_half_coverage_when_the_target_is_out_of_reach():
    probs = [i / 10 for i in range(10)]
    labels = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]  # the surer, the more wrong: no threshold reaches the target
    threshold, rule = choose_threshold(probs, labels, 0.9)
    assert "half" in rule and selective(probs, labels, threshold)["trusted"] >= 5


def test_the_fit_refuses_labels_that_teach_nothing():
    with pytest.raises(BenchRunError, match="every train answer"):
        fit_trust([replace_em(e, 1.0) for e in synthetic(20)])


def replace_em(e: Example, em: float) -> Example:
    return Example(e.id, e.dataset, e.features, em, e.derived)


def test_a_trust_model_file_round_trips(tmp_path):
    fit = fit_trust(synthetic())
    path = tmp_path / "trust.json"
    write_trust_model(TrustModel(fit.model.model, {"commit": "abc"}), path)
    loaded = load_trust_model(path)
    assert loaded.model == fit.model.model and loaded.provenance == {"commit": "abc"}
    path.write_text(json.dumps({"kind": "reagent", "stop": None}))
    with pytest.raises(ConfigError, match="not a trust model"):
        load_trust_model(path)
    with pytest.raises(ConfigError, match="no trust model"):
        load_trust_model(tmp_path / "missing.json")


def test_the_shipped_model_scores_the_features_a_run_gives():
    facts = TrustFacts("Who directed Blue Harbour?", "Mara Lind", grounded=True, fits=True, cited=1, unknown=False,
                       uncertain=False, confidence=0.9, steps=1, answered=1, uncertain_steps=0, calls=2)
    trust = load_trust_model().score(facts)
    assert 0.0 < trust.probability < 1.0 and trust.label in ("trusted", "not sure", "likely wrong")
    assert set(trust.features) >= set(load_trust_model().model.features)  # every feature kept, for a refit


def test_a_retired_signal_a_model_still_reads_is_0_for_every_run():
    from reagent_local.agents.logistic import LogisticModel

    # plan-failed went with replanning: an old record may carry it, a model fitted then may weigh it
    facts = TrustFacts("Who directed Blue Harbour?", "Mara Lind", grounded=True, fits=True, cited=1, unknown=False,
                       uncertain=False, signals=("plan-failed", "low-confidence"))
    assert "signal_plan_failed" not in facts.features() and facts.features()["signals_fired"] == 2.0
    model = LogisticModel(("signal_plan_failed", "signal_low_confidence"), (0.0, 0.0), (1.0, 1.0), (3.0, 1.0), 0.0)
    trust = TrustModel(model).score(facts)
    assert trust.features["signal_plan_failed"] == 0.0 and trust.contributions["signal_plan_failed"] == 0.0
    assert trust.probability == pytest.approx(1 / (1 + math.exp(-1.0)))  # the low-confidence weight alone
    assert "signal_plan_failed" in load_trust_model().model.features  # the shipped model, fitted before, reads it
    # check-failed went with the retry of a failed check (silenced long before: a run since never fired it); the
    # shipped model, fitted while it could fire, weighs it: 0 for every run, as when it was silenced
    shipped = load_trust_model()
    assert "signal_check_failed" in shipped.model.features and "signal_check_failed" not in facts.features()
    assert shipped.score(facts).features["signal_check_failed"] == 0.0


def old_record(prediction: str, em: float, cited: list[str], **extra) -> dict:
    return {"method": "reagent-collect", "id": prediction, "dataset": "hotpotqa", "question": "Who directed Blue Harbour?",
            "prediction": prediction, "em": em, "cited": [{"id": c, "title": c.split("#")[0]} for c in cited],
            "llm_calls": 4, "backtracks": {"local": 1, "global": 0}, "answer_before_backtracking": None,
            "signals": ["low-confidence"], "rules_fired": ["chain-last-step"], "roads": None, "uncertain": False,
            **extra}


def test_an_old_record_gives_its_features_from_its_fields_and_the_passages_text():
    texts = {"Blue Harbour#0": PassageText("Blue Harbour", "Blue Harbour is a film directed by Mara Lind.")}
    rules = RuleSet(("all",))
    right = record_example(old_record("Mara Lind", 1.0, ["Blue Harbour#0"]), texts, rules)
    wrong = record_example(old_record("Tom Hale", 0.0, ["Blue Harbour#0"]), texts, rules)
    assert right.derived and right.features["answer_grounded"] == 1.0 and wrong.features["answer_grounded"] == 0.0
    assert right.features["backtracked"] == 1.0 and right.features["signal_low_confidence"] == 1.0
    assert "answer_confidence" not in right.features  # an old record does not say
    fresh = record_example({**old_record("Mara Lind", 1.0, []), "trust": {"features": {"x": 1.0}}}, None, rules)
    assert fresh.features == {"x": 1.0} and not fresh.derived


def test_record_facts_match_what_a_run_computes():
    facts = record_facts(old_record("Mara Lind", 1.0, ["A#0"], answer_before_backtracking="Tom Hale",
                                    roads={"winner": "whole"}), grounded=True, fits=True)
    assert facts.changed and facts.roads_disagreed and facts.whole_won and facts.caught and facts.cited == 1


def test_old_runs_and_records_that_name_removed_rules_still_fit_and_report(tmp_path):
    from reagent_local.bench.fit_trust import collect
    from reagent_local.rules import live_rules

    # rules removed since a run (rules.REMOVED_RULES): its records still count them as fired, its configuration's
    # spec is read without them (they are no longer consulted for the answer's type fit)
    texts = {"Blue Harbour#0": PassageText("Blue Harbour", "Blue Harbour is a film directed by Mara Lind.")}
    fired = ["same-x", "keep-named-parts"]
    example = record_example(old_record("Mara Lind", 1.0, ["Blue Harbour#0"], rules_fired=fired), texts,
                             RuleSet(live_rules(["all", "same-x"])))
    assert example.features["rules_fired"] == 2.0 and example.features["answer_fits"] == 1.0
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({
        "dataset": "hotpotqa", "seed": 13, "n": 1, "methods": ["reagent-both"], "model": {"id": "m"},
        "config": {"pipeline": {"rules": ["none", "keep-named-parts", "chain-last-step"]}}}))
    record = {**old_record("Mara Lind", 1.0, ["Blue Harbour#0"], rules_fired=fired), "method": "reagent-both",
              "type": "bridge", "answers": ["Mara Lind"], "f1": 1.0, "prompt_tokens": 1, "completion_tokens": 1,
              "seconds": 1.0, "code": "0.1.0+gaaaaaaa", "trust": {"features": {"x": 1.0}}}
    (folder / "records.jsonl").write_text(json.dumps(record) + "\n")
    examples, _ = collect([folder])
    assert [e.features for e in examples] == [{"x": 1.0}]
    assert write_report(folder)["methods"]["reagent-both"]["rules_fired"] == {"same-x": 1, "keep-named-parts": 1}


def test_fit_trust_command_over_run_folders_writes_the_model_and_report(tmp_path):
    rng = random.Random(3)
    folders = []
    for name in ("train", "dev"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"dataset": "hotpotqa", "methods": ["reagent-both"]}))
        records = []
        for i in range(40):
            right = rng.random() < 0.5
            records.append({"method": "reagent-both", "id": f"{name}{i}", "dataset": "hotpotqa", "em": float(right),
                            "question": "Q?", "prediction": "A",
                            "trust": {"features": {"signal": float(right) + rng.random(), "noise": rng.random()}}})
        (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        folders.append(folder)
    out, report = tmp_path / "trust.json", tmp_path / "trust.md"
    result = CliRunner().invoke(cli, ["bench", "fit-trust", str(folders[0]), "--judge", str(folders[1]),
                                       "--out", str(out), "--report", str(report)])
    assert result.exit_code == 0, result.output
    model = load_trust_model(out)
    assert model.provenance["fit"]["judged"]["all"]["auroc"] > 0.8
    assert "Judged on dev" in report.read_text()
    fit = fit_folders([folders[0]])
    assert fit.report["examples"] == 40 and fit.report["derived"] == 0
    # --against judges another model on the same answers: here one that reads only the noise feature
    noise = tmp_path / "noise.json"
    write_trust_model(TrustModel(LogisticModel(("noise",), (0.5,), (0.3,), (1.0,), 0.0, threshold=0.5)), noise)
    result = CliRunner().invoke(cli, ["bench", "fit-trust", str(folders[0]), "--judge", str(folders[1]),
                                       "--against", str(noise), "--out", str(out), "--report", str(report)])
    assert result.exit_code == 0, result.output
    against = load_trust_model(out).provenance["fit"]["against"]
    assert against["name"] == str(noise) and against["all"]["n"] == 40 and against["all"]["auroc"] < 0.8
    assert f"Weighed against {noise}, on the same answers:" in report.read_text()
    result = CliRunner().invoke(cli, ["bench", "fit-trust", str(folders[0]), "--against", str(noise), "--out", str(out)])
    assert result.exit_code != 0 and "give at least one --judge" in result.output


# -- the run --------------------------------------------------------------------------------------------
@pytest.fixture
def index():
    idx = InMemoryIndex()
    idx.add("Blue Harbour", "Blue Harbour is a 1998 drama film directed by Mara Lind.")
    idx.add("Harbour Lights", "Harbour Lights is a song by the band Tallow.")
    return idx


def scripted(answer: str) -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.add_rule({"subquestions": ["Who directed the film Blue Harbour?"]}, schema="Decomposition")
    llm.add_rule({"answer": answer, "passages": [1], "subject": "Blue Harbour", "relation": "director"},
                 schema="SubAnswer")
    llm.add_rule({"answer": answer}, schema="FinalAnswer")
    return llm


def test_a_run_scores_its_answer_logs_it_and_the_trace_shows_it(index, tmp_path):
    with EventLog(tmp_path / "log.duckdb") as log:
        answer = Pipeline(scenario_config(), llm=scripted("Mara Lind"), retriever=index, log=log).ask(
            "Who directed the film Blue Harbour?")
        assert answer.trust is not None and 0 < answer.trust["probability"] < 1
        assert answer.trust["grounded"] and not answer.not_found and answer.closest == ()
        assert answer.trust_line().startswith("trust: ")
        (event,) = [e for e in log.events(answer.run_id) if e.type == "trust"]
        body = ev.decode(event)
        assert isinstance(body, ev.TrustScored) and body.probability == pytest.approx(answer.trust["probability"], abs=1e-4)
        assert body.features["answer_confidence"] >= 0  # a fresh run gives every feature
        trace = load_trace(log, answer.run_id)
        assert trace.final.trust is not None and trace.final.trust["label"] == answer.trust["label"]
        console = Console(record=True, width=160)
        console.print(final_block(trace))
        assert f"trust {answer.trust['probability']:.2f}, {answer.trust['label']}" in console.export_text()


def test_an_answer_no_passage_supports_says_not_found_with_the_closest_passages(index, tmp_path):
    with EventLog(tmp_path / "log.duckdb") as log:
        answer = Pipeline(scenario_config(backtracking="none"), llm=scripted("Tom Hale"), retriever=index,
                          log=log).ask("Who directed the film Blue Harbour?")
    assert answer.answer == "Tom Hale" and answer.not_found
    assert answer.trust_line().startswith("not found in the index")
    assert answer.closest and answer.closest[0].title == "Blue Harbour"
    data = answer.to_dict()
    assert data["not_found"] and data["closest"][0]["text"].startswith("Blue Harbour is")
    again = Answer.from_dict(json.loads(json.dumps(data)))  # a served answer
    assert again.trust == answer.trust and again.closest[0].text.startswith("Blue Harbour is")


def test_ask_prints_the_trust_line_and_json_carries_it(index, tmp_path, monkeypatch):
    from reagent_local import api
    monkeypatch.setenv("REAGENT_HOME", str(tmp_path))

    def load(cls, **kw):  # a fresh pipeline each time: `ask` closes the one it used
        log = EventLog(tmp_path / "log.duckdb")
        return cls(Pipeline(scenario_config(backtracking="none"), llm=scripted("Tom Hale"), retriever=index, log=log))

    monkeypatch.setattr(api.ReAgent, "load", classmethod(load))
    printed = CliRunner().invoke(cli, ["ask", "Who directed the film Blue Harbour?"])
    assert printed.exit_code == 0, printed.output
    assert "not found in the index" in printed.output and "trust: " in printed.output
    assert "Closest passages:" in printed.output and "Blue Harbour" in printed.output
    as_json = CliRunner().invoke(cli, ["ask", "Who directed the film Blue Harbour?", "--json"])
    assert as_json.exit_code == 0, as_json.output
    data = json.loads(as_json.output[as_json.output.index("{"):])
    assert data["trust"]["probability"] is not None and data["trust_line"] and data["not_found"]


# -- bench ------------------------------------------------------------------------------------------------
def test_bench_report_and_tables_give_selective_accuracy_and_old_records_still_report(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"dataset": "hotpotqa", "seed": 13, "n": 3,
                                                    "methods": ["rag", "reagent-both"], "model": {"id": "m"}}))
    base = {"dataset": "hotpotqa", "type": "bridge", "question": "Q?", "answers": ["x"], "f1": 0.0, "cited": [],
            "llm_calls": 1, "prompt_tokens": 1, "completion_tokens": 1, "seconds": 1.0, "code": "0.1.0+gaaaaaaa",
            "backtracks": {"local": 0, "global": 0}}
    records = [{**base, "method": "rag", "id": "a", "prediction": "x", "em": 1.0},  # old: no trust
               {**base, "method": "reagent-both", "id": "a", "prediction": "x", "em": 1.0,
                "trust": _trust(0.8, True)},
               {**base, "method": "reagent-both", "id": "b", "prediction": "y", "em": 0.0,
                "trust": _trust(0.2, False, doubt=True)}]
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = write_report(folder)
    assert summary["methods"]["rag"]["trust"] is None
    assert summary["methods"]["reagent-both"]["trust"]["auroc"] == 1.0
    text = (folder / "results.md").read_text()
    assert "## Trust" in text and "| reagent-both | 2 | 1 |" in text
    assert "Trust score: ReAgent, backtracking both: trusted 1 of 2" in tables([folder])
