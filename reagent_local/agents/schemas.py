"""The JSON objects agents ask the model for; every field is bounded for the grammar.

``maxLength`` on spans and ``maxItems`` on lists keep a small model from rambling and
keep each call's token cost predictable.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, create_model

from ..core.relations import ALL_RELATIONS

# the relations a statement may name (one source: core/relations.py), or "other"
Relation = Literal[tuple(sorted(ALL_RELATIONS - {"answer"})) + ("other",)]  # type: ignore[valid-type]


class Decomposition(BaseModel):
    """Question-Decomposer output: ordered sub-questions; '#1' refers to answer 1."""

    subquestions: list[Annotated[str, Field(min_length=3, max_length=160)]] = Field(min_length=1, max_length=4)


class SubAnswer(BaseModel):
    """Verifier output for one sub-question, answered from numbered passages."""

    answer: str = Field(max_length=80)
    passages: list[int] = Field(default_factory=list, max_length=3)
    subject: str = Field(default="", max_length=80)
    relation: Relation = "other"


class Reformulation(BaseModel):
    """Retriever output on a local backtrack: a new search query."""

    query: str = Field(max_length=160)


class ConflictJudgement(BaseModel):
    """Verifier's LLM judge for two free-text statements."""

    contradict: bool


class FinalAnswer(BaseModel):
    """Answer-Assembler output: the short final answer."""

    answer: str = Field(max_length=80)


def option_answer(options: tuple[str, ...]) -> type[BaseModel]:
    """A FinalAnswer whose answer must be one of ``options`` (the grammar allows nothing else)."""
    return create_model("OptionAnswer", __doc__="Answer-Assembler output: one of the question's options.",
                        answer=(Literal[tuple(options)], ...))
