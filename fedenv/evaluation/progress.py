"""A progress bar on a terminal, rare plain lines in a log.

On a terminal (``stream.isatty()``) it is a tqdm bar. Otherwise (a log file, a pipe, a batch job) a
redrawn bar would fill the log with carriage returns, so it prints one plain line at most every
``interval_s`` seconds, and one at the end.
"""

from __future__ import annotations

import sys
import time

PLAIN_INTERVAL_S = 60.0
"""Least time between two plain progress lines without a terminal."""


class PlainProgress:
    """The subset of tqdm's interface used here (``update``, ``set_postfix``, ``close``), as plain lines
    ``DESC: N/TOTAL UNITs, S s elapsed, key=value ...`` at most every ``interval_s`` seconds."""

    def __init__(self, total: int, desc: str, unit: str, stream, interval_s: float = PLAIN_INTERVAL_S):
        self.total, self.desc, self.unit, self.stream, self.interval_s = total, desc, unit, stream, interval_s
        self.count, self.postfix = 0, {}
        self.start = self.last = time.monotonic()

    def update(self, n: int = 1) -> None:
        self.count += n
        if time.monotonic() - self.last >= self.interval_s:
            self._print()

    def set_postfix(self, **values) -> None:
        self.postfix = values

    def close(self) -> None:
        self._print()

    def _print(self) -> None:
        self.last = time.monotonic()
        extra = "".join(f", {k}={v}" for k, v in self.postfix.items())
        print(f"{self.desc}: {self.count}/{self.total} {self.unit}s, {self.last - self.start:.0f} s elapsed{extra}",
              file=self.stream, flush=True)


def progress_bar(total: int, desc: str, unit: str, enabled: bool = True, stream=None):
    """A tqdm bar on ``stream`` (default ``sys.stderr``) when it is a terminal, a :class:`PlainProgress`
    when it is not, nothing when ``enabled`` is False or there is nothing to do (``total`` 0). Each has
    ``update(n)``, ``set_postfix(**values)`` and ``close()``."""
    from tqdm.auto import tqdm

    enabled = enabled and total > 0
    stream = sys.stderr if stream is None else stream
    if enabled and not stream.isatty():
        return PlainProgress(total, desc, unit, stream)
    return tqdm(total=total, desc=desc, unit=unit, file=stream, disable=not enabled)
