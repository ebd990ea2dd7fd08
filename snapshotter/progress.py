"""A live count on stderr for long walks and restores, when a person is watching.

Only the CLI turns it on, and only when stderr is a terminal: the hook path
and scripts never see it. The walk and the restore just ``tick``; that costs
one global lookup when nobody is watching.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

SHOW_AFTER_S = 1.0  # a short command stays quiet
REDRAW_S = 0.2


class _Meter:
    def __init__(self, stream: TextIO, after_s: float) -> None:
        self.stream = stream
        self.started = time.monotonic()
        self.after_s = after_s
        self.count = 0
        self.drawn = 0.0

    def add(self, n: int) -> None:
        self.count += n
        now = time.monotonic()
        if now - self.started >= self.after_s and now - self.drawn >= REDRAW_S:
            self.drawn = now
            self.stream.write(f"\r{self.count:,} files...")
            self.stream.flush()

    def close(self) -> None:
        if self.drawn:
            self.stream.write(f"\r{self.count:,} files, done.\n")
            self.stream.flush()


_meter: _Meter | None = None


def tick(n: int = 1) -> None:
    """``n`` more files walked, hashed or restored."""
    if _meter is not None:
        _meter.add(n)


@contextmanager
def shown_on_terminal(stream: TextIO | None = None) -> Iterator[None]:
    """Count ticks on ``stream`` (stderr) while in this block, if it is a terminal."""
    global _meter
    stream = stream or sys.stderr
    if _meter is not None or stream is None or not stream.isatty():
        yield
        return
    after = float(os.environ.get("SNAPSHOTTER_PROGRESS_AFTER_S", SHOW_AFTER_S))
    _meter = _Meter(stream, after)
    try:
        yield
    finally:
        meter, _meter = _meter, None
        meter.close()


@contextmanager
def hidden() -> Iterator[None]:
    """No count while in this block: a full-screen view owns the terminal (issue 27)."""
    global _meter
    saved, _meter = _meter, None
    try:
        yield
    finally:
        _meter = saved
