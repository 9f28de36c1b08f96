"""Draw the benchmark questions: the same seed gives the same questions for every method.

``sample_questions(questions, n, seed)`` returns ``random.Random(seed).sample(questions, n)``,
which is exactly what ``random.seed(seed); random.sample(questions, n)`` returns, so a
draw can be reproduced with the standard library alone. ``questions`` must be in file
order (as ``load_questions`` returns them). ``n=None`` takes every question, in file order.
"""

from __future__ import annotations

import random
from typing import Sequence, TypeVar

from ..errors import BenchRunError

T = TypeVar("T")


def sample_questions(questions: Sequence[T], n: int | None, seed: int, *, pool: str = "the file") -> list[T]:
    """The n questions drawn with ``seed`` (all of them, in file order, when n is None).

    ``pool`` names what the questions are in the too-large-n error ("the file", "the selection").
    """
    if n is None:
        return list(questions)
    if n < 1:
        raise BenchRunError(f"--n must be at least 1, got {n}", hint="pass a positive number of questions")
    if n > len(questions):
        raise BenchRunError(
            f"asked for {n} questions but {pool} has only {len(questions)}",
            hint=f"pass --n {len(questions)} or less (or omit --n to take them all)",
        )
    return random.Random(seed).sample(list(questions), n)
