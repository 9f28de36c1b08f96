"""The method registry: name -> factory. Users add their own with ``register_method``.

    from reagent_local.bench import register_method
    register_method("my-rag", lambda ctx: MyRag(ctx))
"""

from __future__ import annotations

from functools import partial

from ..errors import BenchRunError
from .baselines import ClosedBook, SingleStepRAG
from .ircot import IRCoT
from .methods import Method, MethodContext, MethodFactory
from .reagent_method import BACKTRACKING, ReagentMethod

METHODS: dict[str, MethodFactory] = {
    "closed-book": ClosedBook,
    "rag": SingleStepRAG,
    "ircot": IRCoT,
    **{f"reagent-{mode}": partial(ReagentMethod, backtracking=mode) for mode in BACKTRACKING},
}
DEFAULT_METHODS = ("closed-book", "rag", "ircot", "reagent-both")


def register_method(name: str, factory: MethodFactory, *, replace: bool = False) -> None:
    """Make a method available to ``run_benchmark`` and ``reagent bench run --methods``."""
    if name in METHODS and not replace:
        raise ValueError(f"a method named {name!r} is already registered (pass replace=True)")
    METHODS[name] = factory


def check_methods(names: list[str] | tuple[str, ...]) -> list[str]:
    """The names, deduplicated in order; unknown names raise with the list of known ones."""
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        raise BenchRunError(f"unknown method(s): {', '.join(unknown)}", hint=f"known: {', '.join(METHODS)}")
    if not names:
        raise BenchRunError("no methods given", hint=f"pass --methods with some of: {', '.join(METHODS)}")
    return list(dict.fromkeys(names))


def build_method(name: str, ctx: MethodContext) -> Method:
    """Build a registered method for this run."""
    check_methods([name])
    method = METHODS[name](ctx)
    method.name = name  # the record's method name is the registry name
    return method
