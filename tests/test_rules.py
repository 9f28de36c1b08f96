"""The rule registry and every question-shape rule, each on its own cases."""

from __future__ import annotations

import pytest

from reagent_local.config import DEFAULT_RULES, load_config
from reagent_local.errors import ConfigError
from reagent_local.core.plan import plan_from
from reagent_local.rules import REMOVED_RULES, RULES, RuleSet, answer_type_problem, describe_rules, live_rules, resolve
from reagent_local.rules.assemble_rules import both_yes, chain_answer, compare_options, grammar_options
from reagent_local.rules.plan_rules import drop_off_topic_steps, named_parts, verbatim_single_step
from reagent_local.rules.shapes import comparison_direction, either_or_options, options

from roles_support import steps


# -- the registry -------------------------------------------------------------------------
def test_every_rule_is_named_staged_and_documented_in_one_line():
    assert len(RULES) >= 11
    for name, stage, summary in describe_rules():
        assert name == name.lower() and " " not in name
        assert stage in {"plan-check", "plan-reshape", "check", "doubt", "trust", "assemble", "constrain"}
        assert summary and "\n" not in summary


def test_every_question_shape_decision_of_the_roles_is_a_rule():
    """The decisions that read a question's shape are registered where the role that owns them looks."""
    stages = {name: stage for name, stage, _ in describe_rules()}
    assert {n for n, s in stages.items() if s == "plan-check"} == {"split-the-question", "anchor-each-step"}
    assert {n for n, s in stages.items() if s == "plan-reshape"} == {"either-or-steps", "single-step-verbatim"}
    assert (stages["off-subject"], stages["either-or-trust"]) == ("doubt", "trust")


def test_a_rule_spec_switches_rules_on_and_off():
    assert resolve(["all"]) == tuple(RULES) == resolve([])
    assert "both-yes" not in resolve(["all", "-both-yes"])
    assert resolve(["all,-both-yes"]) == resolve(["all", "-both-yes"])  # a comma list from the command line
    assert resolve(["none", "chain-last-step"]) == ("chain-last-step",)
    assert resolve(["chain-last-step"]) == ("chain-last-step",)
    with pytest.raises(ConfigError, match="unknown rule.*same-why"):
        resolve(["all", "-same-why"])


def test_removed_rules_switched_off_are_dropped_and_switched_on_are_refused_with_the_reason():
    assert set(REMOVED_RULES).isdisjoint(RULES) and len(REMOVED_RULES) == 8
    assert set(resolve(["all"])) == set(DEFAULT_RULES)  # all is every rule that remains: the defaults
    assert resolve(["all", "-same-x", "-option-snap"]) == resolve(["all"])
    assert resolve(["-same-x"]) == ()  # applied from nothing, as before: still nothing on
    assert resolve(["none", "-keep-named-parts", "chain-last-step"]) == ("chain-last-step",)
    for spec in (["all", "same-x"], ["+yes-no-answer"], ["all,option-snap"]):
        with pytest.raises(ConfigError, match=r"the rule \S+ was removed on 2026-12-07: off by default since the dev "
                                              r"ablation at 5e32365.*\(docs/changelog.md\)") as caught:
            resolve(spec)
        assert "\n" not in caught.value.message and "is accepted and changes nothing" in caught.value.hint
    # an old run's spec, read now: every item naming a removed rule goes, a spec that named nothing else is none
    assert live_rules(["all", "same-x", "-option-snap"]) == ("all",)
    assert live_rules(["keep-named-parts"]) == ("none",) and live_rules(("all", "-both-yes")) == ("all", "-both-yes")


def test_rules_are_configuration(tmp_path):
    config = load_config({"pipeline.rules": "all,-compare-options"}, env={})
    assert config.pipeline.rules == ("all", "-compare-options")
    assert not RuleSet(config.pipeline.rules).on("compare-options")
    toml = tmp_path / "reagent.toml"
    toml.write_text('[pipeline]\nrules = ["none", "chain-last-step"]\n')
    assert load_config(env={}, toml_path=toml).pipeline.rules == ("none", "chain-last-step")
    with pytest.raises(ConfigError, match="unknown rule"):
        load_config({"pipeline.rules": "no-such-rule"}, env={})
    # a removed rule switched off is dropped from the configuration (it asks for what the code always does) ...
    toml.write_text('[pipeline]\nrules = ["all", "-same-x", "-compare-options"]\n')
    assert load_config(env={}, toml_path=toml).pipeline.rules == ("all", "-compare-options")
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    assert load_config(env={"REAGENT_PIPELINE_RULES": "-same-x"}, toml_path=empty).pipeline.rules == ("none",)
    # ... switched on it is refused, from a file, a variable or an option alike
    toml.write_text('[pipeline]\nrules = ["all", "option-snap"]\n')
    with pytest.raises(ConfigError, match="the rule option-snap was removed on 2026-12-07"):
        load_config(env={}, toml_path=toml)
    with pytest.raises(ConfigError, match="the rule same-x was removed"):
        load_config(env={"REAGENT_PIPELINE_RULES": "all,same-x"}, toml_path=empty)
    with pytest.raises(ConfigError, match="the rule keep-named-parts was removed"):
        load_config({"pipeline.rules": "keep-named-parts"}, env={})


def test_a_rule_set_records_each_firing_once_and_reports_it():
    seen = []
    rules = RuleSet(["all"], on_fire=seen.append)
    rules.fire("compare-options", step=1, detail="a")
    rules.fire("compare-options", step=1, detail="a")
    rules.fire("both-yes")
    assert [f.rule for f in seen] == ["compare-options", "both-yes"]
    assert rules.names_fired == ["compare-options", "both-yes"]
    assert seen[0].stage == "assemble"


def test_a_rule_set_runs_a_stage_in_order_and_records_the_first_answer():
    from reagent_local.rules.stages import ASSEMBLE, CHECK, TRUST

    rules = RuleSet(["all"])
    steps_ = steps(("yes", ()), ("no", ()))
    found = rules.first(ASSEMBLE, "Are both A and B cats?", steps_, detail=lambda a: f"answer {a!r}")
    assert (found.rule, found.value) == ("both-yes", "no") and rules.names_fired == ["both-yes"]
    assert rules.fired[0].detail == "answer 'no'"
    quiet = RuleSet(["all"])
    assert quiet.first(TRUST, "Which is older, Roe or Doe?", record=False).rule == "either-or-trust" and not quiet.fired
    assert quiet.first(TRUST, "Who directed Actrius?") is None  # False is no answer
    assert quiet.first(CHECK, "Who directed Lumen Park?", "Lumen Park", step=2).rule == "not-in-question"
    assert quiet.fired[-1].step == 2


def test_a_rule_must_take_its_stages_arguments():
    from reagent_local.rules import rule

    def one_argument(question):
        """Checks nothing."""

    with pytest.raises(ValueError, match="a check rule takes 2"):
        rule("one-argument-check", "check")(one_argument)
    assert "one-argument-check" not in RULES


# -- plan rules ------------------------------------------------------------------------------
def test_named_parts_finds_the_names_numbers_and_titles_a_step_is_anchored_by():
    question = 'What is the capital of the U.S. state whose largest city is Birmingham, as of "Census 2010"?'
    assert {"Birmingham", "U.S", "Census 2010"} <= set(named_parts(question))
    assert named_parts("Where was the performer born?") == []


def test_either_or_steps_drops_a_step_that_names_neither_option():
    question = "Which band has more members, The Tallows or Red Kite?"
    plan = plan_from(["How many members does The Tallows have?", "How many members does Red Kite have?",
                      "Which band has more members?"], 4)
    assert [s.text for s in drop_off_topic_steps(question, plan)] == [
        "How many members does The Tallows have?", "How many members does Red Kite have?"]
    # a step that uses an earlier answer stays, and references are renumbered
    bridge = plan_from(["Which band has more members?", "Who founded The Tallows?", "Who founded Red Kite?",
                        "When was #2 born?", "When was #3 born?"], 5)
    kept = drop_off_topic_steps("Which band's founder was born first, The Tallows or Red Kite?", bridge)
    assert [s.text for s in kept] == ["Who founded The Tallows?", "Who founded Red Kite?", "When was #1 born?",
                                      "When was #2 born?"]
    assert [s.depends_on for s in kept] == [(), (), (0,), (1,)]
    assert drop_off_topic_steps("Who founded the band The Tallows?", plan) is None  # not either-or


def test_split_the_question_finds_steps_that_restate_it():
    from reagent_local.rules.plan_rules import restated_steps

    question = "Who founded the shipyard whose largest dock is in Larvik?"
    bridge = plan_from(["Which shipyard has its largest dock in Larvik?", "Who founded #1?"], 4)
    assert restated_steps(question, bridge) == []
    lazy = plan_from(["Who founded the shipyard whose largest dock is in Larvik?", "Who is the founder of #1?"], 4)
    assert restated_steps(question, lazy) == [0]
    assert restated_steps(question, plan_from([question], 4)) == []  # one step is the question by design


def test_anchor_each_step_finds_steps_that_name_nothing():
    from reagent_local.rules.plan_rules import unanchored_steps

    question = "Where was the performer of the song Quiet Shore born?"
    lost = plan_from(["Who performed the song Quiet Shore?", "Where was the performer born?"], 4)
    assert unanchored_steps(question, lost) == [1]
    assert unanchored_steps(question, plan_from(["Who performed the song Quiet Shore?", "Where was #1 born?"], 4)) == []
    # an either-or question's comparing step is either-or-steps' business; a one-step plan is the question
    assert unanchored_steps("Which band is older, The Tallows or Red Kite?", plan_from(
        ["When was The Tallows formed?", "When was Red Kite formed?", "Which is older?"], 4)) == []
    assert unanchored_steps(question, plan_from(["Where was the performer born?"], 4)) == []
    # a first step starts from the question's own words, capitalised or not
    assert unanchored_steps("What year was the 2nd wife of the leader of the tallow guild born?", plan_from(
        ["Who was the leader of the tallow guild?", "What year was the 2nd wife of #1 born?"], 4)) == []
    # a question that names nothing gives a step nothing to name
    assert unanchored_steps("where was the performer of the song born?", plan_from(
        ["who performed the song?", "where was the performer born?"], 4)) == []


def test_single_step_verbatim_keeps_the_question_itself():
    question = "Who directed the film Actrius?"
    assert [s.text for s in verbatim_single_step(question, plan_from(["Who was the director of Actrius?"], 4))] == [
        question]
    assert verbatim_single_step(question, plan_from([question], 4)) is None
    assert verbatim_single_step(question, plan_from(["Who made X?", "Where was #1 born?"], 4)) is None


# -- check rules -------------------------------------------------------------------------------
def test_not_in_question_refuses_an_answer_the_question_names():
    from reagent_local.rules.answer_types import echoes_the_question

    question = "Lumen Park featured Ada Vale, who was voiced by an actress who starred in what series?"
    assert echoes_the_question(question, "Lumen Park")
    assert echoes_the_question(question, "lumen park.")  # case and punctuation do not hide it
    assert echoes_the_question("What league, also known as the Nordic Cup League, was delayed?", "the Nordic Cup League")
    assert echoes_the_question("How many people lived in Tarn in 2010?", "2010")
    assert echoes_the_question("Who was the wife of Karel of Brno?", "Karel of Brno")
    # part of a longer name in the question: a title may hold its answer ("Batman" in "Batman Returns")
    assert echoes_the_question("Who did the actor play in Comet Under the Hill?", "Comet") is None
    assert echoes_the_question("The city containing Vesi Island is on which island?", "Vesi") is None
    # options and yes/no answers come from the question by design
    assert echoes_the_question("Which came first, Roe or Doe?", "Roe") is None
    assert echoes_the_question("Is Lumen Park a film?", "yes") is None
    assert echoes_the_question("Who directed Lumen Park?", "Mara Lind") is None
    assert echoes_the_question("Who directed Lumen Park?", "Park") is None  # the words must stand alone
    rules = RuleSet(["all"])
    assert answer_type_problem(question, "Lumen Park", rules, step=1)
    assert rules.names_fired == ["not-in-question"]
    assert answer_type_problem(question, "Lumen Park", RuleSet(["all", "-not-in-question"])) is None


# -- assemble rules ----------------------------------------------------------------------------
def test_chain_last_step():
    assert chain_answer("Who wrote it?", steps(("Ann", ()), ("Oslo", (0,)))) == "Oslo"
    assert chain_answer("Who wrote it?", steps(("a", ()), ("b", ()))) is None  # two independent facts
    # an either-or chain that ends on neither option is not decided here
    assert chain_answer("Which came first, Roe or Doe?", steps(("Roe", ()), ("1973", (0,)))) is None
    assert chain_answer("Which came first, Roe or Doe?", steps(("1973", ()), ("Roe", (0,)))) == "Roe"


def test_both_yes():
    question = "Are Lake Ora and Lake Vesi both in Finland?"
    assert both_yes(question, steps(("yes", ()), ("no", ()))) == "no"
    assert both_yes(question, steps(("yes", ()), ("yes", ()))) == "yes"
    assert both_yes(question, steps(("Finland", ()), ("yes", ()))) is None


def test_compare_options_decides_clear_comparisons():
    question = "Which band was formed first, The Tallows or Red Kite?"
    qs = ["When was the band The Tallows formed?", "When was the band Red Kite formed?"]
    assert compare_options(question, steps(("1990", ()), ("March 1985", ()), questions=qs)) == "Red Kite"
    assert compare_options(question.replace("first", "later"), steps(("1990", ()), ("1985", ()), questions=qs)) \
        == "The Tallows"
    assert compare_options("Who is older, Ann Berg or Tom Hale?", steps(
        ("3 May 1950", ()), ("1948", ()), questions=["When was Ann Berg born?", "When was Tom Hale born?"])) \
        == "Tom Hale"
    assert compare_options(question, steps(("1990", ()), ("unknown", ()), questions=qs)) is None
    members = ["How many members does The Tallows have?", "How many members does Red Kite have?"]
    assert compare_options("Which band has the most members, The Tallows, or Red Kite?",
                           steps(("3", ()), ("5", ()), questions=members)) == "Red Kite"
    assert compare_options("Who was born in Oslo, Ann or Tom?", steps(
        ("Oslo", ()), ("Rome", ()), questions=["Where was Ann born?", "Where was Tom born?"])) is None


def test_compare_options_follows_each_option_to_its_chain_end():
    question = "Which film has the director who died first, Blue Harbour or Red Sky?"
    qs = ["Who directed Blue Harbour?", "Who directed Red Sky?", "When did Mara Lind die?", "When did Tom Hale die?"]

    def run(answers, deps, q=question, questions=qs):
        return compare_options(q, steps(*zip(answers, deps), questions=questions))

    deps = [(), (), (0,), (1,)]
    assert run(["Mara Lind", "Tom Hale", "9 May 1970", "March 2, 1970"], deps) == "Red Sky"  # the month decides
    assert run(["Mara Lind", "Tom Hale", "1981", "1970"], deps, question.replace("first", "later")) == "Blue Harbour"
    order = [qs[0], qs[2], qs[1], qs[3]]  # matching follows the links, not the positions
    assert run(["Mara Lind", "1981", "Tom Hale", "1970"], [(), (0,), (), (2,)], questions=order) == "Red Sky"
    assert run(["Mara Lind", "Tom Hale", "1970", "June 1970"], deps) is None  # same year, no month
    assert run(["Mara Lind", "Tom Hale", "1981", "1970"], [(), (), (0,), (0,)]) is None  # a branching plan


def test_option_grammar():
    question = "Which case came first, Roe or Doe?"
    assert grammar_options(question, []) == ("Roe", "Doe")
    assert grammar_options("Who directed Actrius?", []) is None


def test_question_shapes():
    assert options("Which case came first, Craig v. Boren or United States v. Paramount Pictures, Inc.?") == (
        "Craig v. Boren", "United States v. Paramount Pictures, Inc.")
    assert options("Which band has the most members, The Tallows, or Red Kite?") == ("The Tallows", "Red Kite")
    assert either_or_options("Is it Roe or Doe?") is None  # a yes/no question chooses nothing
    assert comparison_direction("Which is older, A or B?") == "smaller"
    assert comparison_direction("Which has the most members, A or B?") == "larger"
    assert comparison_direction("Which is better, A or B?") is None
