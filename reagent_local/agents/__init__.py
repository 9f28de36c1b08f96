"""The six ReAgent roles. Each module holds one role; prompts live in ``prompts/``.

Agents never call each other: the pipeline routes their messages. LLM calls go
through a ``Caller`` the pipeline provides, which accounts for budget and logs the
rendered prompt and raw output of every call.
"""

from __future__ import annotations

from typing import Protocol, Sequence, TypeVar

from pydantic import BaseModel

from ..runtime.llm import JsonResult, Message

T = TypeVar("T", bound=BaseModel)


class Caller(Protocol):
    """An accounted LLM call on behalf of one agent."""

    def __call__(self, agent: str, messages: Sequence[Message], schema: type[T], *, max_tokens: int) -> JsonResult[T]:
        ...


PROMPTS = "reagent_local.agents"
