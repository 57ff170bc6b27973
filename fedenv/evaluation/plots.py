"""The comparison's plots: accuracy per round, accuracy over simulated time, cumulative upload."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from fedenv.evaluation.rollout import EpisodeRecord
from fedenv.fileio import atomic_write


def _band(ax, x, curves, label):
    line, = ax.plot(x, curves.mean(axis=0), label=label)
    ax.fill_between(x, curves.min(axis=0), curves.max(axis=0), color=line.get_color(), alpha=0.15)
    return line


def plot_results(records: dict[str, list[EpisodeRecord]], out_dir: str | Path) -> dict[str, Path]:
    """Three PNGs, one line per policy (mean over seeds) with a min-max band over seeds:
    ``accuracy_vs_round.png``, ``accuracy_vs_time.png`` (simulated wall-clock time; the mean is drawn
    while every seed's episode runs, a dot marks each seed's end) and ``upload_vs_round.png``
    (cumulative MB uploaded)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    seeds = len(next(iter(records.values())))
    paths = {}
    for kind, ylabel in (("accuracy_vs_round", "test accuracy"), ("accuracy_vs_time", "test accuracy"),
                         ("upload_vs_round", "cumulative upload (MB)")):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for name, episodes in records.items():
            if kind == "accuracy_vs_round":
                length = min(len(r.accuracy) for r in episodes)
                _band(ax, np.arange(length), np.stack([r.accuracy[:length] for r in episodes]), name)
            elif kind == "upload_vs_round":
                length = min(len(r.comm_mb) for r in episodes)
                curves = np.stack([np.concatenate([[0.0], np.cumsum(r.comm_mb[:length])]) for r in episodes])
                _band(ax, np.arange(length + 1), curves, name)
            else:
                ends = np.array([r.wall_clock_s[-1] for r in episodes])
                grid = np.linspace(0.0, ends.min(), 300)
                curves = np.stack([
                    np.asarray(r.accuracy)[np.searchsorted(r.wall_clock_s, grid, side="right") - 1] for r in episodes
                ])
                line = _band(ax, grid, curves, name)
                ax.scatter(ends, [r.final_accuracy for r in episodes], color=line.get_color(), s=14, zorder=3)
        if kind == "accuracy_vs_time":
            ax.set_xscale("symlog", linthresh=10.0)
            ax.set_xlabel("simulated wall-clock time (s, log scale above 10 s); dots: episode ends")
        else:
            ax.set_xlabel("FL round")
        ax.set_ylabel(ylabel)
        ax.set_title(f"{ylabel} ({seeds} seeds; band: min-max over seeds)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
        fig.tight_layout()
        paths[kind] = out_dir / f"{kind}.png"
        atomic_write(paths[kind], partial(fig.savefig, format="png", dpi=120))
        plt.close(fig)
    return paths
