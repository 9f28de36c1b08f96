"""The method registry: name -> factory. Users add their own with ``register_method``.

    from reagent_local.bench import register_method
    register_method("my-rag", lambda ctx: MyRag(ctx))

A ReAgent method can also be named with rules switched off, to ablate them:
``reagent-both-no-compare-options`` is ``reagent-both`` without the rule
``compare-options`` (``-no-`` again for more rules). A rule removed with its code
(``rules.REMOVED_RULES``) cannot be ablated: every method runs without it.
"""

from __future__ import annotations

from functools import partial

from ..config import BACKTRACKING
from ..errors import BenchRunError
from .one_call import ClosedBook, SingleStepRAG
from .adaptive import Adaptive
from .ircot import IRCoT
from .methods import Method, MethodContext, MethodFactory
from .reagent_method import ReagentMethod

METHODS: dict[str, MethodFactory] = {
    "closed-book": ClosedBook,
    "rag": SingleStepRAG,
    "ircot": IRCoT,
    **{f"reagent-{mode}": partial(ReagentMethod, backtracking=mode) for mode in BACKTRACKING},
    "adaptive": Adaptive,
}
DEFAULT_METHODS = ("closed-book", "rag", "ircot", "reagent-both")


def register_method(name: str, factory: MethodFactory, *, replace: bool = False) -> None:
    """Make a method available to ``run_benchmark`` and ``reagent bench run --methods``."""
    if name in METHODS and not replace:
        raise ValueError(f"a method named {name!r} is already registered (pass replace=True)")
    METHODS[name] = factory


ABLATION = "-no-"


def removed_rule(rule: str, where: str) -> BenchRunError:
    """The error for an ablation of a rule removed with its code (``where``: what asked for it)."""
    from ..rules import REMOVED_RULES

    return BenchRunError(f"{where}: the rule {rule} was {REMOVED_RULES[rule]}",
                         hint="every ReAgent method runs without it now: there is nothing to switch off")


def ablation(name: str) -> tuple[str, tuple[str, ...]] | None:
    """('reagent-both', ('compare-options',)) for 'reagent-both-no-compare-options'; None for any other name.

    Rule names are matched whole, longest first, so a rule whose own name holds ``-no-``
    (the removed ``yes-no-answer``) reads as one rule; a removed rule is a BenchRunError saying so.
    """
    base = next((m for m in sorted(METHODS, key=len, reverse=True)
                 if m.startswith("reagent-") and name.startswith(m + ABLATION)), None)
    if base is None:
        return None
    from ..rules import REMOVED_RULES, RULES

    names = sorted([*RULES, *REMOVED_RULES], key=len, reverse=True)
    rest, rules = name[len(base):], []
    while rest:
        rest = rest[len(ABLATION):]  # every rule follows -no-
        found = next((r for r in names if rest == r or rest.startswith(r + ABLATION)), None)
        if found is None:
            unknown = rest.split(ABLATION)[0]
            raise BenchRunError(f"unknown rule(s) in method {name!r}: {unknown}",
                                hint=f"known rules: {', '.join(RULES)}")
        if found in REMOVED_RULES:
            raise removed_rule(found, f"method {name!r}")
        rules.append(found)
        rest = rest[len(found):]
    return base, tuple(rules)


def ablated(methods: list[str], rules: list[str]) -> list[str]:
    """Each ReAgent method, then the same method without each rule in ``rules`` (the --ablate variants)."""
    from ..rules import REMOVED_RULES

    for rule in rules:
        if rule in REMOVED_RULES:
            raise removed_rule(rule, f"--ablate {rule}")
    out = []
    for name in methods:
        out.append(name)
        if name.startswith("reagent-") and ablation(name) is None:
            out += [f"{name}{ABLATION}{rule}" for rule in rules]
    return out


def check_methods(names: list[str] | tuple[str, ...]) -> list[str]:
    """The names, deduplicated in order; unknown names raise with the list of known ones."""
    unknown = [n for n in names if n not in METHODS and ablation(n) is None]
    if unknown:
        raise BenchRunError(f"unknown method(s): {', '.join(unknown)}", hint=f"known: {', '.join(METHODS)}")
    if not names:
        raise BenchRunError("no methods given", hint=f"pass --methods with some of: {', '.join(METHODS)}")
    return list(dict.fromkeys(names))


def build_method(name: str, ctx: MethodContext) -> Method:
    """Build a registered method for this run."""
    check_methods([name])
    rules_off = ablation(name)
    if rules_off is not None:
        base, rules = rules_off
        mode = base.removeprefix("reagent-")
        method = ReagentMethod(ctx, mode, without_rules=rules) if mode in BACKTRACKING else METHODS[base](ctx)
    else:
        method = METHODS[name](ctx)
    method.name = name  # the record's method name is the registry name
    return method
