"""A model wrapper that remembers one question's calls, so a second run of it replays them.

The benchmark answers a question again with backtracking off after a run where backtracking
fired (``reagent_method``). Both runs send the same requests until their paths part; a
request's output depends only on the request (the prefill is aligned, decoding greedy, and
retrieval deterministic), so the second run takes those outputs from memory and calls the
model only after the paths part. A request is the model, the exact messages, the output
schema, ``max_tokens``, ``temperature`` and ``seed``. A model failure (``LLMOutputError``)
is remembered and raised again, as the model would.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence, TypeVar

from pydantic import BaseModel

from ..errors import LLMOutputError
from ..runtime.llm import LLM, JsonResult, Message

T = TypeVar("T", bound=BaseModel)
Key = tuple[str, str, str, Any, Any, Any]


def request_key(model_id: str, messages: Sequence[Message], schema: type[BaseModel], max_tokens: int | None,
                temperature: float | None, seed: int | None) -> Key:
    """Everything that decides a call's output, as a hashable key."""
    return (model_id, json.dumps(list(messages), sort_keys=True, ensure_ascii=False),
            json.dumps(schema.model_json_schema(), sort_keys=True), max_tokens, temperature, seed)


class CallMemo:
    """The outputs (or failures) of one question's model calls, by request."""

    def __init__(self) -> None:
        self._outcomes: dict[Key, JsonResult | LLMOutputError] = {}

    def __len__(self) -> int:
        return len(self._outcomes)

    def __contains__(self, key: Key) -> bool:
        return key in self._outcomes

    def get(self, key: Key) -> JsonResult | LLMOutputError:
        """The remembered outcome of a request."""
        return self._outcomes[key]

    def put(self, key: Key, outcome: JsonResult | LLMOutputError) -> None:
        """Remember a request's first outcome (a repeated request gives the same one)."""
        self._outcomes.setdefault(key, outcome)

    def clear(self) -> None:
        """Forget everything (before the next question)."""
        self._outcomes.clear()


@dataclass
class ReplayTally:
    """What a replaying run cost: calls served from memory, and the calls, tokens and seconds it made itself."""

    replayed: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_seconds: float = 0.0


class MemoLLM:
    """Wraps a model: every call's outcome goes into ``memo``; with ``replay``, a remembered request is not sent."""

    def __init__(self, llm: LLM, memo: CallMemo, *, replay: bool = False) -> None:
        self.llm = llm
        self.memo = memo
        self.replay = replay
        self.tally = ReplayTally()

    @property
    def model_id(self) -> str:
        """The wrapped model's id."""
        return self.llm.model_id

    def generate_json(self, messages: Sequence[Message], schema: type[T], *, max_tokens: int | None = None,
                      temperature: float | None = None, seed: int | None = None) -> JsonResult[T]:
        """The remembered outcome when replaying and known; otherwise the model's, remembered."""
        key = request_key(self.model_id, messages, schema, max_tokens, temperature, seed)
        if self.replay and key in self.memo:
            self.tally.replayed += 1
            outcome = self.memo.get(key)
            if isinstance(outcome, LLMOutputError):
                raise outcome
            return outcome  # type: ignore[return-value]
        if self.replay:
            self.tally.calls += 1
        try:
            result = self.llm.generate_json(messages, schema, max_tokens=max_tokens, temperature=temperature,
                                            seed=seed)
        except LLMOutputError as exc:
            self.memo.put(key, exc)
            raise
        self.memo.put(key, result)
        if self.replay:
            self.tally.prompt_tokens += result.call.prompt_tokens
            self.tally.completion_tokens += result.call.completion_tokens
            self.tally.llm_seconds += result.call.seconds
        return result
