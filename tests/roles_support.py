"""Small builders shared by the role tests."""

from __future__ import annotations

from reagent_local.agents.assembler import StepResult
from reagent_local.core.evidence import Evidence, EvidencePassage, looks_like_instruction
from reagent_local.rules import RuleSet


def caller(llm):
    """An agents' Caller backed by a ScriptedLLM (no budget, no log)."""
    return lambda agent, messages, schema, max_tokens: llm.generate_json(messages, schema, max_tokens=max_tokens)


def steps(*specs, questions=None) -> list[StepResult]:
    """StepResults from (answer, depends_on) pairs; questions default to q0, q1, ..."""
    return [StepResult(i, questions[i] if questions else f"q{i}", answer, None, depends)
            for i, (answer, depends) in enumerate(specs)]


def evidence(*passages: tuple[str, str], query: str = "q") -> Evidence:
    """Evidence from (title, text) pairs, ranked in the order given, instructions flagged as the retriever does."""
    return Evidence(query, tuple(EvidencePassage(f"{title}#0", title, text, 1.0 - i / 10, looks_like_instruction(text))
                                 for i, (title, text) in enumerate(passages)))


def all_rules() -> RuleSet:
    return RuleSet(["all"])
