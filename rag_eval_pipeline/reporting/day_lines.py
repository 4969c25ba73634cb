"""Day lines of processes run side by side, printed in date order.

`rag-eval run --days N --parallel P` evaluates the versions in P processes, each printing its
dates in order: a day line (`2026-11-21  demo-v2: quiet: ...`) and the details under it. Relayed
as they arrive, two processes' days interleave out of order. `DayOrder` holds each day's block
until no process can still print an earlier date (every running process is at that date or
later), then prints the blocks in date order; lines before a process's first day go through.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable

DAY_LINE = re.compile(r"^(\d{4}-\d{2}-\d{2})  ")


class DayOrder:
    """Relays lines of `n` processes (thread-safe), day blocks in date order (module doc)."""

    def __init__(self, n: int, emit: Callable[[str], None]) -> None:
        self._emit = emit
        self._lock = threading.Lock()
        self._at: list[str | None] = [None] * n
        self._running = [True] * n
        self._blocks: dict[str, list[str]] = {}

    def line(self, process: int, text: str) -> None:
        """One line of `process` (with its newline)."""
        with self._lock:
            day = DAY_LINE.match(text)
            if day:
                self._at[process] = day.group(1)
            if self._at[process] is None:
                self._emit(text)
                return
            self._blocks.setdefault(str(self._at[process]), []).append(text)
            self._flush()

    def end(self, process: int) -> None:
        """`process` printed its last line."""
        with self._lock:
            self._running[process] = False
            self._flush()

    def _flush(self) -> None:
        """Print every held day that no running process can still precede."""
        running = [self._at[i] or "" for i, alive in enumerate(self._running) if alive]
        for day in sorted(self._blocks):
            if running and day >= min(running):
                break
            for text in self._blocks.pop(day):
                self._emit(text)
