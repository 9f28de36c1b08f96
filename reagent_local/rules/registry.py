"""The rule registry: every question-shape rule is named, documented, switchable, and recorded when it fires.

A rule is a plain function registered with :func:`rule` under a name and a stage; the
stage (:mod:`.stages`: one Protocol each) says which role consults it and what it returns:

- ``plan-check`` (decomposer): why the model's plan must be written again (a ``SendBack``), or None;
- ``plan-reshape`` (decomposer): the plan reshaped (its steps), or None;
- ``check`` (verifier): why an answer's type does not fit its question, or None;
- ``doubt`` (verifier): why an answer may have been read in the wrong place (worth one retry), or None;
- ``trust`` (supervisor): whether the question's shape lets a chain be trusted at a lower bar;
- ``assemble`` (assembler): the final answer decided in code instead of asking the model, or None;
- ``constrain`` (assembler): what the model may answer (a grammar's options), or None.

Which rules run is configuration (``[pipeline] rules = ["all", "-both-yes"]``, or
``--rules`` on ``ask`` and ``bench run``); a :class:`RuleSet` holds the enabled ones for
one run, runs a stage's rules (:meth:`RuleSet.first`, :meth:`RuleSet.fold`: the one place
rules are called) and records every firing, so the answer and the benchmark records can
name the rules that decided it. Rules removed with their code (``REMOVED_RULES``) may still be
switched off by name, which changes nothing; switching one on is a ConfigError that says why it went.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterable, Sequence, TypeVar

from ..errors import ConfigError
from .stages import BY_NAME, RuleFn, Stage

# stage -> the role that consults its rules (and logs their firings)
STAGES = {name: stage.role for name, stage in BY_NAME.items()}
ALL = "all"
NONE = "none"

# Rules removed with their code. Off by default since the dev ablation at 5e32365 (docs/benchmarks.md, "Ablations"),
# where switching each off alone cost nothing or it never acted; they stayed only for ``rules = ["all"]`` and
# ablations. A spec that switches one off ("-same-x") asks for what the code always does now: the item is dropped
# (a config, REAGENT_PIPELINE_RULES or an old run's config.json that names one keeps working). Switching one on is
# a ConfigError saying so; ``all`` is every rule that remains. Old records and logs that name them still read.
_RULES_GONE = ("removed on 2026-12-07: off by default since the dev ablation at 5e32365, where switching it off "
               "cost nothing or it never acted (docs/changelog.md)")
REMOVED_RULES: dict[str, str] = {name: _RULES_GONE for name in (
    "keep-named-parts", "yes-no-answer", "number-answer", "place-or-name-answer", "option-answer", "same-x",
    "option-match", "option-snap")}

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")


@dataclass(frozen=True)
class Rule:
    """A registered question-shape rule."""

    name: str
    stage: str
    fn: RuleFn  # the stage's Protocol (stages.py)

    @property
    def summary(self) -> str:
        """The first line of the rule's docstring."""
        return (self.fn.__doc__ or "").strip().splitlines()[0] if self.fn.__doc__ else ""


RULES: dict[str, Rule] = {}


def rule(name: str, stage: str) -> Callable[[F], F]:
    """Register a function as the rule ``name`` of ``stage`` (it needs a one-line docstring, and takes the
    arguments of the stage's Protocol)."""
    if stage not in STAGES:
        raise ValueError(f"unknown rule stage {stage!r}; use one of {tuple(STAGES)}")

    def register(fn: F) -> F:
        if name in RULES:
            raise ValueError(f"a rule named {name!r} is already registered")
        if not (fn.__doc__ or "").strip():
            raise ValueError(f"rule {name!r} needs a one-line docstring")
        takes = len(inspect.signature(fn).parameters)
        if takes != BY_NAME[stage].arity:
            raise ValueError(f"rule {name!r} takes {takes} argument(s); a {stage} rule takes {BY_NAME[stage].arity} "
                             f"({BY_NAME[stage].protocol.__name__})")
        RULES[name] = Rule(name, stage, fn)
        return fn

    return register


def spec_items(spec: Iterable[str]) -> list[str]:
    """A spec's items: a comma list from the command line is split."""
    return [item.strip() for part in spec for item in str(part).split(",") if item.strip()]


def enabled_by(items: Sequence[str], universe: Iterable[str]) -> set[str]:
    """The names a spec's items switch on, applied in order starting from nothing ('all' is every name of
    ``universe``, 'none' nothing, '-name' takes one out); no items at all mean all of ``universe``."""
    enabled = set() if items else set(universe)
    for item in items:
        if item == ALL:
            enabled = set(universe)
        elif item == NONE:
            enabled = set()
        elif item.startswith("-"):
            enabled.discard(item[1:])
        else:
            enabled.add(item.lstrip("+"))
    return enabled


def _named(item: str) -> str:
    return item.lstrip("-+")


def removed_problem(name: str) -> ConfigError:
    """The error for a spec that switches the removed rule ``name`` on."""
    return ConfigError(f"the rule {name} was {REMOVED_RULES[name]}",
                       hint=f"take it out of the rules (\"-{name}\" is accepted and changes nothing); "
                            f"`reagent rules` lists the rules there are")


def live_rules(spec: Iterable[str]) -> tuple[str, ...]:
    """The spec without the items that name a removed rule (on or off: an old run's spec, read now), as written
    when it names none. A spec whose every item named one (``["-same-x"]``: nothing on) is ``("none",)``."""
    items = spec_items(spec)
    if not any(_named(i) in REMOVED_RULES for i in items):
        return tuple(spec)
    return tuple(i for i in items if _named(i) not in REMOVED_RULES) or (NONE,)


def without_removed(spec: Iterable[str]) -> tuple[str, ...]:
    """``live_rules`` of a spec given now: switching a removed rule off is dropped (what the code always does),
    switching one on is a ConfigError naming it, when it went and why."""
    on = [_named(i) for i in spec_items(spec) if _named(i) in REMOVED_RULES and not i.startswith("-")]
    if on:
        raise removed_problem(on[0])
    return live_rules(spec)


def resolve(spec: Iterable[str]) -> tuple[str, ...]:
    """Enabled rule names from a spec: 'all', 'none', names, and '-name' to take one out.

    Items are applied in order, starting from nothing: ``["all", "-both-yes"]`` is every
    rule but both-yes; ``["chain-last-step"]`` is that rule alone. An empty spec means all.
    A removed rule switched off is dropped, switched on a ConfigError (``without_removed``).
    """
    # an empty spec stays empty (all rules); one whose every item named a removed rule becomes "none"
    items = spec_items(without_removed(spec_items(spec)))
    unknown = [_named(i) for i in items if i not in (ALL, NONE) and _named(i) not in RULES]
    if unknown:
        raise ConfigError(f"unknown rule(s): {', '.join(unknown)}",
                          hint=f"known rules: {', '.join(RULES)} (or 'all', 'none', '-NAME')")
    enabled = enabled_by(items, RULES)
    return tuple(n for n in RULES if n in enabled)  # registry order


@dataclass(frozen=True)
class Firing:
    """One time a rule changed what happened."""

    rule: str
    stage: str
    step: int | None = None
    detail: str = ""


@dataclass(frozen=True)
class Fired(Generic[R]):
    """A rule's answer: the rule, and what it answered."""

    rule: str
    value: R


def _answer(found: Any) -> bool:
    """Whether a rule's return value is an answer (None, and a trust rule's False, say nothing)."""
    return found is not None and found is not False


class RuleSet:
    """The rules enabled for one run, and the firings recorded so far."""

    def __init__(self, enabled: Iterable[str] | None = None,
                 on_fire: Callable[[Firing], None] | None = None) -> None:
        self.enabled = frozenset(resolve(enabled or ()))
        self.on_fire = on_fire
        self.fired: list[Firing] = []

    def on(self, name: str) -> bool:
        """True when the rule is enabled."""
        if name not in RULES:
            raise KeyError(f"no rule named {name!r}")
        return name in self.enabled

    def active(self, stage: str | Stage[Any]) -> list[Rule]:
        """The enabled rules of a stage, in registry order."""
        name = stage if isinstance(stage, str) else stage.name
        return [r for r in RULES.values() if r.stage == name and r.name in self.enabled]

    def first(self, stage: Stage[R], *args: Any, step: int | None = None, detail: Callable[[R], str] = str,
              record: bool = True) -> Fired[R] | None:
        """The first enabled rule of the stage, in order, that answers ``args``; recorded as fired (with
        ``detail`` of its answer) unless ``record`` is False (the caller then fires it if it changes anything)."""
        for r in self.active(stage):
            found = r.fn(*args)
            if _answer(found):
                if record:
                    self.fire(r.name, step=step, detail=detail(found))
                return Fired(r.name, found)
        return None

    def fold(self, stage: Stage[R], question: str, value: R, *, detail: Callable[[R, R], str]) -> R:
        """``value`` passed through every enabled rule of the stage in turn (each reshapes what the one before
        left); each rule that answers is recorded as fired, with ``detail(before, after)``."""
        for r in self.active(stage):
            found = r.fn(question, value)
            if _answer(found):
                self.fire(r.name, detail=detail(value, found))
                value = found
        return value

    def fire(self, name: str, *, step: int | None = None, detail: str = "") -> None:
        """Record that a rule fired (once per rule, step and detail)."""
        firing = Firing(name, RULES[name].stage, step, detail)
        if firing in self.fired:
            return
        self.fired.append(firing)
        if self.on_fire is not None:
            self.on_fire(firing)

    @property
    def names_fired(self) -> list[str]:
        """Names of the rules that fired, each once, in the order they first fired."""
        return list(dict.fromkeys(f.rule for f in self.fired))


def describe_rules(names: Sequence[str] | None = None) -> list[tuple[str, str, str]]:
    """(name, stage, summary) of the given rules, or of all."""
    chosen = RULES if names is None else {n: RULES[n] for n in names}
    return [(r.name, r.stage, r.summary) for r in chosen.values()]
