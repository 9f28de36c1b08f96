"""Closing a run: the Answer it returns and its row in the log."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..core.evidence import is_unknown, supported, values_agree
from ..agents.messages import WHOLE
from ..agents.trust import TrustFacts
from ..rules import answer_type_problem
from ..core import events as ev
from .answer import Answer, PassageRef, SubQuestionResult, tidy_answer
from .calls import CallLedger
from .state import RunState


def finish(run: RunState, calls: CallLedger, final: str, status: str, reason: str) -> Answer:
    """The run's Answer (sub-questions, cited passages, cost, uncertainty), recorded in the log."""
    final = tidy_answer(final)  # the one place every final answer passes: no ": Paris" from any road
    uncertain = bool(reason) or any(s.uncertain for s in run.steps) or is_unknown(final)
    if not reason and uncertain:
        reason = "a step could not be verified" if not is_unknown(final) else "no answer found"
    subs, cited = [], {}  # cited: by passage id, first citation first
    for step in run.steps:
        refs = tuple(PassageRef(p.id, p.title, p.text, p.origin) for p in step.cited)
        for ref in refs:
            cited.setdefault(ref.id, ref)
        facts = tuple(f.text for f in step.evidence.facts) if step.evidence else ()
        subs.append(SubQuestionResult(step.question or step.sub.text, step.answer or "unknown", refs,
                                      step.uncertain, facts))
    for p in run.fallback_cited:
        cited.setdefault(p.id, PassageRef(p.id, p.title, p.text, p.origin))
    team = run.team
    answer = Answer(
        question=run.question, answer=final, run_id=run.ws.run_id, subquestions=tuple(subs),
        passages=tuple(cited.values()), backtracks=dict(run.backtracks), llm_calls=calls.calls,
        prompt_tokens=calls.prompt_tokens, completion_tokens=calls.completion_tokens,
        seconds=team.controller.budget.elapsed, llm_seconds=calls.llm_seconds, uncertain=uncertain,
        uncertain_reason=reason, challenges=run.challenges, judge_calls=team.verifier.checker.stats["judge_calls"],
        rules_fired=tuple(team.rules.names_fired), signals=tuple(dict.fromkeys(run.notes.signals)),
        answer_before_backtracking=_before_backtracking(run, final), roads=_roads(run))
    # the supervisor scores the answer before it is recorded: a finished run's last event is its answer
    trust = team.supervisor.score_answer(_facts(run, answer))
    run.ws.record("supervisor", ev.TrustScored(probability=trust.probability, threshold=trust.threshold,
                                               label=trust.label, grounded=trust.grounded, caught=trust.caught,
                                               features=trust.features, contributions=trust.contributions))
    run.ws.record("assembler", ev.Answer(answer=final, uncertain=uncertain, reason=reason, rules=answer.rules_fired))
    answer = replace(answer, trust=trust.to_json(), closest=() if trust.grounded else _closest(run, answer))
    run.ws.finish(final, status, {
        "uncertain": uncertain, "uncertain_reason": reason, "llm_calls": answer.llm_calls,
        "prompt_tokens": answer.prompt_tokens, "completion_tokens": answer.completion_tokens,
        "seconds": answer.seconds, "llm_seconds": answer.llm_seconds, "backtracks": dict(run.backtracks),
        "challenges": run.challenges, "reliability": dict(team.controller.reliability),
        "subquestions": [s.question for s in answer.subquestions], "passages": [p.id for p in answer.passages],
        "rules_fired": list(answer.rules_fired), "signals": list(answer.signals),
        "answer_before_backtracking": answer.answer_before_backtracking, "trust": answer.trust}, uncertain=uncertain)
    return answer


def _facts(run: RunState, answer: Answer) -> TrustFacts:
    """What the run knows of its answer at its end: the trust score's input."""
    final, steps = answer.answer, run.steps
    answered = [s for s in steps if s.done and s.statement is not None]
    if run.fallback_cited:  # the answer is the whole question's (a fallback, or the roads' verdict)
        confidence = run.notes.whole_confidence if run.notes.whole_confidence is not None else 0.5
    else:  # the chain's: as sure as its least sure step
        confidence = min((s.statement.confidence for s in answered if s.statement is not None), default=0.0)
    unknown = not final.strip() or is_unknown(final)
    before = answer.answer_before_backtracking
    roads = answer.roads or {}
    return TrustFacts(
        question=run.question, answer=final, grounded=not unknown and supported(final, answer.passages),
        fits=unknown or answer_type_problem(run.question, final, run.team.rules, fire=False) is None,
        cited=len(answer.passages), unknown=unknown, uncertain=answer.uncertain,
        local_backtracks=run.backtracks["local"], global_backtracks=run.backtracks["global"],
        changed=before is not None and not values_agree(before, final), roads_disagreed=answer.roads is not None,
        whole_won=roads.get("winner") == WHOLE, signals=answer.signals, rules=len(answer.rules_fired),
        calls=answer.llm_calls, confidence=confidence, steps=len(steps), answered=len(answered),
        uncertain_steps=sum(1 for s in steps if s.uncertain))


def _closest(run: RunState, answer: Answer, limit: int = 3) -> tuple[PassageRef, ...]:
    """The passages nearest the question when none supports the answer: those it cites, then what the steps read."""
    found = {p.id: p for p in answer.passages}
    for step in run.steps:
        for evidence in [step.evidence] if step.evidence else [a.evidence for a in step.attempts]:
            for p in evidence.passages:
                found.setdefault(p.id, PassageRef(p.id, p.title, p.text, p.origin))
    return tuple(found.values())[:limit]


def _roads(run: RunState) -> dict[str, Any] | None:
    """The two roads' answers and the supervisor's verdict, when the roads disagreed."""
    verdict = run.verdict
    if verdict is None:
        return None
    chain, whole = (verdict.winner, verdict.loser) if verdict.winner.name == "chain" else (verdict.loser, verdict.winner)
    return {"chain": chain.answer, "whole": whole.answer, "winner": verdict.winner.name,
            "judged": verdict.judged, "reason": verdict.reason}


def _before_backtracking(run: RunState, final: str) -> str | None:
    """The answer before any rollback: the final one if none fired; the chain's first answer if only the
    roads' global rollbacks fired after it; None when a rollback fired before the first answer existed."""
    if not run.backtracks["local"] and not run.backtracks["global"]:
        return final
    if run.backtracks["local"] or run.first_answer is None or run.backtracks["global"] > run.roads_rollbacks:
        return None
    return run.first_answer
