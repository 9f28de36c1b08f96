"""Fakes for testing code built on reagent-local, without a model.

``ScriptedLLM`` has the same ``generate_json`` interface as ``LlamaModel``. It answers
from rules (first matching rule wins) or, failing that, from a queue, records every
request, and validates what it returns exactly as the real wrapper does, so a script
that returns an invalid object fails the same way a model would::

    llm = ScriptedLLM(rules=[
        Rule(schema="Decomposition", contains="Counterparts",
             respond={"subquestions": ["Which band released Counterparts?"]}),
    ])
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypeVar

from pydantic import BaseModel

from .errors import LLMOutputError
from .runtime.llm import JsonResult, LLMCall, Message, parse_json_output

T = TypeVar("T", bound=BaseModel)
Response = dict[str, Any] | BaseModel | str | Callable[[Sequence[Message], type[BaseModel]], Any]
_NUMBERED_PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.M)


def answer_citing(answer: str, subject: str = "", relation: str = "other") -> Callable[[Sequence[Message], type[BaseModel]], dict]:
    """A ``SubAnswer`` response that cites the passages of the prompt holding ``answer``, as a careful reader would
    (a fixed passage number would cite whatever the retriever happens to rank there)."""
    def respond(messages: Sequence[Message], schema: type[BaseModel]) -> dict:
        content = messages[-1].get("content", "") if messages else ""
        numbers = [int(m.group(1)) for m in _NUMBERED_PASSAGE.finditer(content) if answer.lower() in m.group(2).lower()]
        return {"answer": answer, "passages": numbers[:3], "subject": subject, "relation": relation}
    return respond


@dataclass
class Rule:
    """Answer requests whose schema name matches and whose last message contains a text."""

    respond: Response
    schema: str | None = None  # pydantic model name, e.g. "SubAnswer"
    contains: str | None = None  # substring of the last message's content
    times: int | None = None  # how many times the rule may fire (None: always)
    confidence: float | None = None  # the probability every generated character gets (None: none reported)
    used: int = 0

    def matches(self, messages: Sequence[Message], schema: type[BaseModel]) -> bool:
        """True when this rule should answer the request."""
        if self.times is not None and self.used >= self.times:
            return False
        if self.schema is not None and self.schema != schema.__name__:
            return False
        if self.contains is not None and self.contains not in (messages[-1].get("content", "") if messages else ""):
            return False
        return True


@dataclass
class ScriptedRequest:
    """One request the fake received."""

    messages: list[Message]
    schema: str
    max_tokens: int | None


@dataclass
class ScriptedLLM:
    """A deterministic stand-in for a model: rules first, then a queue of responses."""

    responses: list[Response] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)
    model_id: str = "scripted"
    requests: list[ScriptedRequest] = field(default_factory=list)

    def queue(self, *responses: Response) -> None:
        """Append responses to the queue."""
        self.responses.extend(responses)

    def add_rule(self, respond: Response, *, schema: str | None = None, contains: str | None = None,
                 times: int | None = None, confidence: float | None = None) -> Rule:
        """Add a rule and return it; ``confidence`` scripts the token probabilities the call reports."""
        rule = Rule(respond=respond, schema=schema, contains=contains, times=times, confidence=confidence)
        self.rules.append(rule)
        return rule

    def _pick(self, messages: Sequence[Message], schema: type[BaseModel]) -> tuple[Response, float | None]:
        for rule in self.rules:
            if rule.matches(messages, schema):
                rule.used += 1
                return rule.respond, rule.confidence
        if self.responses:
            return self.responses.pop(0), None
        last = messages[-1].get("content", "")[:300] if messages else ""
        raise LLMOutputError(f"ScriptedLLM has no response for a {schema.__name__} request", raw=last,
                             hint="add a rule or queue a response for this request")

    def generate_json(
        self,
        messages: Sequence[Message],
        schema: type[T],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        seed: int | None = None,
    ) -> JsonResult[T]:
        """Return the scripted object for this request, validated against ``schema``."""
        self.requests.append(ScriptedRequest([dict(m) for m in messages], schema.__name__, max_tokens))
        response, confidence = self._pick(messages, schema)
        if callable(response) and not isinstance(response, BaseModel):
            response = response(messages, schema)
        if isinstance(response, BaseModel):
            raw = response.model_dump_json()
        elif isinstance(response, str):
            raw = response
        else:
            raw = json.dumps(response)
        prompt_tokens = sum(len(m.get("content", "").split()) for m in messages)
        call = LLMCall(
            model_id=self.model_id,
            messages=tuple(dict(m) for m in messages),
            raw=raw,
            prompt_tokens=prompt_tokens,
            completion_tokens=len(raw.split()),
            seconds=0.0,
            finish_reason="stop",
            schema_name=schema.__name__,
            token_logprobs=tuple((ch, math.log(confidence)) for ch in raw) if confidence else (),
        )
        return JsonResult(value=parse_json_output(raw, schema, "stop"), call=call)

    def requests_for(self, schema_name: str) -> list[ScriptedRequest]:
        """The recorded requests for one schema."""
        return [r for r in self.requests if r.schema == schema_name]


@dataclass
class InMemoryIndex:
    """A tiny keyword index with ``Index.search``'s interface, for pipeline tests.

    Scores are word-overlap counts (title words count double); ties keep insertion
    order. It stands in for the real FAISS + BM25 index only in unit tests.
    """

    passages: list[Any] = field(default_factory=list)  # reagent_local.retrieval.Passage
    queries: list[str] = field(default_factory=list)
    path: str = "in-memory"

    def add(self, title: str, text: str, n: int = 0) -> Any:
        """Add a passage with id f"{title}#{n}" and return it."""
        from .retrieval.passages import Passage

        passage = Passage(id=f"{title}#{n}", title=title, text=text)
        self.passages.append(passage)
        return passage

    def search(self, query: str, k: int = 5, mode: str = "hybrid") -> list[Any]:
        """Passages ranked by word overlap with the query."""
        from .retrieval.index import Hit

        self.queries.append(query)
        words = {w.strip("?,.!'\"").lower() for w in query.split()} - {"the", "of", "a", "is", "what", "who", "which", "in"}
        scored = []
        for order, p in enumerate(self.passages):
            text_words = {w.strip("?,.!'\"()").lower() for w in p.text.split()}
            title_words = {w.strip("?,.!'\"()").lower() for w in p.title.split()}
            score = len(words & text_words) + 2 * len(words & title_words)
            if score:
                scored.append((-score, order, p))
        scored.sort(key=lambda t: (t[0], t[1]))
        return [Hit(passage=p, score=float(-s), rank=i + 1) for i, (s, _, p) in enumerate(scored[:k])]

    def get(self, passage_id: str) -> Any:
        return next((p for p in self.passages if p.id == passage_id), None)


@dataclass
class InMemoryKG:
    """Knowledge-graph triples in a list, with ``KnowledgeGraph.search``'s interface."""

    triples: list[Any] = field(default_factory=list)  # reagent_local.kg.store.Triple

    def add(self, subject: str, relation: str, value: str) -> Any:
        """Add a triple whose provenance is the subject's first passage."""
        from .kg.triples import Triple

        triple = Triple(subject=subject, relation=relation, value=value, value_number=None, unit=None,
                        value_date=None, raw_key=relation, passage_id=f"{subject}#0")
        self.triples.append(triple)
        return triple

    def search(self, question: str, k: int = 10) -> list[Any]:
        """Triples whose subject is named in the question."""
        low = question.lower()
        return [t for t in self.triples if t.subject.lower() in low][:k]


def _pdf_string(text: str) -> str:
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def text_pdf(pages: Sequence[str], *, title: str | None = None) -> bytes:
    """A small valid PDF whose pages show these texts (Helvetica, a line per line); an empty page has no text.

    Written by hand, so tests and scripts need no PDF writer: a page of "" draws a line
    and nothing else, as a scanned page looks to a text extractor.
    """
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", "", "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for text in pages:
        if text.strip():
            body = "\n".join(f"{_pdf_string(line)} Tj T*" for line in text.split("\n"))
            stream = f"BT /F1 11 Tf 14 TL 72 740 Td\n{body}\nET"
        else:
            stream = "0 0 m 200 200 l S"
        objects.append(f"<< /Length {len(stream.encode('latin-1'))} >>\nstream\n{stream}\nendstream")
        kids.append(len(objects) + 1)
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
                       f"/Contents {len(objects)} 0 R >>")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>"
    info = None
    if title is not None:
        objects.append(f"<< /Title {_pdf_string(title)} >>")
        info = len(objects)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
    trailer = f"<< /Size {len(objects) + 1} /Root 1 0 R" + (f" /Info {info} 0 R" if info else "") + " >>"
    out += f"trailer\n{trailer}\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)
