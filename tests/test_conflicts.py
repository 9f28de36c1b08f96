"""Consistency rules, the cached judge, fact checks and minimal conflict sets."""

from __future__ import annotations

import itertools
from typing import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reagent_local.core.conflicts import (
    ConflictChecker, RuleChecker, Verdict, check_against_facts, minimal_conflict_set,
    quickxplain,
)
from reagent_local.core.knowledge import Statement, make_statement


def fact(subject: str, relation: str, value: str, **kw) -> Statement:
    return make_statement(subject=subject, relation=relation, value=value, **kw)


class ScriptedJudge:
    """Conflicts exactly on the listed unordered text pairs; counts calls."""

    def __init__(self, conflicting: set[frozenset[str]] = frozenset()) -> None:
        self.conflicting = conflicting
        self.calls = 0

    def judge(self, a: Statement, b: Statement) -> Verdict:
        self.calls += 1
        bad = frozenset((a.text, b.text)) in self.conflicting
        return Verdict(bad, "scripted conflict" if bad else "scripted ok")


def test_values_are_compared_after_text_normalize() -> None:
    a = make_statement(subject="São Paulo", relation="capital", value="The Hague")
    b = make_statement(subject="sao paulo!", relation="capital", value="hague")
    assert not RuleChecker().check(a, b).conflict  # same subject, same value once normalised


@pytest.mark.parametrize("a, b, conflict", [
    (fact("California", "capital", "Sacramento"), fact("california", "capital", "SACRAMENTO."), False),
    (fact("California", "capital", "Sacramento"), fact("California", "capital", "Los Angeles"), True),
    (fact("Sacramento", "population", "508,000"), fact("Sacramento", "population", "1,600,000"), True),
    (fact("Sacramento", "population", "508,000"), fact("Sacramento", "population", "0.53 million"), False),
    (fact("Sacramento", "population", "508,000"), fact("Sacramento", "population", "570,000"), True),
    (fact("A", "birth_date", "1950"), fact("A", "birth_date", "12 March 1950"), False),
    (fact("A", "birth_date", "1950"), fact("A", "birth_date", "12 March 1951"), True),
    (fact("A", "spouse", "B"), fact("A", "spouse", "C"), False),
    (fact("A", "capital", "B"), fact("C", "capital", "D"), False),
    (fact("A", "capital", "B"), fact("A", "country", "D"), False),
    (fact("Q", "answer", "yes", subquestion=1), fact("other wording", "answer", "No", subquestion=1), True),
    (fact("Q", "answer", "yes", subquestion=1), fact("Q", "answer", "no", subquestion=2), False),
    (fact("#1", "answer", "Paris", subquestion=1), fact("#1", "answer", "Lyon", subquestion=1), True),
])
def test_rules(a: Statement, b: Statement, conflict: bool) -> None:
    verdict = RuleChecker().check(a, b)
    assert verdict is not None and verdict.conflict is conflict, verdict
    assert RuleChecker().check(b, a).conflict is conflict  # symmetric


def test_rules_leave_free_text_to_the_judge() -> None:
    free = make_statement("California hosted the 1984 Summer Olympics")
    assert RuleChecker().check(free, fact("California", "capital", "Sacramento")) is None


def test_checker_uses_judge_only_for_free_text_and_caches_it() -> None:
    x, y = make_statement("It rained in Paris on May 1"), make_statement("Paris was dry all of May")
    judge = ScriptedJudge({frozenset((x.text, y.text))})
    seen: list[tuple[str, str, bool, bool]] = []
    checker = ConflictChecker(judge, on_judgement=lambda a, b, v, cached: seen.append((a.text, b.text, v.conflict, cached)))
    assert checker.conflict(fact("A", "capital", "B"), fact("A", "capital", "C")).conflict
    assert judge.calls == 0
    assert checker.conflict(x, y).conflict and checker.conflict(y, x).conflict
    assert judge.calls == 1
    assert checker.stats == {"rule_decisions": 1, "judge_calls": 1, "judge_cache_hits": 1, "unjudged": 0}
    assert [s[3] for s in seen] == [False, True]  # miss then hit, both reported to the hook


def test_rules_only_checker_counts_unjudged_pairs() -> None:
    checker = ConflictChecker()
    assert checker.is_consistent([make_statement("a"), make_statement("b"), fact("A", "capital", "B")])
    assert checker.stats["unjudged"] == 3


def test_judge_returning_garbage_is_an_error() -> None:
    class Bad:
        def judge(self, a: Statement, b: Statement) -> bool:
            return True

    with pytest.raises(TypeError, match="not a Verdict"):
        ConflictChecker(Bad()).conflict(make_statement("a"), make_statement("b"))


def test_rule_conflicts_are_found_before_any_judge_call() -> None:
    judge = ScriptedJudge()
    texts = [make_statement(f"free text {i}") for i in range(6)]
    rule_pair = [fact("A", "capital", "B"), fact("A", "capital", "C")]
    checker = ConflictChecker(judge)
    assert not checker.is_consistent(texts + rule_pair)
    assert judge.calls == 0
    assert minimal_conflict_set(texts + rule_pair, checker) == rule_pair
    assert judge.calls == 0


def test_find_all_conflicting_pairs() -> None:
    s = [fact("A", "capital", v) for v in ("B", "C", "D")]
    pairs = ConflictChecker().find_conflicting_pairs(s)
    assert {(a.value, b.value) for a, b, _ in pairs} == {("B", "C"), ("B", "D"), ("C", "D")}


def test_check_against_facts_without_judge_calls() -> None:
    claim = fact("California", "capital", "Los Angeles", agent="verifier")
    facts = [fact("California", "capital", "Sacramento", agent="kg"),
             fact("California", "largest_city", "Los Angeles", agent="kg"),
             fact("Nevada", "capital", "Carson City", agent="kg")]
    check = check_against_facts(claim, facts)
    assert [f.value for f, _ in check.conflicts] == ["Sacramento"] and check.supports == ()
    good = check_against_facts(fact("California", "capital", "sacramento"), facts)
    assert good.conflicts == () and [f.value for f in good.supports] == ["Sacramento"]


def test_minimal_conflict_set_of_consistent_set_is_an_error() -> None:
    with pytest.raises(ValueError, match="consistent"):
        minimal_conflict_set([fact("A", "capital", "B")], ConflictChecker())
    with pytest.raises(ValueError, match="consistent"):
        quickxplain([make_statement("a")], lambda s: True)


# -- properties -------------------------------------------------------------------------------------
@st.composite
def planted_sets(draw: st.DrawFn) -> tuple[list[Statement], set[frozenset[str]]]:
    """Distinct subjects each with one capital, free-text statements, and at least one planted conflict."""
    n = draw(st.integers(2, 14))
    statements = [fact(f"subject {i}", "capital", f"city {i}") for i in range(n)]
    statements += [make_statement(f"remark {i}") for i in range(draw(st.integers(0, 6)))]
    judged: set[frozenset[str]] = set()
    kinds = draw(st.lists(st.sampled_from(["rule", "judge"]), min_size=1, max_size=3))
    for j, kind in enumerate(kinds):
        if kind == "rule":
            i = draw(st.integers(0, n - 1))
            statements.append(fact(f"subject {i}", "capital", f"other city {j}"))
        else:
            a, b = make_statement(f"claim {j}"), make_statement(f"counter-claim {j}")
            statements += [a, b]
            judged.add(frozenset((a.text, b.text)))
    order = draw(st.permutations(range(len(statements))))
    return [statements[k] for k in order], judged


@settings(max_examples=120, deadline=None)
@given(planted_sets())
def test_minimal_conflict_set_is_inconsistent_and_minimal(data: tuple) -> None:
    statements, judged = data
    checker = ConflictChecker(ScriptedJudge(judged))
    mcs = minimal_conflict_set(statements, checker)
    fresh = ConflictChecker(ScriptedJudge(judged))
    assert not fresh.is_consistent(mcs)
    assert all(fresh.is_consistent([s for s in mcs if s is not drop]) for drop in mcs)
    assert all(any(s is t for t in statements) for s in mcs)
    free_pairs = sum(1 for a, b in itertools.combinations(statements, 2) if not (a.structured and b.structured))
    assert checker.stats["judge_calls"] <= free_pairs  # never more than one call per distinct pair


@st.composite
def nogood_universes(draw: st.DrawFn) -> tuple[list[Statement], list[frozenset[int]]]:
    """Items with planted set-level conflicts ("nogoods") of size 1 to 4: beyond what pairs can express."""
    n = draw(st.integers(1, 16))
    items = [make_statement(f"item {i}") for i in range(n)]
    nogoods = draw(st.lists(st.frozensets(st.integers(0, n - 1), min_size=1, max_size=4), min_size=1, max_size=3))
    return items, nogoods


@settings(max_examples=200, deadline=None)
@given(nogood_universes())
def test_quickxplain_on_set_level_oracle(data: tuple) -> None:
    items, nogoods = data
    index = {id(s): i for i, s in enumerate(items)}
    calls = [0]

    def consistent(subset: Sequence[Statement]) -> bool:
        calls[0] += 1
        present = {index[id(s)] for s in subset}
        return not any(ng <= present for ng in nogoods)

    mcs = minimal_conflict_set(items, consistent)
    assert not consistent(mcs)
    assert all(consistent([s for s in mcs if s is not drop]) for drop in mcs)
    assert [index[id(s)] for s in mcs] == sorted(index[id(s)] for s in mcs)  # input order
    # QuickXplain's bound: about 2k log2(n/k) + 2k checks for a conflict of size k
    assert calls[0] <= 2 * len(mcs) * max(1, len(items)).bit_length() + 2 * len(mcs) + 4
