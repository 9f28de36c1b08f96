"""Per-question comparisons: record backtracking fields, effects, pairs, the sign test, duel pairs."""

from __future__ import annotations

import pytest

from reagent_local.bench.compare import (
    against_none, backtracking_effect, backtracking_fields, by_signal, duel, duel_pairs, has_backtracking, head_to_head,
    record_backtracked, sign_test,
)
from reagent_local.bench.methods import MethodResult
from reagent_local.bench.runner import make_record
from reagent_local.datasets import Paragraph, Question

QUESTION = Question(id="q1", dataset="hotpotqa", question="Where was X born?", answers=("Paris", "Paris, France"),
                    type="bridge", paragraphs=(Paragraph("X", "X was born in Paris."),),
                    supporting=(Paragraph("X", "X was born in Paris."),), supporting_titles=("X",))


@pytest.mark.parametrize(("wins", "losses", "p"), [
    (0, 0, 1.0),
    (1, 0, 1.0),            # 2 * 1/2
    (5, 0, 0.0625),         # 2 * 1/32
    (0, 5, 0.0625),
    (6, 1, 0.125),          # 2 * (1 + 7) / 128
    (8, 2, 0.109375),       # 2 * (1 + 10 + 45) / 1024
    (10, 0, 0.001953125),   # 2 / 1024
    (3, 3, 1.0),            # 2 * 42/64 > 1, capped
])
def test_sign_test_hand_computed(wins: int, losses: int, p: float) -> None:
    assert sign_test(wins, losses) == pytest.approx(p, abs=1e-12)


def test_record_fields_for_a_baseline() -> None:
    record = make_record("rag", QUESTION, MethodResult(prediction="Paris"), 1.0)
    assert record["backtracked"] is False and record["answer_before_backtracking"] is None
    assert record["backtracking_changed_answer"] is False  # nothing rolled back, nothing changed
    assert record["em_before"] is None and record["f1_before"] is None
    assert record["rules_fired"] == [] and record["signals"] == []


def test_record_fields_when_backtracking_changed_the_answer() -> None:
    result = MethodResult(prediction="Paris, France", backtracks={"local": 0, "global": 1},
                          answer_before_backtracking="Lyon", rules_fired=["bridge-broken"], signals=["disagreement"])
    record = make_record("reagent-both", QUESTION, result, 1.0)
    assert record["backtracked"] is True and record["answer_before_backtracking"] == "Lyon"
    assert record["backtracking_changed_answer"] is True
    assert (record["em_before"], record["f1_before"], record["em"]) == (0.0, 0.0, 1.0)
    assert record["rules_fired"] == ["bridge-broken"] and record["signals"] == ["disagreement"]


def test_backtracking_fields_unknown_and_unchanged() -> None:
    unknown = backtracking_fields("Paris", ("Paris",), {"local": 2, "global": 0}, None)
    assert unknown["backtracked"] is True and unknown["backtracking_changed_answer"] is None
    assert unknown["em_before"] is None
    same = backtracking_fields("Paris", ("Paris",), {"local": 1, "global": 0}, "the paris.")
    assert same["backtracking_changed_answer"] is False and same["em_before"] == 1.0 and same["f1_before"] == 1.0
    partly = backtracking_fields("Paris", ("Paris France",), {"local": 1}, "Paris France")
    assert partly["em_before"] == 1.0 and partly["f1_before"] == pytest.approx(1.0)
    assert backtracking_fields("Paris", ("Paris France",), {"local": 1}, "Paris")["f1_before"] == pytest.approx(0.666667)


def rec(method: str, qid: str, prediction: str, em: float, f1: float, **extra) -> dict:
    return {"method": method, "id": qid, "prediction": prediction, "em": em, "f1": f1, **extra}


def test_old_records_derive_backtracked_from_the_counts() -> None:
    assert record_backtracked(rec("m", "a", "", 0, 0, backtracks={"local": 0, "global": 2}))
    assert not record_backtracked(rec("m", "a", "", 0, 0, backtracks={"local": 0, "global": 0}))
    assert not record_backtracked(rec("m", "a", "", 0, 0))
    assert not record_backtracked(rec("m", "a", "", 0, 0, backtracked=False, backtracks={"local": 1}))
    records = [rec("rag", "a", "", 0, 0), rec("custom", "a", "", 0, 0, backtracks={"local": 1})]
    assert has_backtracking("reagent-local", records) and not has_backtracking("reagent-none", records)
    assert has_backtracking("custom", records) and not has_backtracking("rag", records)


def test_backtracking_effect_counts() -> None:
    records = [
        rec("m", "a", "A", 1, 1, backtracked=True, em_before=0.0, backtracking_changed_answer=True),
        rec("m", "b", "B", 0, 0, backtracked=True, em_before=1.0, backtracking_changed_answer=True),
        rec("m", "c", "C", 0, 0, backtracked=True, em_before=0.0, backtracking_changed_answer=True),  # wrong both times
        rec("m", "d", "D", 1, 1, backtracked=True, em_before=1.0, backtracking_changed_answer=False),
        rec("m", "e", "E", 1, 1, backtracks={"local": 1, "global": 0}),  # an old record
        rec("m", "f", "F", 0, 0, backtracked=False),
    ]
    assert backtracking_effect(records) == {"questions": 6, "fired": 5, "changed": 3, "unknown": 1, "exact": 0,
                                            "fixed": ["a"], "broken": ["b"], "shadow_calls": 0, "shadow_seconds": 0}


def test_the_answer_without_backtracking_wins_over_the_answer_before_it() -> None:
    cost = {"calls": 2, "replayed": 3, "seconds": 1.5}
    records = [
        # held "x" before the first rollback, but without backtracking the question gets the right answer
        rec("m", "a", "A", 0, 0, backtracked=True, em_before=0.0, em_without_backtracking=1.0,
            without_backtracking_cost=cost),
        rec("m", "b", "B", 1, 1, backtracked=True, em_before=None, em_without_backtracking=0.0,
            without_backtracking_cost=cost),
        rec("m", "c", "C", 1, 1, backtracked=False, em_without_backtracking=1.0,
            without_backtracking_cost={"calls": 0, "replayed": 0, "seconds": 0.0}),
    ]
    effect = backtracking_effect(records)
    assert effect["fixed"] == ["b"] and effect["broken"] == ["a"] and effect["unknown"] == 0
    assert effect["exact"] == 2 and effect["shadow_calls"] == 4 and effect["shadow_seconds"] == 3.0


def test_record_fields_with_the_answer_without_backtracking() -> None:
    from reagent_local.bench.methods import WithoutBacktracking

    result = MethodResult(prediction="Paris", backtracks={"local": 1, "global": 0}, answer_before_backtracking=None,
                          without_backtracking=WithoutBacktracking("Lyon", calls=2, replayed=4, prompt_tokens=50,
                                                                   completion_tokens=5, seconds=3.25, run_id="r2"))
    record = make_record("reagent-both", QUESTION, result, 10.0)
    assert record["answer_without_backtracking"] == "Lyon" and record["backtracking_changed_answer"] is True
    assert (record["em_without_backtracking"], record["f1_without_backtracking"]) == (0.0, 0.0)
    assert record["without_backtracking_cost"] == {"calls": 2, "replayed": 4, "prompt_tokens": 50,
                                                   "completion_tokens": 5, "seconds": 3.25, "run_id": "r2",
                                                   "error": None}
    assert record["seconds"] == 10.0 and record["llm_calls"] == 0  # the second run's cost stays apart
    baseline = make_record("rag", QUESTION, MethodResult(prediction="Paris"), 1.0)
    assert baseline["answer_without_backtracking"] is None and baseline["without_backtracking_cost"] is None


def test_against_none_and_head_to_head() -> None:
    records = [
        rec("reagent-none", "a", "x", 0, 0.0), rec("reagent-none", "b", "B", 1, 1.0), rec("reagent-none", "c", "c", 0, 0.5),
        rec("reagent-none", "d", "d", 0, 0.2),
        rec("reagent-both", "a", "A", 1, 1.0), rec("reagent-both", "b", "b.", 1, 1.0), rec("reagent-both", "c", "k", 0, 0.4),
        rec("reagent-both", "e", "e", 1, 1.0),  # reagent-none has no record for e
    ]
    assert against_none(records, "reagent-both") == {"questions": 3, "changed": 2, "fixed": ["a"], "broken": [],
                                                     "delta_f1": pytest.approx((1.0 + 0.0 - 0.1) / 3, abs=1e-6)}
    duel_ = head_to_head(records, "reagent-both", "reagent-none")
    assert duel_["questions"] == 3
    assert duel_["f1"] == {"wins": 1, "losses": 1, "ties": 1, "p_value": 1.0, "won": ["a"], "lost": ["c"]}
    assert duel_["em"] == {"wins": 1, "losses": 0, "ties": 2, "p_value": 1.0, "won": ["a"], "lost": []}
    assert against_none([], "reagent-both")["delta_f1"] is None


def test_by_signal_pairs_each_signal_with_reagent_none() -> None:
    records = [
        rec("reagent-none", "a", "x", 0, 0.0), rec("reagent-none", "b", "B", 1, 1.0), rec("reagent-none", "c", "c", 0, 0.5),
        rec("reagent-both", "a", "A", 1, 1.0, signals=["two-roads", "low-confidence", "two-roads"]),
        rec("reagent-both", "b", "k", 0, 0.0, signals=["two-roads"]),
        rec("reagent-both", "c", "c", 0, 0.5, signals=["check-failed"]),  # an old record's: the signal was removed
        rec("reagent-both", "d", "d", 1, 1.0, signals=["two-roads"]),  # no reagent-none record: not counted
    ]
    rows = by_signal(records, "reagent-both")
    assert list(rows) == ["two-roads", "check-failed", "low-confidence"]  # most questions first, then by name
    assert rows["two-roads"] == {"questions": 2, "changed": 2, "won": ["a"], "lost": ["b"], "f1_sum": 0.0}
    assert rows["low-confidence"] == {"questions": 1, "changed": 1, "won": ["a"], "lost": [], "f1_sum": 1.0}
    assert rows["check-failed"] == {"questions": 1, "changed": 0, "won": [], "lost": [], "f1_sum": 0.0}
    assert by_signal(records, "reagent-local") == {}


def test_duel_with_many_wins_is_significant() -> None:
    matched = [(rec("x", f"q{i}", "", 0, 1.0), rec("y", f"q{i}", "", 0, 0.0)) for i in range(10)]
    matched += [(rec("x", "t", "", 0, 0.5), rec("y", "t", "", 0, 0.5))]
    result = duel(matched, lambda r: r["f1"])
    assert (result["wins"], result["losses"], result["ties"]) == (10, 0, 1)
    assert result["p_value"] == pytest.approx(0.001953, abs=1e-6)


def test_every_reagent_method_meets_every_other_once() -> None:
    methods = ["closed-book", "rag", "reagent-none", "reagent-both", "ircot"]
    assert duel_pairs(methods) == [
        ("reagent-none", "closed-book"), ("reagent-none", "rag"), ("reagent-none", "reagent-both"),
        ("reagent-none", "ircot"), ("reagent-both", "closed-book"), ("reagent-both", "rag"), ("reagent-both", "ircot"),
    ]
    assert duel_pairs(["rag", "ircot"]) == []
