"""Training progress for a terminal or a log file: a tqdm bar on a terminal, plain lines otherwise.

A progress bar redraws itself with carriage returns, which a log file keeps as one huge line; without a
terminal (or with ``mode="lines"``) one plain line is printed every :data:`LINE_EVERY_EPISODES` episodes
or :data:`LINE_EVERY_S` seconds, and after the last episode.
"""

from __future__ import annotations

import sys
import time

from tqdm.auto import tqdm

LINE_EVERY_EPISODES = 10
LINE_EVERY_S = 30.0
MODES = ("auto", "bar", "lines", "off")


def progress_mode(progress: bool | str, stream=None) -> str:
    """``"bar"``, ``"lines"`` or ``"off"``: ``True`` or ``"auto"`` means a bar when ``stream`` (default
    ``sys.stdout``) is a terminal and lines otherwise; ``False`` means ``"off"``.

    Raises:
        ValueError: ``progress`` is none of ``True``, ``False`` and :data:`MODES`.
    """
    if progress is True or progress == "auto":
        stream = sys.stdout if stream is None else stream
        return "bar" if stream.isatty() else "lines"
    if progress is False:
        return "off"
    if progress not in MODES:
        raise ValueError(f"progress={progress!r} must be True, False or one of {', '.join(MODES)}")
    return progress


def format_duration(seconds: float) -> str:
    """``3725.0 -> "1h02m05s"``, ``65.0 -> "1m05s"``, ``7.2 -> "7s"``."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class Progress:
    """Reports finished training episodes as a bar or as plain lines (module docstring).

    Args:
        total: the run's episodes. initial: episodes already played (a resumed run). mode: see
            :func:`progress_mode`. stream: where lines go (default ``sys.stdout``, looked up when printing).
    """

    def __init__(self, total: int, initial: int, mode: bool | str = "auto", stream=None):
        self.mode = progress_mode(mode, stream)
        self.total, self.initial, self.stream = total, initial, stream
        self.start = self.last_line = time.perf_counter()
        self.bar = (tqdm(total=total, initial=initial, desc="VDN", unit="episode", file=sys.stdout)
                    if self.mode == "bar" else None)

    def update(self, episode: int, summary, rounds_per_s: float) -> None:
        """Episode ``episode`` (1-based count of episodes played) ended with ``summary`` (an
        :class:`~agents.trainer.EpisodeSummary`); ``rounds_per_s``: the recent training rate."""
        if self.bar is not None:
            self.bar.update()
            self.bar.set_postfix(ret=f"{summary.team_return:.3f}", acc=f"{summary.final_accuracy:.3f}",
                                 lat=f"{summary.total_latency_s:.0f}s", eps=f"{summary.epsilon:.2f}")
            return
        now = time.perf_counter()
        due = episode % LINE_EVERY_EPISODES == 0 or now - self.last_line >= LINE_EVERY_S or episode == self.total
        if self.mode != "lines" or not due:
            return
        self.last_line = now
        per_episode = (now - self.start) / max(1, episode - self.initial)
        print(f"episode {episode}/{self.total}  return {summary.team_return:.3f}  "
              f"accuracy {summary.final_accuracy:.3f}  epsilon {summary.epsilon:.2f}  {rounds_per_s:.2f} rounds/s  "
              f"ETA {format_duration(per_episode * (self.total - episode))}",
              file=self.stream or sys.stdout, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
