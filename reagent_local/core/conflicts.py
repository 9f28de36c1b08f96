"""Consistency of statement sets: deterministic rules, a pluggable cached judge, minimal conflict sets.

Every check here is *pairwise*: two statements conflict or not. Structured pairs are
decided by :class:`RuleChecker` alone (free, deterministic); a pair with a free-text
side goes to the :class:`Judge` (an LLM later, a scripted one in tests) through a
cache, so each distinct pair costs at most one judge call per checker.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable, Mapping, Protocol, Sequence

from ..text import YES_NO, normalize
from .knowledge import Statement
from .relations import FUNCTIONAL_RELATIONS, NUMERIC_TOLERANCE


@dataclass(frozen=True)
class Verdict:
    """Whether two statements conflict, and why (shown in traces)."""

    conflict: bool
    reason: str


class Judge(Protocol):
    """Decides whether two statements (at least one free text) can both be true."""

    def judge(self, a: Statement, b: Statement) -> Verdict: ...


JudgementHook = Callable[[Statement, Statement, Verdict, bool], None]  # (a, b, verdict, cached)


# text.normalize, cached: pair checks normalise the same values over and over
_normalized = lru_cache(maxsize=65536)(normalize)


def _same_subject(a: Statement, b: Statement) -> bool:
    if a.relation == "answer" and a.subquestion is not None:
        return a.subquestion == b.subquestion  # answers are keyed by their sub-question
    return _normalized(a.subject or "") == _normalized(b.subject or "")


class RuleChecker:
    """Deterministic rules; ``check`` returns None when the rules cannot decide a pair."""

    def __init__(self, functional: frozenset[str] = FUNCTIONAL_RELATIONS,
                 tolerance: Mapping[str, float] = NUMERIC_TOLERANCE) -> None:
        self.functional = functional
        self.tolerance = dict(tolerance)

    def check(self, a: Statement, b: Statement) -> Verdict | None:
        """A verdict from the rules, or None (a free-text side: ask the judge)."""
        va, vb = _normalized(a.value or ""), _normalized(b.value or "")
        if a.subquestion is not None and a.subquestion == b.subquestion and va in YES_NO and vb in YES_NO:
            return Verdict(va != vb, f"sub-question {a.subquestion}: {va} vs {vb}")
        if not (a.structured and b.structured):
            return None
        if a.relation != b.relation or not _same_subject(a, b):
            return Verdict(False, "different subject or relation")
        where = f"{a.relation}({a.subject})"
        if a.relation not in self.functional:
            return Verdict(False, f"{where} may have several values")
        if a.value_number is not None and b.value_number is not None and (
            a.unit is None or b.unit is None or a.unit == b.unit
        ):
            tol = self.tolerance.get(a.relation, 0.0)
            close = abs(a.value_number - b.value_number) <= tol * max(abs(a.value_number), abs(b.value_number))
            within = f" within {tol:.0%}" if tol else ""
            return Verdict(not close, f"{where}: {a.value} vs {b.value}" + (f" (equal{within})" if close else ""))
        if va == vb:
            return Verdict(False, f"{where}: same value")
        if a.relation.endswith("_date") or a.relation == "founded":
            ta, tb = set(va.split()), set(vb.split())
            if ta <= tb or tb <= ta:
                return Verdict(False, f"{where}: {a.value} and {b.value} differ only in precision")
        return Verdict(True, f"{where} has one value: {a.value!r} vs {b.value!r}")


def _content_key(s: Statement) -> tuple:
    return (s.text, s.subject, s.relation, s.value, s.subquestion)


class CachedJudge:
    """Wraps a judge with a cache over unordered pairs of statement contents; counts hits and misses."""

    def __init__(self, judge: Judge, on_result: JudgementHook | None = None) -> None:
        self.inner = judge
        self.on_result = on_result
        self.hits = 0
        self.misses = 0
        self._cache: dict[frozenset, Verdict] = {}

    def cached(self, a: Statement, b: Statement) -> Verdict | None:
        """The cached verdict for this pair, without calling the judge or counting."""
        return self._cache.get(frozenset((_content_key(a), _content_key(b))))

    def judge(self, a: Statement, b: Statement) -> Verdict:
        """The cached verdict, or the inner judge's (then cached); reports every result to on_result."""
        key = frozenset((_content_key(a), _content_key(b)))
        verdict = self._cache.get(key)
        hit = verdict is not None
        if hit:
            self.hits += 1
        else:
            self.misses += 1
            verdict = self.inner.judge(a, b)
            if not isinstance(verdict, Verdict):
                raise TypeError(f"{type(self.inner).__name__}.judge returned {verdict!r}, not a Verdict")
            self._cache[key] = verdict
        if self.on_result is not None:
            self.on_result(a, b, verdict, hit)
        return verdict


class ConflictChecker:
    """Rules first, then the cached judge for pairs with a free-text side.

    With ``judge=None`` the checker is rules-only and counts free-text pairs it could
    not judge in ``stats["unjudged"]`` (they are treated as consistent).
    """

    def __init__(self, judge: Judge | None = None, *, rules: RuleChecker | None = None,
                 on_judgement: JudgementHook | None = None) -> None:
        self.rules = rules or RuleChecker()
        self.judge = CachedJudge(judge, on_judgement) if judge is not None else None
        self.rule_decisions = 0
        self.unjudged = 0

    @property
    def stats(self) -> dict[str, int]:
        """Counters: rule decisions, judge calls (cache misses), cache hits, unjudged pairs."""
        return {
            "rule_decisions": self.rule_decisions,
            "judge_calls": self.judge.misses if self.judge else 0,
            "judge_cache_hits": self.judge.hits if self.judge else 0,
            "unjudged": self.unjudged,
        }

    def conflict(self, a: Statement, b: Statement) -> Verdict:
        """Do these two statements conflict?"""
        verdict = self.rules.check(a, b)
        if verdict is not None:
            self.rule_decisions += 1
            return verdict
        if _content_key(a) == _content_key(b):
            return Verdict(False, "same statement")
        if self.judge is None:
            self.unjudged += 1
            return Verdict(False, "free text and no judge configured")
        return self.judge.judge(a, b)

    def find_conflicting_pairs(self, statements: Sequence[Statement], *, first_only: bool = False
                               ) -> list[tuple[Statement, Statement, Verdict]]:
        """Conflicting pairs; every rule-decided or cached pair is examined before any new judge call."""
        found: list[tuple[Statement, Statement, Verdict]] = []
        costly: list[tuple[Statement, Statement]] = []
        for j in range(len(statements)):
            for i in range(j):
                a, b = statements[i], statements[j]
                verdict = self.rules.check(a, b)
                if verdict is not None:
                    self.rule_decisions += 1
                elif self.judge is not None and self.judge.cached(a, b) is None and _content_key(a) != _content_key(b):
                    costly.append((a, b))
                    continue
                else:
                    verdict = self.conflict(a, b)
                if verdict.conflict:
                    found.append((a, b, verdict))
                    if first_only:
                        return found
        for a, b in costly:
            verdict = self.conflict(a, b)
            if verdict.conflict:
                found.append((a, b, verdict))
                if first_only:
                    return found
        return found

    def is_consistent(self, statements: Sequence[Statement]) -> bool:
        """True when no two statements conflict."""
        return not self.find_conflicting_pairs(statements, first_only=True)


@dataclass(frozen=True)
class FactCheck:
    """One statement compared with external facts (knowledge-graph triples as Statements)."""

    conflicts: tuple[tuple[Statement, Verdict], ...]
    supports: tuple[Statement, ...]


def check_against_facts(statement: Statement, facts: Iterable[Statement], rules: RuleChecker | None = None) -> FactCheck:
    """Rules only (no judge call): which facts contradict the statement, which state the same value."""
    rules = rules or RuleChecker()
    conflicts, supports = [], []
    for fact in facts:
        verdict = rules.check(statement, fact)
        if verdict is None or verdict.reason == "different subject or relation":
            continue
        if verdict.conflict:
            conflicts.append((fact, verdict))
        elif statement.relation in rules.functional:
            supports.append(fact)
    return FactCheck(tuple(conflicts), tuple(supports))


def quickxplain(items: Sequence[Statement], consistent: Callable[[Sequence[Statement]], bool]) -> list[Statement]:
    """Junker's QuickXplain over any monotone consistency oracle; result in input order."""
    items = list(items)
    if consistent(items):
        raise ValueError("the statements are consistent: there is no conflict set")

    def qx(background: list, has_delta: bool, candidates: list) -> list:
        if has_delta and not consistent(background):
            return []
        if len(candidates) == 1:
            return list(candidates)
        half = len(candidates) // 2
        c1, c2 = candidates[:half], candidates[half:]
        d2 = qx(background + c1, bool(c1), c2)
        d1 = qx(background + d2, bool(d2), c1)
        return d1 + d2

    found = qx([], False, items)
    order = {id(s): i for i, s in enumerate(items)}
    return sorted(found, key=lambda s: order[id(s)])


def minimal_conflict_set(statements: Sequence[Statement],
                         checker: ConflictChecker | Callable[[Sequence[Statement]], bool]) -> list[Statement]:
    """A subset that is inconsistent while every proper subset is consistent (ValueError if none).

    With a ConflictChecker (pairwise by construction) the answer is its first
    conflicting pair, found with rules and the cache before any judge call; any other
    callable is treated as a set-level oracle and searched with QuickXplain.
    """
    if isinstance(checker, ConflictChecker):
        pairs = checker.find_conflicting_pairs(statements, first_only=True)
        if not pairs:
            raise ValueError("the statements are consistent: there is no conflict set")
        a, b, _ = pairs[0]
        return [a, b]
    return quickxplain(statements, checker)
