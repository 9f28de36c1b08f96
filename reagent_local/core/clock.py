"""The temporal tracker: a logical clock that totally orders one run's events."""

from __future__ import annotations

import threading


class LogicalClock:
    """A counter that totally orders a run's events: each event takes the next tick."""

    def __init__(self, start: int = 0) -> None:
        self._now = start
        self._lock = threading.Lock()

    @property
    def now(self) -> int:
        """The last time handed out."""
        return self._now

    def tick(self) -> int:
        """Advance and return the new time."""
        with self._lock:
            self._now += 1
            return self._now
