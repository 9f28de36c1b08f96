"""Retriever (A_R): hybrid search for one sub-question, reformulation on local backtrack.

Sparse and dense searches run inside ``Index.search(mode="hybrid")`` in parallel and
are fused by reciprocal rank. Knowledge-graph triples of the entities named in the
sub-question come beside the passages, each with its provenance passage id.
"""

from __future__ import annotations

from typing import Any, Iterable, Protocol, Sequence

from ..prompts import render_messages
from . import PROMPTS, Caller
from .evidence import Evidence, EvidencePassage, Fact, flatten, looks_like_instruction
from .schemas import Reformulation

AGENT = "retriever"


class SearchIndex(Protocol):
    """What the retriever needs from an index (reagent_local.retrieval.Index fits)."""

    def search(self, query: str, k: int = 5, mode: str = "hybrid") -> list[Any]:
        ...


class RetrieverAgent:
    """Turns a query into evidence; asks the model for a better query when one failed."""

    def __init__(self, index: SearchIndex, call: Caller | None, *, top_k: int = 5, mode: str = "hybrid",
                 passage_chars: int = 700, kg: Any | None = None, kg_facts: int = 6) -> None:
        self.index = index
        self.call = call
        self.top_k = top_k
        self.mode = mode
        self.passage_chars = passage_chars
        self.kg = kg
        self.kg_facts = kg_facts

    def retrieve(self, query: str, *, exclude: Iterable[str] = ()) -> Evidence:
        """Top passages for the query, skipping excluded passage ids, plus graph facts."""
        excluded = set(exclude)
        hits = self.index.search(query, k=self.top_k + len(excluded), mode=self.mode)
        passages = []
        for hit in hits:
            if hit.passage.id in excluded:
                continue
            text = flatten(hit.passage.text, self.passage_chars)
            passages.append(EvidencePassage(hit.passage.id, hit.passage.title, text, float(hit.score),
                                            suspicious=looks_like_instruction(hit.passage.text)))
            if len(passages) == self.top_k:
                break
        return Evidence(query=query, passages=tuple(passages), facts=self._facts(query))

    def _facts(self, query: str) -> tuple[Fact, ...]:
        """Infobox triples of the entities the query names (none without a graph)."""
        if self.kg is None:
            return ()
        facts = []
        for t in self.kg.search(query, k=self.kg_facts):
            shown = t.display if getattr(t, "display", None) else t.value
            facts.append(Fact(t.subject, t.relation, t.value, t.passage_id,
                              f"{t.subject}: {t.relation.replace('_', ' ')} = {shown}"))
        return tuple(facts)

    def reformulate(self, question: str, previous: str, reason: str, hints: Sequence[str]) -> str:
        """A new query for the sub-question, written by the model from what failed."""
        if self.call is None:
            return question
        messages = render_messages(PROMPTS, "reformulate", question=question, previous=previous,
                                   reason=reason, hints="; ".join(hints) or "none")
        query = self.call(AGENT, messages, Reformulation, max_tokens=60).value.query.strip()
        if not query or query.lower() == previous.lower():
            # the model repeated itself: widen the query with the hints instead
            query = " ".join([question, *hints])[:300]
        return query
