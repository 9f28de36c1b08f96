"""Prompt evaluation whose numbers do not depend on what was evaluated before.

llama.cpp reuses the KV cache of a prompt prefix it has already evaluated (the last prompt's,
or a state from the RAM prompt cache), and evaluates the rest of the prompt as one batch. On
CPU the arithmetic of a token depends on the size of the batch it is evaluated in: measured
on Qwen2.5-Coder-1.5B Q4_K_M (AVX-512), the logits of a prompt whose last 1-5 tokens were
evaluated apart from the rest differ by up to 0.5 from a cold evaluation, which at temperature
0 flips close choices. So one question could get two answers depending on which questions ran
before it (seen: the same decomposer prompt gave two plans within one benchmark run).

The fix: a prompt is always evaluated in blocks of ``block`` tokens aligned to position 0
(the last block may be shorter), and a cached prefix is only reused up to a block boundary
inside the part that was itself evaluated that way. Every block is then computed from the
same tokens, at the same positions, in a batch of the same size, whether the prefix came from
the cache or not: the output is a function of the prompt alone. The price is re-evaluating up
to ``block - 1`` cached tokens per call.

Blocks need not all be the same size, only fixed by position: llama.cpp's CPU kernels run a prompt
about a third faster in blocks of 256 tokens than of 64 (measured on AMD EPYC Zen 4 with the extra
buffers off, docs/models.md), so from position ``wide`` on the blocks are ``wide`` tokens. The small
blocks before it keep each role's fixed instructions reusable to within 64 tokens; what comes after
(passages, the question) is new in most calls anyway.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any, Iterator, Protocol, Sequence

DEFAULT_BLOCK = 64  # tokens; small enough that most of a role's fixed instructions stay reusable
DEFAULT_WIDE = 256  # tokens; from this position on, blocks of this size (0: ``block`` everywhere)


@dataclass(frozen=True)
class BlockSchedule:
    """Where a prompt's evaluation blocks end: every ``block`` tokens up to position ``wide``, then every ``wide``."""

    block: int = DEFAULT_BLOCK
    wide: int = 0

    def __post_init__(self) -> None:
        if self.block <= 0:
            raise ValueError(f"the prefill block must be positive, not {self.block}")
        if self.wide and (self.wide < self.block or self.wide % self.block):
            raise ValueError(f"the wide prefill block ({self.wide}) must be a multiple of the block ({self.block}), or 0")

    def floor(self, position: int) -> int:
        """The last block boundary at or before ``position``."""
        if self.wide and position >= self.wide:
            return position // self.wide * self.wide
        return position // self.block * self.block

    def is_boundary(self, position: int) -> bool:
        """Whether a block ends at ``position``."""
        return self.floor(position) == position

    def size_at(self, position: int) -> int:
        """The size of the block that starts at the boundary ``position``."""
        return self.wide if self.wide and position >= self.wide else self.block

    def label(self) -> str:
        """``64``, or ``64/256`` with wide blocks: for identities and reports."""
        return f"{self.block}/{self.wide}" if self.wide else str(self.block)


def as_schedule(block: "int | BlockSchedule") -> BlockSchedule:
    """A schedule from a plain block size (blocks of that size everywhere) or a schedule."""
    return block if isinstance(block, BlockSchedule) else BlockSchedule(int(block))


def reusable_prefix(matched: int, stable: int, block: "int | BlockSchedule") -> int:
    """How many cached tokens may be kept: the matched prefix, within the block-evaluated part, cut to a block boundary."""
    return as_schedule(block).floor(min(matched, stable))


def aligned_blocks(start: int, tokens: Sequence[int], block: "int | BlockSchedule") -> Iterator[Sequence[int]]:
    """``tokens`` (evaluated from position ``start``, a block boundary) cut into blocks aligned to position 0."""
    schedule = as_schedule(block)
    if not schedule.is_boundary(start):
        raise ValueError(f"start {start} is not a boundary of the prefill blocks {schedule.label()}")
    offset = 0
    while offset < len(tokens):
        size = schedule.size_at(start + offset)
        yield tokens[offset:offset + size]
        offset += size


@dataclass
class PromptReuse:
    """Prompt tokens a model's calls took from cache and evaluated, added up since the last ``reset``.

    ``counted`` is the calls whose split is known (an aligned evaluation); the others add nothing.
    """

    calls: int = 0
    counted: int = 0
    cached: int = 0
    evaluated: int = 0

    def add(self, cached: int | None, evaluated: int | None) -> None:
        """Count one call (``None``: its split is not known)."""
        self.calls += 1
        if cached is not None and evaluated is not None:
            self.counted += 1
            self.cached += cached
            self.evaluated += evaluated

    def reset(self) -> None:
        """Start counting afresh (the benchmark does, before each question)."""
        self.calls = self.counted = self.cached = self.evaluated = 0

    def to_dict(self) -> dict[str, int]:
        """JSON-ready."""
        return asdict(self)


class Snapshots(Protocol):
    """Who wants the state of a prompt's first tokens, taken on the way while the prompt is evaluated (runtime/warm.py)."""

    def boundary(self, llama: Any, prompt: Sequence[int]) -> int:
        """A block boundary of ``prompt`` whose state is wanted, or 0: asked once per prompt, before its evaluation."""
        ...

    def capture(self, llama: Any) -> None:
        """Take the state now: exactly the first ``boundary`` tokens are evaluated, in aligned blocks."""
        ...


@lru_cache(maxsize=None)
def aligned_llama_class(block: "int | BlockSchedule" = DEFAULT_BLOCK) -> type:
    """A ``llama_cpp.Llama`` whose prompt evaluation is aligned to ``block``'s boundaries (see the module docstring)."""
    import llama_cpp  # heavy import, deferred

    schedule = as_schedule(block)

    class AlignedLlama(llama_cpp.Llama):
        # how many leading KV positions were evaluated in aligned, full blocks of a prompt: reusable exactly
        _stable = 0
        _prompt_pending = False
        # the last prompt's split: tokens kept from the cache (the context's own or a loaded state), tokens evaluated
        last_reused: int | None = None
        last_evaluated: int | None = None
        # when set, the state at a block boundary it names is handed to it as the prompt's blocks pass there
        snapshots: Snapshots | None = None
        _snapshot_at = 0

        def generate(self, tokens: Sequence[int], *args: Any, **kwargs: Any) -> Iterator[int]:
            # the first eval of a generation is the prompt (or the part of it not matched in the cache)
            self._prompt_pending = True
            self.last_reused = self.last_evaluated = None
            at = self.snapshots.boundary(self, tokens) if self.snapshots is not None else 0
            self._snapshot_at = at if schedule.is_boundary(at) else 0  # inside a block: not what a cold prefill computes
            return (yield from super().generate(tokens, *args, **kwargs))

        def eval(self, tokens: Sequence[int]) -> None:
            if not self._prompt_pending:  # generated tokens: one at a time, as in any run
                return super().eval(tokens)
            self._prompt_pending = False
            # generate() matched the first n_tokens of the prompt; go back to a boundary that is exactly reusable
            keep = reusable_prefix(self.n_tokens, self._stable, schedule)
            tokens = [*self.input_ids[keep:self.n_tokens].tolist(), *tokens]
            self.n_tokens = keep
            self.last_reused, self.last_evaluated = keep, len(tokens)
            for piece in aligned_blocks(keep, tokens, schedule):
                super().eval(piece)
                if self.n_tokens == self._snapshot_at and self.snapshots is not None:
                    # only full aligned blocks so far: the state is what a cold prefill of this prefix gives
                    self._stable = self.n_tokens
                    self.snapshots.capture(self)
            self._stable = schedule.floor(self.n_tokens)

        def reset(self) -> None:
            super().reset()
            self._stable = 0

        def save_state(self) -> Any:
            # llama-cpp-python copies a row of logits per evaluated token into a state (up to 512 x 151,936
            # floats, 300 MB, about 0.1-0.5 s a call); nothing reads them back (after a load the prompt's next
            # token is always evaluated) and the prompt cache keeps only the last row: only that one is copied
            every_row = self.scores
            self.scores = every_row[-1:]
            try:
                state = super().save_state()
            finally:
                self.scores = every_row
            state.reagent_stable = self._stable
            return state

        def load_state(self, state: Any) -> None:
            super().load_state(state)
            self._stable = getattr(state, "reagent_stable", 0)  # a state saved elsewhere: reuse nothing

    AlignedLlama.__name__ = AlignedLlama.__qualname__ = f"AlignedLlama{schedule.label().replace('/', '_')}"
    return AlignedLlama
