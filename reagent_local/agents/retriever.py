"""Retriever (A_R): hybrid search for one sub-question; searches again when its evidence is rejected or challenged.

Sparse and dense searches run inside ``Index.search(mode="hybrid")`` in parallel and
are fused by reciprocal rank. Knowledge-graph triples of the entities named in the
sub-question come beside the passages, each with its provenance passage id; the
evidence for a step that builds on earlier answers says what those are and which
article each has (:meth:`RetrieverAgent.built_on`). The retriever reads its inbox: the
decomposer's plan makes it start searching for the independent steps at once; a
verifier's ``reject`` (the evidence did not yield a usable answer) makes it write a new
query; a controller's ``challenge`` makes it search afresh without the passages the
challenged answer came from. A rejected step also reads its subject's own article again,
further (the subject is the answer it builds on, or what the model said the failed answer
was about): first the sentences the first view cut.
"""

from __future__ import annotations

import re
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Collection, Iterable, Mapping, Protocol, Sequence

from ..core.channel import Message
from ..errors import LLMOutputError
from ..runtime.prompts import render_messages
from ..text import is_yes_no_value, normalize
from . import PROMPTS, Caller
from ..core.evidence import BuiltOn, Evidence, EvidencePassage, Fact, flatten, is_unknown, looks_like_instruction
from .focus import focus
from .messages import PlanMade, Recheck, Rejection
from .schemas import Reformulation

AGENT = "retriever"
_PARENTHESIS = re.compile(r"\s*\([^)]*\)\s*$")  # "Ann Lee (director)" is an article about Ann Lee


def _position(passage_id: str) -> int:
    """A passage's place in its article (ids are "Title#n")."""
    tail = passage_id.rsplit("#", 1)[-1]
    return int(tail) if tail.isdigit() else 0


class SearchIndex(Protocol):
    """What the retriever needs from an index (reagent_local.retrieval.Index fits)."""

    def search(self, query: str, k: int = 5, mode: str = "hybrid") -> list[Any]:
        ...


@dataclass(frozen=True)
class SearchRequest:
    """The retriever's decision after reading its inbox: search again for one step."""

    step: int
    query: str | None  # None: every query worth sending was tried already
    exclude: tuple[str, ...] = ()
    restart: bool = False  # a challenge: the step is solved afresh
    keep: tuple[str, ...] = ()  # passage ids to read again beside new ones
    further: tuple[str, ...] = ()  # subjects whose own article is read further (the sentences not read yet)


class RetrieverAgent:
    """Turns a query into evidence; asks the model for a better query when one failed."""

    def __init__(self, index: SearchIndex, call: Caller | None, *, top_k: int = 5, mode: str = "hybrid",
                 passage_chars: int = 700, focus_chars: int = 0, kg: Any | None = None, kg_facts: int = 6) -> None:
        self.index = index
        self.call = call
        self.top_k = top_k
        self.mode = mode
        self.passage_chars = passage_chars
        self.focus_chars = focus_chars  # 0: passages cut at passage_chars; else their sentences that matter
        self.kg = kg
        self.kg_facts = kg_facts
        self._prefetched: dict[str, Future] = {}

    def prefetch(self, queries: Sequence[str]) -> None:
        """Start searching for independent steps concurrently while the model works on the first one."""
        if len(queries) < 2:
            return
        pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="retrieve")
        for query in queries:
            self._prefetched[query] = pool.submit(self.retrieve, query)
        pool.shutdown(wait=False)

    def retrieve(self, query: str, *, exclude: Iterable[str] = (), seen: Iterable[str] = (),
                 keep: Sequence[EvidencePassage] = (), prefetched: bool = False,
                 further: Sequence[str] = (), shown: Mapping[str, str] | None = None) -> Evidence:
        """Top passages for the query, skipping excluded passage ids, plus graph facts.

        A step that searches again reads what it has not read yet: passages in ``seen`` rank after
        every other hit, and ``keep`` (passages an unsure answer came from) close the list. The
        articles of the ``further`` subjects come first, what ``shown`` (passage id -> the text
        read of it before) left out shown first.
        """
        excluded, already = set(exclude), set(seen)
        future = self._prefetched.pop(query, None) if prefetched and not excluded and not already else None
        if future is not None:
            return future.result()
        ahead = self.read_further(further, query, shown or {}, excluded)[: self.top_k - 1]
        kept = [p for p in keep if p.id not in excluded and p.id not in {a.id for a in ahead}]
        kept = kept[: max(0, self.top_k - 1 - len(ahead))]
        room = self.top_k - len(kept) - len(ahead)
        taken = {p.id for p in (*kept, *ahead)}
        hits = self.index.search(query, k=self.top_k + len(excluded) + len(already), mode=self.mode)
        hits = [h for h in hits if h.passage.id not in excluded and h.passage.id not in taken]
        hits.sort(key=lambda h: h.passage.id in already)  # stable: unread first, each group in rank order
        passages = [self._passage(hit, query) for hit in hits[:room]]
        return Evidence(query=query, passages=tuple(ahead + passages + kept), facts=self._facts(query))

    def read_further(self, subjects: Sequence[str], query: str, shown: Mapping[str, str],
                     excluded: Collection[str] = ()) -> list[EvidencePassage]:
        """The subjects' own articles, focused on ``query`` within ``passage_chars``: the first sentence (who
        or what the subject is), then the sentences the earlier views (``shown``) cut, then the others."""
        out: list[EvidencePassage] = []
        for subject in dict.fromkeys(s for s in subjects if s.strip()):
            for hit in self.own_article(subject):
                passage = hit.passage
                if passage.id in excluded or any(p.id == passage.id for p in out):
                    continue
                out.append(self._passage(hit, query, shown=shown.get(passage.id, "")))
        return out

    def built_on(self, earlier: Sequence[tuple[str, Sequence[EvidencePassage]]]) -> tuple[BuiltOn, ...]:
        """What a step builds on: each earlier answer (with the passages it was read from) that names something,
        and the title of that thing's own article ("" when the index has none); unknowns and yes/no name nothing."""
        about = []
        for answer, cited in earlier:
            if is_unknown(answer) or is_yes_no_value(answer):
                continue
            article = self.own_article(answer)
            about.append(BuiltOn(answer, frozenset(p.id for p in cited), article[0].passage.title if article else ""))
        return tuple(about)

    def own_article(self, subject: str, depth: int = 8) -> list[Any]:
        """The passages of the article titled ``subject`` ("Ann Lee" finds "Ann Lee (director)" too), in
        their order in the article; none when no article among the name's top hits bears the name."""
        name = normalize(subject)
        if not name:
            return []
        hits = self.index.search(subject, k=depth, mode="sparse")
        titled = [h for h in hits if normalize(_PARENTHESIS.sub("", h.passage.title)) == name]
        if not titled:
            return []
        title = titled[0].passage.title  # the best-ranked article of that name; its other passages follow it
        return sorted((h for h in titled if h.passage.title == title), key=lambda h: _position(h.passage.id))

    def _passage(self, hit: Any, query: str, *, shown: str | None = None) -> EvidencePassage:
        """A hit as the reader sees it; one read again (``shown``: what was read of it) is focused within
        ``passage_chars``, what was not read first."""
        if shown is not None:
            text = focus(hit.passage.text, query, self.passage_chars, shown=shown)
        elif self.focus_chars:
            text = focus(hit.passage.text, query, min(self.focus_chars, self.passage_chars))
        else:
            text = flatten(hit.passage.text, self.passage_chars)
        return EvidencePassage(hit.passage.id, hit.passage.title, text, float(hit.score),
                               suspicious=looks_like_instruction(hit.passage.text),
                               origin=getattr(hit.passage, "origin", None))

    def gather(self, question: str, found: Sequence[EvidencePassage], *, own: int = 4, limit: int = 6,
               seen: Iterable[str] = ()) -> Evidence:
        """Evidence for the whole question: its own best ``own`` passages, then passages the steps found.

        At most ``limit`` passages: the prompt that reads them is the run's longest. Passages the steps
        read (``seen``) rank after the others, so the second road reads what the chain did not.
        """
        evidence = self.retrieve(question, seen=seen)
        passages = list(evidence.passages[:own])
        seen = {p.id for p in passages}
        for passage in found:
            if passage.id not in seen and len(passages) < limit:
                seen.add(passage.id)
                passages.append(passage)
        return Evidence(evidence.query, tuple(passages), evidence.facts)

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

    def read(self, inbox: Sequence[Message]) -> list[SearchRequest]:
        """What to search next: a new query for each rejected step, a fresh search for each challenged one; a new
        plan starts the searches for its independent steps."""
        requests = []
        for message in inbox:
            body = message.body
            if isinstance(body, PlanMade):
                self.prefetch(body.independent())
            elif isinstance(body, Rejection):
                query = self.reformulate(body.question, body.query, body.why(), body.hints, tried=body.tried)
                requests.append(SearchRequest(body.step, query, body.exclude, keep=body.keep, further=body.subjects))
            elif isinstance(body, Recheck):
                requests.append(SearchRequest(body.step, body.question, body.exclude, restart=True))
        return requests

    def reformulate(self, question: str, previous: str, reason: str, hints: Sequence[str],
                    tried: Sequence[str] = ()) -> str | None:
        """A new query for the sub-question, written by the model from what failed; None if none is new.

        A query already tried for the step is never sent again: when the model repeats
        one, or writes no usable query, the question widened with the hints is tried instead.
        """
        seen = {normalize(q) for q in (*tried, previous)}
        if self.call is None:
            return None if normalize(question) in seen else question
        messages = render_messages(PROMPTS, "reformulate", question=question, previous=previous,
                                   reason=reason, hints="; ".join(hints) or "none")
        try:
            query = self.call(AGENT, messages, Reformulation, max_tokens=60).value.query.strip()
        except LLMOutputError:  # logged by the call; a new query is a help, not a need: widen the question instead
            query = ""
        for option in (query, " ".join([question, *hints])[:300]):
            if option and normalize(option) not in seen:
                return option
        return None
