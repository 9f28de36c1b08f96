"""The supervisor's trust score: how likely the run's answer is right, from what the run knows at its end.

Every answer gets a probability that it is right (exact match), from a small logistic model
(``logistic.LogisticModel``) fitted on train questions by ``reagent bench fit-trust`` and shipped as
data (``routers/trust.json``). Its features are the answer itself (token confidence, grounded in the
passages it cites, type fit, cited count, unknown), the chain's shape (steps, answered, uncertain
steps), what the run caught (backtracking fired, whether it changed the answer, the two roads
disagreed, signals fired, rules fired) and its cost in calls.

From the probability come three marks: **trusted** (at least the threshold chosen on train),
**likely wrong** (backtracking caught a problem and the answer is still more likely wrong than
right: caught and not repaired), else **not sure**; and, apart from the score, **not found**:
no passage the answer cites contains it (the index does not hold it).

Features a run records are all of these; records of older runs lack a few (the token confidence and
the chain's shape): ``record_facts`` reads what they have, and a model fitted on them uses only the
features every example carries (bench/fit_trust.py). A model fitted while a signal the loop no longer
raises could fire (``RETIRED_SIGNALS``) still reads its feature: it is 0 for every run now.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..errors import ConfigError
from ..paths import write_json_atomic
from ..text import is_yes_no_value
from ..core.evidence import is_unknown, values_agree
from .logistic import LogisticModel
from .router import ROUTERS_DIR, question_features

TRUST_PATH = ROUTERS_DIR / "trust.json"
LIKELY_WRONG = 0.5  # a caught answer below this is more likely wrong than right
# the conflict signals whose firing is a feature of its own (any other counts in ``signals_fired`` only)
SIGNALS = ("low-confidence", "two-roads", "off-subject")
# signals whose code was removed: plan-failed went with replanning (the shipped model, fitted before, gave it weight 0),
# the assembler's three escalations with them (never a feature of their own: they count in ``signals_fired`` only),
# check-failed with the verifier's retry of a failed check (silenced by default long before: a run since never fired it)
RETIRED_SIGNALS = ("plan-failed", "value-conflict", "broken-bridge", "unfounded-step", "check-failed")


def signal_feature(signal: str) -> str:
    """The trust feature of a conflict signal: ``low-confidence`` -> ``signal_low_confidence``."""
    return f"signal_{signal.replace('-', '_')}"


@dataclass(frozen=True)
class TrustFacts:
    """What the run knows of its answer at its end; None marks what an old record does not say."""

    question: str
    answer: str
    grounded: bool  # a passage the answer cites contains it (or it is yes/no)
    fits: bool  # no answer-type rule objects to it
    cited: int
    unknown: bool
    uncertain: bool  # the run marked the answer uncertain
    local_backtracks: int = 0
    global_backtracks: int = 0
    changed: bool = False  # the answer differs from the one held before the first rollback
    roads_disagreed: bool = False  # the whole question's answer differed from the chain's
    whole_won: bool = False  # ... and it stands
    signals: tuple[str, ...] = ()
    rules: int = 0  # question-shape rules that fired
    calls: int = 0
    confidence: float | None = None  # the answer's token probability (0.5 when the backend reports none)
    steps: int | None = None
    answered: int | None = None
    uncertain_steps: int | None = None

    @property
    def caught(self) -> bool:
        """Backtracking fired: the run found something wrong on the way."""
        return bool(self.local_backtracks or self.global_backtracks)

    def features(self) -> dict[str, float]:
        """The named features the trust model reads (the ones an old record cannot give are left out)."""
        out = {**question_features(self.question),
               "answer_unknown": float(self.unknown), "answer_words": math.log1p(len(self.answer.split())),
               "answer_yes_no": float(is_yes_no_value(self.answer)), "answer_grounded": float(self.grounded),
               "answer_fits": float(self.fits), "answer_cited": float(min(self.cited, 5)),
               "run_uncertain": float(self.uncertain), "backtracked": float(self.caught),
               "local_backtracks": float(min(self.local_backtracks, 4)),
               "global_backtracks": float(min(self.global_backtracks, 4)),
               "backtracking_changed": float(self.changed), "roads_disagreed": float(self.roads_disagreed),
               "whole_won": float(self.whole_won), "signals_fired": float(min(len(set(self.signals)), 5)),
               "rules_fired": float(min(self.rules, 5)), "calls": math.log1p(self.calls)}
        out.update({signal_feature(name): float(name in self.signals) for name in SIGNALS})
        if self.confidence is not None:
            out["answer_confidence"] = float(self.confidence)
        if self.steps is not None:
            out["chain_steps"] = float(min(self.steps, 5))
            out["chain_answered_share"] = (self.answered or 0) / max(1, self.steps)
            out["chain_uncertain"] = float(min(self.uncertain_steps or 0, 4))
        return out


@dataclass(frozen=True)
class Trust:
    """The trust score of one answer and the marks read from it (what ``ask``, the trace and serve show)."""

    probability: float | None  # None: no trust model
    threshold: float
    grounded: bool
    caught: bool
    features: Mapping[str, float] = field(default_factory=dict)
    contributions: Mapping[str, float] = field(default_factory=dict)

    @property
    def trusted(self) -> bool:
        return self.probability is not None and self.probability >= self.threshold

    @property
    def doubt(self) -> bool:
        """Caught and not repaired: backtracking fired and the answer is still more likely wrong than right."""
        return self.caught and self.probability is not None and self.probability < min(LIKELY_WRONG, self.threshold)

    @property
    def label(self) -> str:
        """``trusted``, ``likely wrong``, ``not sure`` (or ``unscored`` without a model)."""
        if self.probability is None:
            return "unscored"
        return "trusted" if self.trusted else "likely wrong" if self.doubt else "not sure"

    def line(self) -> str:
        """The score and what it means, in one line."""
        if self.probability is None:
            return "trust: no trust model"
        meaning = {"trusted": f"right about {self.probability:.0%} of the time on train questions scored like it",
                   "likely wrong": "backtracking caught a problem it did not repair",
                   "not sure": f"below the {self.threshold:.2f} a trusted answer needs"}[self.label]
        return f"trust: {self.probability:.2f}, {self.label} ({meaning})"

    def to_json(self) -> dict[str, Any]:
        return {"probability": None if self.probability is None else round(self.probability, 4),
                "threshold": self.threshold, "trusted": self.trusted, "doubt": self.doubt, "label": self.label,
                "grounded": self.grounded, "caught": self.caught, "line": self.line(),
                "features": {k: round(v, 4) for k, v in self.features.items()},
                "contributions": dict(self.contributions)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Trust":
        p = data.get("probability")
        return cls(None if p is None else float(p), float(data.get("threshold", 1.0)), bool(data.get("grounded")),
                   bool(data.get("caught")), dict(data.get("features") or {}), dict(data.get("contributions") or {}))


@dataclass(frozen=True)
class TrustModel:
    """The fitted logistic model (its threshold is the trusted mark's) and where it came from."""

    model: LogisticModel
    provenance: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""

    def score(self, facts: TrustFacts) -> Trust:
        """The trust score of an answer; a feature the model reads that the facts lack is an error (but for a
        retired signal's, which no run raises any more: 0)."""
        values = facts.features()  # all of them, not only the model's: a refit on fresh records reads them
        retired = {signal_feature(name) for name in RETIRED_SIGNALS}
        values.update({name: 0.0 for name in self.model.features if name in retired and name not in values})
        p = self.model.probability(values)
        return Trust(p, self.model.threshold, facts.grounded, facts.caught, values, self.model.contributions(values))

    def to_json(self) -> dict[str, Any]:
        return {"kind": "trust", "model": self.model.to_json(), "provenance": dict(self.provenance)}


def unscored(facts: TrustFacts) -> Trust:
    """The marks without a model: only grounding and whether backtracking fired are known."""
    return Trust(None, 1.0, facts.grounded, facts.caught, facts.features())


def load_trust_model(path: Path | str | None = None) -> TrustModel:
    """A trust model file (the package's when ``path`` is None); a broken or missing file is a ConfigError."""
    where = Path(path) if path else TRUST_PATH
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
        if data.get("kind") != "trust":
            raise ValueError(f"its kind is {data.get('kind')!r}, not 'trust'")
        return TrustModel(LogisticModel.from_json(data["model"]), dict(data.get("provenance") or {}), str(where))
    except FileNotFoundError:
        raise ConfigError(f"no trust model at {where}",
                          hint="fit one with `reagent bench fit-trust RUN... --out FILE`, or leave "
                               "pipeline.trust_file unset for the package's") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{where} is not a trust model file: {exc}",
                          hint="write it again with `reagent bench fit-trust`") from None


def write_trust_model(model: TrustModel, path: Path) -> None:
    """Write a trust model file atomically."""
    write_json_atomic(model.to_json(), path)


def record_facts(record: Mapping[str, Any], grounded: bool, fits: bool) -> TrustFacts:
    """The facts a benchmark record gives (``grounded`` and ``fits`` are worked out by the caller, from the
    cited passages' text and the question's rules); the token confidence and chain shape are not in it."""
    prediction = str(record.get("prediction") or "")
    backtracks = record.get("backtracks") or {}
    before = record.get("answer_before_backtracking")
    roads = record.get("roads") or None
    return TrustFacts(
        question=str(record["question"]), answer=prediction, grounded=grounded, fits=fits,
        cited=len(record.get("cited") or ()), unknown=not prediction or is_unknown(prediction),
        uncertain=bool(record.get("uncertain")), local_backtracks=int(backtracks.get("local", 0)),
        global_backtracks=int(backtracks.get("global", 0)),
        changed=before is not None and not values_agree(str(before), prediction),
        roads_disagreed=roads is not None, whole_won=bool(roads and roads.get("winner") == "whole"),
        signals=tuple(record.get("signals") or ()), rules=len(record.get("rules_fired") or ()),
        calls=int(record.get("llm_calls") or 0))
