"""Progress of a long build on stderr: items done / total, the rate and the time left; redrawn in
place on a terminal, a plain line every few seconds (and at the end) when stderr is not one."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """A callable ``progress(done, total, what)`` (``cellar.retrieval.index.Progress``)."""

    def __init__(self, label: str, stream: TextIO | None = None, every: float = 5.0, tty: bool | None = None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty() if tty is None else tty
        self.every = every
        self.started = time.monotonic()
        self.last = -float("inf")
        self.drawn = False
        self.first_done: int | None = None

    def __call__(self, done: int, total: int, what: str) -> None:
        now = time.monotonic()
        if self.first_done is None:  # work found in the cache at once does not count in the rate
            self.first_done, self.started = done, now
        final = done >= total
        if not final and now - self.last < (0.2 if self.tty else self.every):
            return
        self.last = now
        elapsed = now - self.started
        rate = (done - self.first_done) / elapsed if elapsed > 0 else 0.0
        left = (total - done) / rate if rate > 0 else None
        line = f"{self.label}: {done:,}/{total:,} {what}, {rate:,.1f}/s, " + (
            f"{_clock(left)} left" if left is not None and not final else f"{_clock(elapsed)} elapsed"
        )
        if self.tty:
            print(f"\r\x1b[K{line}", end="", file=self.stream, flush=True)
            self.drawn = True
        else:
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        if self.tty and self.drawn:
            print("\r\x1b[K", end="", file=self.stream, flush=True)


def _clock(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
