"""Road rules: how the shape of a question weighs on the two roads to its answer.

The chain of steps and the whole question read at once are the two roads (docs/agents.md).
A ``trust`` rule lets the supervisor trust a chain below its usual bar.
"""

from __future__ import annotations

from .registry import rule
from .shapes import either_or_options


@rule("either-or-trust", "trust")
def options_named(question: str) -> bool:
    """An 'A or B?' chain whose every step found its fact is trusted at the lower bar, options_trust.

    Choosing between the named options from facts found for each is what a single reading of
    the whole question does worst.
    """
    return either_or_options(question) is not None
