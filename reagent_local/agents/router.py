"""The learned router of the ``adaptive`` baseline: how much reasoning a question needs, from evidence in hand.

Two roads answer a question: the *first*, single-step RAG (one search, one call), and the *second*, IRCoT.
The router makes two decisions, each a small logistic regression (``logistic.LogisticModel``) fitted on
train questions by ``reagent bench fit-router``:

- **stop**: after RAG answered, is its answer good enough that IRCoT's calls can be saved? Features of the
  first road alone.
- **choose**: the roads disagree; is RAG's answer the better one? Features of both roads.

A router is a JSON file: the two models with their thresholds, and where they came from (the commit, the
command, the train question files); the package ships ``routers/adaptive.json``. A missing model means
"never": never stop, never prefer the first road. (The supervisor had a router of its own between the chain
and the whole question; it lost on dev and was removed on 2026-12-07: docs/changelog.md.) The question's
features (``question_features``) are the trust score's too (trust.py).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError
from ..paths import write_json_atomic
from ..rules.shapes import comparison_direction, either_or_options, is_yes_no_question
from ..text import is_yes_no_value, normalize
from .logistic import LogisticModel

KINDS = ("adaptive",)
ROUTERS_DIR = Path(__file__).parent / "routers"


def default_path(kind: str = "adaptive") -> Path:
    """The router file the package ships for ``kind``."""
    if kind not in KINDS:
        raise ValueError(f"unknown router kind {kind!r}; one of {', '.join(KINDS)}")
    return ROUTERS_DIR / f"{kind}.json"


@dataclass(frozen=True)
class Reading:
    """One road's answer and what speaks for it, as the router sees it (all read from the run itself)."""

    answer: str
    confidence: float  # the model's token probability of the answer (0.5 when the backend reports none)
    grounded: bool  # the answer (or yes/no) is in the passages the road read
    fits: bool  # no answer-type rule objects to it
    cited: int = 0  # passages the answer cites
    unknown: bool = False  # the road gave no answer

    def features(self, prefix: str) -> dict[str, float]:
        """This road's features, named ``<prefix>_<name>``."""
        words = len(self.answer.split())
        return {f"{prefix}_confidence": self.confidence, f"{prefix}_grounded": float(self.grounded),
                f"{prefix}_fits": float(self.fits), f"{prefix}_cited": float(min(self.cited, 5)),
                f"{prefix}_words": math.log1p(words), f"{prefix}_unknown": float(self.unknown),
                f"{prefix}_yes_no": float(is_yes_no_value(self.answer))}

    def to_json(self) -> dict[str, Any]:
        return {"answer": self.answer, "confidence": round(self.confidence, 4), "grounded": self.grounded,
                "fits": self.fits, "cited": self.cited, "unknown": self.unknown}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Reading":
        return cls(str(data.get("answer", "")), float(data.get("confidence", 0.5)), bool(data.get("grounded")),
                   bool(data.get("fits")), int(data.get("cited", 0)), bool(data.get("unknown")))


def question_features(question: str) -> dict[str, float]:
    """What the question itself says: its length, and whether it asks yes/no, to choose between two options or
    to compare."""
    return {"question_words": math.log1p(len(question.split())),
            "question_yes_no": float(is_yes_no_question(question)),
            "question_either_or": float(either_or_options(question) is not None),
            "question_compares": float(comparison_direction(question) is not None)}


def overlap(a: str, b: str) -> float:
    """Token F1 between two answers (1.0 the same after normalising, 0.0 nothing shared)."""
    ta, tb = normalize(a).split(), normalize(b).split()
    if not ta or not tb:
        return 0.0
    common = sum(min(ta.count(t), tb.count(t)) for t in set(ta))
    if not common:
        return 0.0
    p, r = common / len(ta), common / len(tb)
    return 2 * p * r / (p + r)


def stop_features(question: str, first: Reading) -> dict[str, float]:
    """The stop decision's features: the question and the first road's reading."""
    return {**question_features(question), **first.features("first")}


def choice_features(question: str, first: Reading, second: Reading) -> dict[str, float]:
    """The choice's features: the question, both readings and their overlap."""
    return {**stop_features(question, first), **second.features("second"),
            "overlap": overlap(first.answer, second.answer)}


@dataclass(frozen=True)
class RouteDecision:
    """One decision as the trace and ``ask --json`` show it."""

    stage: str  # "stop" or "choose"
    probability: float | None  # None: the router has no model for this stage
    threshold: float
    taken: bool  # stop: stopped; choose: the first road's (RAG's) answer was taken
    features: dict[str, float] = field(default_factory=dict)
    contributions: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"stage": self.stage, "probability": None if self.probability is None else round(self.probability, 4),
                "threshold": self.threshold, "taken": self.taken,
                "features": {k: round(v, 4) for k, v in self.features.items()},
                "contributions": self.contributions}

    def reason(self, first: str) -> str:
        if self.probability is None:
            return f"no learned {self.stage} model: the second road runs"
        sign = ">=" if self.taken else "<"
        what = ("the second road's calls are saved" if self.taken else "the second road runs") \
            if self.stage == "stop" else \
            (f"the {first} answer is taken" if self.taken else "the other answer is taken")
        return f"learned {self.stage}: P = {self.probability:.3f} {sign} {self.threshold:.2f}, {what}"


@dataclass(frozen=True)
class Router:
    """The two learned decisions of one kind, and where they came from."""

    kind: str
    stop: LogisticModel | None = None
    choose: LogisticModel | None = None
    provenance: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""

    @property
    def fitted(self) -> bool:
        return self.stop is not None or self.choose is not None

    def decide_stop(self, features: Mapping[str, float]) -> RouteDecision:
        """Stop after the first road when the stop model is sure enough."""
        return _decide("stop", self.stop, features)

    def decide_choice(self, features: Mapping[str, float]) -> RouteDecision:
        """Take the first road's answer over the second's when the choice model is sure enough."""
        return _decide("choose", self.choose, features)

    def describe(self) -> dict[str, Any]:
        """What a record or the trace names of the router: its file, kind, thresholds, commit it was fitted at."""
        return {"kind": self.kind, "path": self.path,
                "stop_threshold": self.stop.threshold if self.stop else None,
                "choose_threshold": self.choose.threshold if self.choose else None,
                "fitted_at": self.provenance.get("commit")}

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "stop": self.stop.to_json() if self.stop else None,
                "choose": self.choose.to_json() if self.choose else None, "provenance": dict(self.provenance)}


def _decide(stage: str, model: LogisticModel | None, features: Mapping[str, float]) -> RouteDecision:
    if model is None:
        return RouteDecision(stage, None, 1.0, False, dict(features))
    probability = model.probability(features)
    return RouteDecision(stage, probability, model.threshold, probability >= model.threshold, dict(features),
                         model.contributions(features))


def load_router(path: Path | str | None = None, kind: str = "adaptive") -> Router:
    """A router file (the package's for ``kind`` when ``path`` is None); a broken file is a ConfigError."""
    where = Path(path) if path else default_path(kind)
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
        router = Router(str(data["kind"]),
                        LogisticModel.from_json(data["stop"]) if data.get("stop") else None,
                        LogisticModel.from_json(data["choose"]) if data.get("choose") else None,
                        dict(data.get("provenance") or {}), str(where))
    except FileNotFoundError:
        raise ConfigError(f"no router file at {where}",
                          hint="fit one with `reagent bench fit-router RUN... --out FILE`") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{where} is not a router file: {exc}",
                          hint="write it again with `reagent bench fit-router`") from None
    if router.kind != kind:
        raise ConfigError(f"{where} is a {router.kind!r} router, not a {kind!r} one",
                          hint=f"fit it with `reagent bench fit-router ... --kind {kind}`")
    return router


def write_router(router: Router, path: Path) -> None:
    """Write a router file atomically (a reader never sees half of it)."""
    write_json_atomic(router.to_json(), path)
