"""Work items on a pool of Ray actors: a bounded number in flight, failures retried, then named.

Each actor loads what it needs once (an embedder, a llama.cpp model) in ``ready()``,
so a load error comes back as the worker's own exception rather than an "actor died"
report. An item whose call fails is tried again (on whichever actor is free) up to
``retries`` times; an actor that dies is replaced and its items retried. An item that
fails every try is set aside while the others finish; then the run ends with a
ClusterError naming it and its last error.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Generic, Iterable, TypeVar

from ..errors import ClusterError, ReagentError
from .connect import error_text

T = TypeVar("T")


@dataclass
class _Slot:
    actor: Any
    info: dict
    busy: int = 0


class ActorPool(Generic[T]):
    """``size`` actors made by ``make_actor``; ``run`` feeds them items and hands back results."""

    def __init__(self, ray: Any, make_actor: Callable[[], Any], size: int, *, retries: int = 2,
                 per_actor: int = 2, describe: Callable[[T], str] = str) -> None:
        self.ray = ray
        self.make_actor = make_actor
        self.retries = retries
        self.per_actor = per_actor  # calls queued on one actor: the next item's input travels while one runs
        self.describe = describe
        self.slots: list[_Slot] = []
        self.failures: list[str] = []  # every failed try, for the run's report
        self.lost: list[str] = []  # items that failed every try: named once the others are done
        self.replaced = 0
        self._size = size

    def start(self) -> list[dict]:
        """Create the actors and wait until each has loaded what it needs; returns their ``ready()`` info."""
        actors = [self.make_actor() for _ in range(self._size)]
        self.slots = [_Slot(actor, info) for actor, info in zip(actors, self._ready(actors))]
        return [slot.info for slot in self.slots]

    def _ready(self, actors: list[Any]) -> list[dict]:
        try:
            return self.ray.get([actor.ready.remote() for actor in actors])
        except Exception as exc:  # the worker's own error: a model not pulled, a bad embedder, ...
            for actor in actors:
                self.ray.kill(actor)
            cause = getattr(exc, "cause", None)
            if isinstance(cause, ReagentError):
                raise ClusterError(f"a Ray worker could not start: {cause.message}", hint=cause.hint) from None
            raise ClusterError(f"a Ray worker could not start: {error_text(exc)}",
                               hint="check that reagent-local and its models are installed on every machine") from None

    def run(self, items: Iterable[T], call: Callable[[Any, T], Any], on_result: Callable[[T, Any], None],
            stop: Callable[[], bool] = lambda: False) -> None:
        """Call ``call(actor, item)`` for every item, ``on_result(item, result)`` as each finishes.

        ``stop()`` is asked before each new item is taken; once it says True no new item is
        started (those in flight finish).
        """
        ray_exceptions = self.ray.exceptions
        source = iter(items)
        retry: deque[tuple[T, int]] = deque()
        pending: dict[Any, tuple[_Slot, Any, T, int]] = {}
        exhausted = False
        while True:
            while True:
                slot = min(self.slots, key=lambda s: s.busy)
                if slot.busy >= self.per_actor:
                    break
                if retry:
                    item, tries = retry.popleft()
                elif not exhausted and not stop():
                    try:
                        item, tries = next(source), 0
                    except StopIteration:
                        exhausted = True
                        continue
                else:
                    break
                ref = call(slot.actor, item)
                pending[ref] = (slot, slot.actor, item, tries)
                slot.busy += 1
            if not pending:
                self._raise_lost()
                return
            [done], _ = self.ray.wait(list(pending), num_returns=1)
            slot, actor, item, tries = pending.pop(done)
            if slot.actor is actor:
                slot.busy -= 1
            try:
                result = self.ray.get(done)
            except ray_exceptions.RayActorError as exc:
                self._replace(slot, actor, pending)
                self._failed(item, tries, exc, retry)
            except ray_exceptions.RayError as exc:
                self._failed(item, tries, exc, retry)
            else:
                on_result(item, result)

    def _failed(self, item: T, tries: int, exc: BaseException, retry: deque) -> None:
        text = error_text(exc)
        self.failures.append(f"{self.describe(item)}: {text}")
        if tries < self.retries:
            retry.append((item, tries + 1))
        else:
            self.lost.append(f"{self.describe(item)} failed {tries + 1} times on the Ray workers; last error: {text}")

    hint = "fix the cause and run the same command again: finished work is kept"

    def _raise_lost(self) -> None:
        """After the others finished: one error naming the items that failed every try."""
        if self.lost:
            more = f" (and {len(self.lost) - 1} more)" if len(self.lost) > 1 else ""
            raise ClusterError(self.lost[0] + more, hint=self.hint)

    def _replace(self, slot: _Slot, dead: Any, pending: dict) -> None:
        """Put a new actor in the place of one that died (once, however many of its calls fail)."""
        if slot.actor is not dead:
            return
        try:
            self.ray.kill(dead)
        except Exception:  # already gone
            pass
        fresh = self.make_actor()
        slot.actor, slot.busy = fresh, 0
        slot.info = self._ready([fresh])[0]
        self.replaced += 1

    def close(self) -> None:
        """Stop every actor (their calls in flight are dropped)."""
        for slot in self.slots:
            try:
                self.ray.kill(slot.actor)
            except Exception:
                pass
        self.slots = []
