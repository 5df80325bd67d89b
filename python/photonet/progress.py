"""Progress as plain lines, for output that is not a terminal (nohup, Slurm
logs, CI): a line every few seconds instead of a progress bar that is never
drawn. ``$PHOTONET_PROGRESS_SECONDS`` sets the interval (default 5 s)."""
from __future__ import annotations

import os
import re
import sys
import time
from typing import Callable, Optional, TextIO


_UNIT_US = {"ps": 1e-6, "ns": 1e-3, "us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}


def duration_us(text) -> Optional[float]:
    """µs of a complete config's duration string (``"2ms"``); None if absent
    or not understood (progress then counts flows only)."""
    if text is None:
        return None
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*(ps|ns|us|µs|ms|s)\s*", str(text))
    if not m:
        return None
    try:
        return float(m.group(1)) * _UNIT_US[m.group(2)]
    except ValueError:
        return None


def interval_s() -> float:
    try:
        v = float(os.environ.get("PHOTONET_PROGRESS_SECONDS", "5"))
    except ValueError:
        v = 5.0
    return v if v >= 0 else 5.0


class RunLines:
    """A ``progress(now_us, arrived, completed, events)`` callback for one run
    that prints, at most every ``interval`` seconds of wall time: simulated
    time, % done (of the flow count or the duration, whichever is further),
    wall time and simulated seconds per wall second."""

    def __init__(self, label: str, flows: Optional[int], duration_us: Optional[float], stream: TextIO | None = None,
                 interval: Optional[float] = None, clock: Callable[[], float] = time.monotonic):
        self.label, self.flows, self.duration_us = label, flows, duration_us
        self.stream = stream or sys.stderr
        self.interval = interval_s() if interval is None else interval
        self.clock = clock
        self.t0 = clock()
        self.last = self.t0

    def done_fraction(self, now_us: float, arrived: int) -> Optional[float]:
        parts = []
        if self.flows:
            parts.append(arrived / self.flows)
        if self.duration_us:
            parts.append(now_us / self.duration_us)
        return min(1.0, max(parts)) if parts else None

    def line(self, now_us: float, arrived: int, completed: int) -> str:
        wall = self.clock() - self.t0
        frac = self.done_fraction(now_us, arrived)
        pct = f" ({frac:.0%})" if frac is not None else ""
        rate = f"{now_us / 1e6 / wall:.3g} sim s/wall s" if wall > 0 else "-"
        return (f"{self.label}: t = {now_us:,.1f} µs{pct}, {arrived:,} flows arrived, {completed:,} done, "
                f"wall {wall:,.1f} s, {rate}")

    def __call__(self, now_us: float, arrived: int, completed: int, events: int) -> bool:
        now = self.clock()
        if now - self.last >= self.interval:
            self.last = now
            print(self.line(now_us, arrived, completed), file=self.stream, flush=True)
        return True


class CountLines:
    """``tick(done, total)`` for a set of points (compare, sweep): a line at
    most every ``interval`` seconds, and always for the last point."""

    def __init__(self, label: str, stream: TextIO | None = None, interval: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic):
        self.label = label
        self.stream = stream or sys.stderr
        self.interval = interval_s() if interval is None else interval
        self.clock = clock
        self.t0 = self.last = clock()

    def __call__(self, done: int, total: Optional[int]) -> None:
        now = self.clock()
        if now - self.last >= self.interval or (total is not None and done >= total):
            self.last = now
            of = f"/{total}" if total is not None else ""
            print(f"{self.label}: {done}{of} points done, wall {now - self.t0:,.1f} s", file=self.stream, flush=True)
