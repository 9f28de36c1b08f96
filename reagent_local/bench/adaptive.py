"""``adaptive``: the learned router between single-step RAG and IRCoT, without the agents.

RAG answers first (one retrieval, one call). The router's stop model reads that answer (the
model's confidence, grounding, type fit, the question's shape) and either stops there or runs
IRCoT; when the two answers differ, the choice model says which stands (``reagent_local/agents/router.py``,
fitted by ``reagent bench fit-router``): a baseline for what ReAgent's agents add beyond choosing how much
reasoning a question gets.
"""

from __future__ import annotations

from typing import Any

from ..core.evidence import values_agree
from ..agents.router import Reading, Router, choice_features, load_router, stop_features
from .one_call import SingleStepRAG
from .ircot import IRCoT
from .methods import MethodContext, MethodResult

FIRST, SECOND = "rag", "ircot"


class Adaptive:
    """Single-step RAG, then IRCoT unless the router stops; the router chooses between differing answers."""

    name = "adaptive"

    def __init__(self, ctx: MethodContext, router: Router | None = None) -> None:
        self.router = router or load_router(kind="adaptive")
        self.rag, self.ircot = SingleStepRAG(ctx), IRCoT(ctx)

    def answer(self, question: str) -> MethodResult:
        """RAG; the stop decision; IRCoT and the choice unless stopped. Calls and tokens are both methods'."""
        rag = self.rag.answer(question)
        first = Reading.from_json(rag.reading or {"unknown": True})
        stop = self.router.decide_stop(stop_features(question, first))
        route: dict[str, Any] = {"router": self.router.describe(), FIRST: first.answer,
                                 "stop": {**stop.to_json(), "reason": stop.reason(FIRST)}}
        if stop.taken and not first.unknown:
            return _routed(rag, route, FIRST)
        ircot = self.ircot.answer(question)
        second = Reading.from_json(ircot.reading or {"unknown": True})
        route[SECOND] = second.answer
        if second.unknown or (not first.unknown and values_agree(first.answer, second.answer)):
            winner = FIRST if second.unknown and not first.unknown else SECOND
        elif first.unknown:
            winner = SECOND
        else:
            features = {**choice_features(question, first, second),
                        "second_steps": float((ircot.reading or {}).get("steps", 0))}
            choice = self.router.decide_choice(features)
            route["choose"] = {**choice.to_json(), "reason": choice.reason(FIRST)}
            winner = FIRST if choice.taken else SECOND
        chosen = rag if winner == FIRST else ircot
        chosen.llm_calls = rag.llm_calls + ircot.llm_calls
        chosen.prompt_tokens = rag.prompt_tokens + ircot.prompt_tokens
        chosen.completion_tokens = rag.completion_tokens + ircot.completion_tokens
        chosen.error = chosen.error if chosen.prediction else (rag.error or ircot.error)
        return _routed(chosen, route, winner)


def _routed(result: MethodResult, route: dict[str, Any], winner: str) -> MethodResult:
    result.route = {**route, "winner": winner}
    return result
