"""What ``bench ablate --what SPEC`` switches off, and which baseline questions that can change.

- ``rule:NAME``: the baseline method without a question-shape rule (``reagent-both-no-NAME``);
  ``rule:each``: one such ablation per rule the baseline used (a rule removed with its code is refused,
  with when and why it went);
- ``setting:SECTION.FIELD=VALUE``: the baseline's configuration with one setting changed;
- ``method:NAME``: another method (``reagent-local`` = global backtracking off, ``reagent-global``
  = local off), with the baseline method's rules.

The questions an ablation can change come from ``acted.py``; a setting or method not in it
changes every question. ``signal:NAME`` is refused with the reason: no signal is left that
``pipeline.signals_off`` switches (check-failed, the last, was removed; the others have settings).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..config import BACKTRACKING, Config, signal_problem
from ..errors import BenchRunError
from .acted import SETTINGS, Marks, backtracking_marks, marks, switched_off
from .registry import ABLATION, ablation, check_methods, removed_rule

KINDS = ("rule", "setting", "method")
SIGNAL = "signal"  # signal:NAME switched a signal without a setting of its own; none is left
EACH = "each"  # rule:each: one ablation per rule the baseline used
# settings an ablation may not change: where files live, the machine's threads, the model (another model is
# another baseline), and what the other spec kinds say more exactly (a method name sets pipeline.backtracking)
REFUSED = {"llm.model": "another model is another baseline: run one with --model",
           "llm.n_threads": "threads are measured by `reagent bench noise`, not ablated", "pipeline.backtracking": "use method:reagent-MODE",
           "pipeline.rules": "use rule:NAME, one rule at a time",
           "pipeline.signals_off": "no signal is left that it switches: each has a setting of its own"}


@dataclass(frozen=True)
class Spec:
    """One ``--what`` as given: its kind, the rule, setting or method it names, and a value for a setting."""

    text: str
    kind: str
    name: str
    value: str | None = None

    @property
    def slug(self) -> str:
        """The folder name of this ablation's reruns."""
        return re.sub(r"[^\w.-]+", "-", f"{self.kind}-{self.name}" + (f"-{self.value}" if self.value is not None
                                                                      else "")).strip("-")


def parse_spec(text: str) -> Spec:
    """``rule:NAME``, ``setting:SECTION.FIELD=VALUE`` or ``method:NAME``; anything else is a BenchRunError."""
    kind, sep, rest = text.strip().partition(":")
    rest = rest.strip()
    if sep and kind == SIGNAL and rest:
        problem = signal_problem(rest)
        raise BenchRunError(f"--what {text.strip()!r}: {problem[0]}", hint=problem[1])
    if not sep or kind not in KINDS or not rest:
        raise BenchRunError(f"cannot read --what {text!r}",
                            hint="write rule:NAME, setting:SECTION.FIELD=VALUE or method:NAME "
                                 "(e.g. setting:pipeline.two_roads=false)")
    if kind != "setting":
        return Spec(text.strip(), kind, rest)
    name, eq, value = rest.partition("=")
    name, value = name.strip(), value.strip()
    if not eq or "." not in name or not value:
        raise BenchRunError(f"cannot read --what {text!r}: a setting is SECTION.FIELD=VALUE",
                            hint="e.g. setting:pipeline.min_confidence=0 or setting:retrieval.focus_chars=0")
    if name in REFUSED or name.startswith("paths."):
        raise BenchRunError(f"--what {text!r}: {name} cannot be ablated",
                            hint=REFUSED.get(name, "paths say where files live, not what an answer is"))
    return Spec(text.strip(), kind, name, value)


@dataclass(frozen=True)
class Ablation:
    """A spec resolved against the baseline: the method the reruns run, the settings changed, and the
    questions it can change (``marks``; None: every question) with why."""

    spec: Spec
    method: str
    overrides: dict[str, str] = field(default_factory=dict)
    marks: Marks | None = None
    why: str = ""


def _rules_off(method: str) -> tuple[str, tuple[str, ...]]:
    """('reagent-both', ('both-yes',)) for 'reagent-both-no-both-yes'; (method, ()) for a method without rules off."""
    return ablation(method) or (method, ())


def resolve_spec(spec: Spec, base_method: str, config: Config, ablated: Config | None = None) -> Ablation:
    """The ablation ``spec`` asks for against ``base_method`` run with ``config`` (``ablated``: the configuration
    with a setting spec's override applied)."""
    if spec.kind == "rule":
        return _rule(spec, base_method, config)
    if spec.kind == "method":
        return _method(spec, base_method)
    assert ablated is not None, "a setting spec needs the ablated configuration"
    return _setting(spec, base_method, config, ablated)


def _rule(spec: Spec, base_method: str, config: Config) -> Ablation:
    from ..rules import REMOVED_RULES, RULES, resolve

    if spec.name in REMOVED_RULES:
        raise removed_rule(spec.name, f"--what {spec.text!r}")
    base, off = _rules_off(base_method)
    if not base.startswith("reagent-"):
        raise BenchRunError(f"--what {spec.text!r}: {base_method} has no question-shape rules",
                            hint="rules belong to the ReAgent methods: pass --method reagent-MODE")
    if spec.name not in RULES:
        raise BenchRunError(f"--what {spec.text!r}: no rule named {spec.name!r}", hint=f"known rules: {', '.join(RULES)}")
    if spec.name in off or spec.name not in resolve(config.pipeline.rules):
        raise BenchRunError(f"--what {spec.text!r}: the rule is already off in the baseline ({base_method}, "
                            f"rules {', '.join(config.pipeline.rules)})", hint="ablate a rule the baseline used")
    return Ablation(spec, f"{base_method}{ABLATION}{spec.name}", marks=marks(rules=[spec.name]),
                    why=f"the record's rules_fired names {spec.name} (a rule that did not fire changed nothing)")


def _method(spec: Spec, base_method: str) -> Ablation:
    base, off = _rules_off(base_method)
    name = spec.name + ("".join(f"{ABLATION}{r}" for r in off) if spec.name.startswith("reagent-") else "")
    check_methods([name])
    if name == base_method:
        raise BenchRunError(f"--what {spec.text!r} is the baseline's own method", hint="name another method")
    modes = {f"reagent-{mode}" for mode in BACKTRACKING}
    if base not in modes or _rules_off(name)[0] not in modes:
        return Ablation(spec, name, why="another kind of method may answer any question differently: all rerun")
    taken, added = switched_off(base, _rules_off(name)[0])
    if added:
        return Ablation(spec, name, why=f"{name} switches {' and '.join(added)} backtracking on: all rerun")
    found = Marks()
    for kind in taken:
        found = found | backtracking_marks(kind)
    return Ablation(spec, name, marks=found,
                    why=f"{' and '.join(taken)} backtracking acted: its signals, rollbacks" +
                        (", the two roads or an escalation in the event log" if "global" in taken else ""))


def _value(config: Config, dotted: str) -> Any:
    section, _, name = dotted.partition(".")
    return getattr(getattr(config, section), name)


def _setting(spec: Spec, base_method: str, config: Config, ablated: Config) -> Ablation:
    old, new = _value(config, spec.name), _value(ablated, spec.name)
    if old == new:
        raise BenchRunError(f"--what {spec.text!r}: the baseline already ran with {spec.name} = {old!r}",
                            hint="ablate by changing the setting to another value")
    overrides = {spec.name: spec.value or ""}
    entry = SETTINGS.get(spec.name)
    if entry is None:
        return Ablation(spec, base_method, overrides,
                        why=f"{spec.name} is not in the table of what shows a setting acted: all rerun")
    if not entry.narrows(old, new):
        return Ablation(spec, base_method, overrides,
                        why=f"{old!r} -> {new!r} can act where the baseline's value did not: all rerun")
    return Ablation(spec, base_method, overrides, marks=entry.marks, why=entry.why)


def rules_used(base_method: str, config: Config) -> list[Spec]:
    """``rule:NAME`` for every rule on in ``config`` and not switched off by ``base_method`` (``rule:each``)."""
    from ..rules import resolve

    off = _rules_off(base_method)[1]
    return [Spec(f"rule:{name}", "rule", name) for name in resolve(config.pipeline.rules) if name not in off]
