"""What `ask` returns: the answer, its sub-questions, the passages and the run's cost."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ..core.evidence import Origin
from ..retrieval.passages import source_index


# Separators a model sometimes leaves around a short answer (": Paris", "Paris ;", "- Paris"). Always
# stripped: ``: ; , | • ·``; stripped only when a space follows (leading) or precedes (trailing): ``. - – — *``,
# so that ".NET", "-5", "U.S." and "Inc." are left as they are.
_LEADING = re.compile(r"^(?:[\s:;,|\u2022\u00b7]+|[.\-\u2013\u2014*]+(?=\s))+")
_TRAILING = re.compile(r"(?:[\s:;,|\u2022\u00b7]+|(?<=\s)[\-\u2013\u2014*]+)+$")


def tidy_answer(text: str) -> str:
    """A final answer without the stray separators around it; "unknown" when nothing else is left."""
    tidied = text
    while True:  # the two kinds may alternate (": - Paris")
        stripped = _TRAILING.sub("", _LEADING.sub("", tidied))
        if stripped == tidied:
            break
        tidied = stripped
    return tidied or "unknown"


def snippet(text: str, limit: int = 160) -> str:
    """The start of a passage, cut at a word, for a line of output."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


@dataclass(frozen=True)
class PassageRef:
    """A passage cited as evidence; ``origin``: its file, heading and page or lines (folders of documents)."""

    id: str
    title: str
    text: str = ""
    origin: Origin | None = None

    @property
    def index(self) -> str | None:
        """The index it came from when several were searched (its id starts ``"name|"``), else None."""
        return source_index(self.id)

    def to_dict(self) -> dict[str, Any]:
        """Id and title, the index when several were searched, and the origin when the passage has one (`ask --json`)."""
        out: dict[str, Any] = {"id": self.id, "title": self.title}
        if self.index is not None:
            out["index"] = self.index
        if self.origin is not None:
            out["origin"] = self.origin.to_dict()
        return out

    def source(self) -> str | None:
        """Where it is, in one line: ``notes: guide.md § Setup, lines 2-5``; None for a passage of one wiki index."""
        where = self.origin.label() if self.origin is not None else None
        if self.index is not None:
            return f"{self.index}: {where or self.title}"
        return where


@dataclass(frozen=True)
class SubQuestionResult:
    """One answered sub-question."""

    question: str
    answer: str
    passages: tuple[PassageRef, ...]
    uncertain: bool = False
    facts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Answer:
    """The final answer with everything needed to judge it."""

    question: str
    answer: str
    run_id: str
    subquestions: tuple[SubQuestionResult, ...]
    passages: tuple[PassageRef, ...]
    backtracks: dict[str, int]
    llm_calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    llm_seconds: float
    uncertain: bool
    uncertain_reason: str = ""
    challenges: int = 0
    judge_calls: int = 0
    rules_fired: tuple[str, ...] = ()  # question-shape rules that changed what happened (reagent_local.rules)
    signals: tuple[str, ...] = ()  # conflict signals that fired (two-roads, low-confidence, ...)
    # the answer held before the first global rollback; None when backtracking fired before any answer existed
    answer_before_backtracking: str | None = None
    # the two roads when they disagreed: {"chain", "whole", "winner", "judged", "reason"}; None otherwise
    roads: dict[str, Any] | None = None
    # the supervisor's trust score (agents.trust.Trust.to_json()): probability, threshold, label, grounded, ...
    trust: dict[str, Any] | None = None
    # no passage supports the answer: the passages nearest the question, shown instead ("not found in the index")
    closest: tuple[PassageRef, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (the `reagent ask --json` output)."""
        data = asdict(self)
        data["seconds"] = round(self.seconds, 3)
        data["llm_seconds"] = round(self.llm_seconds, 3)
        for sub, result in zip(data["subquestions"], self.subquestions):
            sub["passages"] = [p.to_dict() for p in result.passages]
        data["passages"] = [p.to_dict() for p in self.passages]
        data["closest"] = [{**p.to_dict(), "text": snippet(p.text)} for p in self.closest]
        data["not_found"] = self.not_found
        data["trust_line"] = self.trust_line()
        data["road"] = self.road_line()  # said once here, so that the serve page shows what `ask` prints
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], texts: dict[str, str] | None = None) -> "Answer":
        """The Answer whose ``to_dict()`` is ``data`` (a served answer); ``texts`` gives passages' text by id."""
        texts = {**{p["id"]: p.get("text", "") for p in data.get("closest") or ()}, **(texts or {})}

        def refs(items: Any) -> tuple[PassageRef, ...]:
            return tuple(PassageRef(p["id"], p["title"], texts.get(p["id"], ""), Origin.from_dict(p.get("origin")))
                         for p in items or ())

        values: dict[str, Any] = {}
        for spec in fields(cls):
            if spec.name not in data:
                continue
            value = data[spec.name]
            if spec.name == "subquestions":
                value = tuple(SubQuestionResult(**{**sub, "passages": refs(sub.get("passages")),
                                                   "facts": tuple(sub.get("facts") or ())}) for sub in value)
            elif spec.name in ("passages", "closest"):
                value = refs(value)
            elif isinstance(value, list):
                value = tuple(value)
            values[spec.name] = value
        return cls(**values)

    def sources(self) -> list[str]:
        """One line per cited passage that says where it is (its index when several, file, heading, page or
        lines); [] for passages of one index without origins."""
        return [line for line in (p.source() for p in self.passages) if line is not None]

    @property
    def not_found(self) -> bool:
        """No passage the run cites supports the answer (or there is none): the index does not seem to hold it."""
        return self.trust is not None and not self.trust.get("grounded", True)

    def trust_line(self) -> str:
        """The trust score and what it means, in one line ("" for an answer without one); "not found in the index"
        first when no passage supports the answer."""
        if self.trust is None:
            return ""
        line = str(self.trust.get("line", ""))
        return f"not found in the index: no passage it cites contains it; {line}" if self.not_found else line

    def road_line(self) -> str:
        """Which road's answer stands and why: the supervisor's verdict between two disagreeing roads ("" when the
        roads did not disagree)."""
        roads = self.roads or {}
        winner, why = roads.get("winner"), roads.get("reason", "")
        if not winner:
            return ""
        return f"road: {winner}" + (f" ({why})" if why else "")

    def account_line(self) -> str:
        """One line: calls, tokens, seconds, backtracks, run id."""
        return (f"{self.llm_calls} LLM calls, {self.prompt_tokens}+{self.completion_tokens} tokens, "
                f"{self.seconds:.1f} s, backtracks: {self.backtracks.get('local', 0)} local / "
                f"{self.backtracks.get('global', 0)} global, run {self.run_id}")
