"""The JSON objects agents ask the model for; every field is bounded for the grammar.

``maxLength`` on spans and ``maxItems`` on lists keep a small model from rambling and
keep each call's token cost predictable.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, create_model, field_validator

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


def grammar_safe(text: str) -> str:
    """``text`` without the characters llama-cpp-python 0.3.36 cannot put into a grammar literal.

    Its JSON-schema converter escapes a JSON string's backslashes once too few, so an enum value holding a
    double quote, a backslash or a control character gives a grammar llama.cpp refuses to parse, and the
    sampling that follows segfaults. Double quotes become single ones, backslashes slashes, controls spaces.
    """
    text = text.replace('"', "'").replace("\\", "/")
    return "".join(" " if ord(c) < 32 else c for c in text)


def option_answer(options: tuple[str, ...]) -> type[BaseModel]:
    """A FinalAnswer whose answer must be one of ``options`` (the grammar allows nothing else).

    The grammar lists each option in a grammar-safe spelling (``grammar_safe``); the parsed answer is the
    option as given.
    """
    originals: dict[str, str] = {}
    for option in options:
        originals.setdefault(grammar_safe(option), option)

    def as_given(value: str) -> str:
        return originals.get(value, value)

    return create_model("OptionAnswer", __doc__="Answer-Assembler output: one of the question's options.",
                        __validators__={"as_given": field_validator("answer", mode="after")(as_given)},
                        answer=(Literal[tuple(originals)], ...))
