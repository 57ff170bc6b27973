"""The comparison's plots: ``summary.png`` (final test accuracy against total latency, upload, download
and traffic (upload and download together), with the Pareto fronts) and ``learning_curves.png`` (test
accuracy per round, test accuracy over simulated time, cumulative upload, download and traffic per
round).

Every policy keeps one colour and one marker in both figures, a distinct pair for each of any number of
policies (distinct markers up to ``len(MARKERS)``). The learned policy (``vdn``) and FedAvg are drawn
bold, with black edges and their names beside their markers; the other policies thinner and lighter.
Markers that would overlap (policies with the same cost and nearly the same accuracy, as every
select-all baseline) are spread sideways by a few points (:func:`overlap_offsets`), and the curves'
markers are staggered so that coinciding lines still show each policy's marker. Each cost axis has one
scale: linear, or logarithmic (said in its label) when its values span more than :data:`LOG_SPAN`.
Accuracy axes span the data; the accuracy-per-round panel adds an inset zoomed to the last rounds,
where the policies' accuracies differ by a point or less.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from fedenv.evaluation.metrics import per_episode_metrics, summarise
from fedenv.evaluation.rollout import EpisodeRecord
from fedenv.fileio import atomic_write

EMPHASISED = ("vdn", "fedavg")
"""Policies drawn bold: the learned policy and the baseline everything is measured against."""
MARKERS = "osD^vP*Xh<>pd8H"
"""Marker of the i-th policy (cycled beyond their number)."""
OVERLAP = 0.03
"""Two summary markers overlap when they are closer than this fraction of both axes' data spans."""
OFFSET_PT = 7.0
"""Sideways spacing, in points, of markers spread apart by :func:`overlap_offsets`."""
ZOOM_ROUNDS = 1 / 3
"""The accuracy-per-round inset shows this last fraction of the rounds."""
LOG_SPAN = 30.0
"""An axis is logarithmic when its largest positive value exceeds its smallest by more than this factor."""


def policy_styles(names: list[str]) -> dict[str, dict]:
    """``name -> {"color", "marker"}`` in the order of ``names``: tab10's colours, cycled, and
    :data:`MARKERS`, cycled; as ten colours and fifteen markers cycle together, no two of the first 30
    policies share both colour and marker, and no two of the first 15 share a marker."""
    import matplotlib

    colours = matplotlib.colormaps["tab10"].colors
    return {name: {"color": colours[i % len(colours)], "marker": MARKERS[i % len(MARKERS)]}
            for i, name in enumerate(names)}


def overlap_offsets(xs, ys, log_x: bool = False, tolerance: float = OVERLAP) -> np.ndarray:
    """Sideways offsets (in units of :data:`OFFSET_PT`) that spread overlapping markers apart.

    Points are grouped greedily, in order: a point joins the first group whose first point is within
    ``tolerance`` of it in both coordinates, each coordinate as a fraction of its data span (the x span
    in log10 when ``log_x``). The n points of a group get offsets ``j - (n - 1) / 2``, ``j = 0 .. n - 1``;
    a point alone gets 0.

    Args:
        xs, ys: the markers' positions, shape ``(n,)``.

    Returns:
        shape ``(n,)``.
    """
    xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if log_x:
        xs = np.log10(np.clip(xs, 1e-12, None))
    span_x, span_y = np.ptp(xs) if len(xs) else 0.0, np.ptp(ys) if len(ys) else 0.0
    sx, sy = xs / (span_x or 1.0), ys / (span_y or 1.0)
    groups: list[list[int]] = []
    for i in range(len(xs)):
        group = next((g for g in groups if abs(sx[g[0]] - sx[i]) < tolerance and abs(sy[g[0]] - sy[i]) < tolerance),
                     None)
        group.append(i) if group is not None else groups.append([i])
    offsets = np.zeros(len(xs))
    for group in groups:
        offsets[group] = np.arange(len(group)) - (len(group) - 1) / 2
    return offsets


def pareto_front(costs, accuracies) -> list[int]:
    """Indices of the points no other point dominates (lower or equal cost and higher or equal accuracy,
    one of them strictly), in order of increasing cost.

    Args:
        costs, accuracies: one value per point (shape ``(n,)``).
    """
    costs, accuracies = np.asarray(costs, dtype=float), np.asarray(accuracies, dtype=float)
    front = [i for i in range(len(costs))
             if not np.any((costs <= costs[i]) & (accuracies >= accuracies[i])
                           & ((costs < costs[i]) | (accuracies > accuracies[i])))]
    return sorted(front, key=lambda i: (costs[i], accuracies[i]))


def _is_log(values) -> bool:
    values = np.asarray(values, dtype=float)
    positive = values[values > 0]
    return bool(len(positive)) and positive.max() > LOG_SPAN * positive.min()


def _set_scale(ax, values, label: str) -> None:
    if _is_log(values):
        from matplotlib.ticker import NullFormatter

        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())
        label += ", log scale"
    ax.set_xlabel(label + ")")


def _summary_panel(ax, rows: list[dict], metric: str, label: str, styles: dict) -> None:
    from matplotlib.transforms import ScaledTranslation

    costs = [row[f"{metric}_mean"] for row in rows]
    accuracies = [row["final_accuracy_mean"] for row in rows]
    front = pareto_front(costs, accuracies)
    offsets = overlap_offsets(costs, accuracies, log_x=_is_log(costs))
    shifts = [ax.transData + ScaledTranslation(offset * OFFSET_PT / 72, 0, ax.figure.dpi_scale_trans)
              for offset in offsets]
    ax.plot([costs[i] for i in front], [accuracies[i] for i in front], "--", color="0.35", lw=1.2, zorder=1)
    for i in front:  # the ring moves with its marker
        ax.scatter([costs[i]], [accuracies[i]], s=330, facecolors="none", edgecolors="0.35", lw=1.2, zorder=1,
                   transform=shifts[i])
    for row, shift in zip(rows, shifts):
        bold = row["policy"] in EMPHASISED
        ax.errorbar(row[f"{metric}_mean"], row["final_accuracy_mean"], xerr=row[f"{metric}_std"],
                    yerr=row["final_accuracy_std"], fmt=styles[row["policy"]]["marker"], ms=12 if bold else 8,
                    color=styles[row["policy"]]["color"], mec="black" if bold else "white", mew=1.2 if bold else 0.4,
                    elinewidth=1.6 if bold else 0.8, capsize=3, alpha=1.0 if bold else 0.85,
                    zorder=4 if bold else 2, transform=shift)
        if bold:
            ax.annotate(row["policy"], (row[f"{metric}_mean"], row["final_accuracy_mean"]), xycoords=shift,
                        xytext=(9, 7), textcoords="offset points", fontweight="bold", zorder=5,
                        color=styles[row["policy"]]["color"])
    # artists drawn with an offset transform do not enter autoscaling: the limits cover every error bar
    ax.update_datalim([(row[f"{metric}_mean"] + sx * row[f"{metric}_std"],
                        row["final_accuracy_mean"] + sy * row["final_accuracy_std"])
                       for row in rows for sx in (-1, 1) for sy in (-1, 1)])
    _set_scale(ax, costs, label)
    ax.autoscale_view()
    ax.grid(alpha=0.3)


SUMMARY_PANELS = (
    ("total_latency_s", "total simulated latency per episode (s", "accuracy against time"),
    ("total_upload_mb", "total upload per episode (MB", "accuracy against upload"),
    ("total_download_mb", "total download per episode (MB", "accuracy against download"),
    ("total_traffic_mb", "total traffic, upload + download, per episode (MB", "accuracy against all traffic"),
)
"""``(metric, axis label, title)`` of each panel of ``summary.png``."""


def plot_summary(rows: list[dict], seeds: int, path: Path) -> None:
    """``summary.png``: each policy's final test accuracy against its total latency, upload, download and
    traffic (upload + download) per episode (one panel each, :data:`SUMMARY_PANELS`), mean +- std over the
    ``seeds`` evaluation seeds (:func:`summarise` ``rows``), with each panel's Pareto front."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    styles = policy_styles([row["policy"] for row in rows])
    fig, grid = plt.subplots(2, 2, figsize=(12, 10), sharey=True)
    axes = grid.ravel()
    for ax, (metric, label, title) in zip(axes, SUMMARY_PANELS):
        _summary_panel(ax, rows, metric, label, styles)
        ax.set_title(title + ": up and left is better")
    for ax in grid[:, 0]:
        ax.set_ylabel("final test accuracy")
    handles = [Line2D([], [], ls="", marker=styles[r["policy"]]["marker"], ms=9, color=styles[r["policy"]]["color"],
                      mec="black" if r["policy"] in EMPHASISED else "white", label=r["policy"]) for r in rows]
    handles.append(Line2D([], [], ls="--", color="0.35", marker="o", ms=15, mfc="none", mec="0.35",
                          label="Pareto front: no other policy is\nboth more accurate and cheaper"))
    fig.legend(handles=handles, loc="center right", frameon=False, fontsize="small")
    fig.text(0.01, 0.01, f"Marker: mean over {seeds} evaluation seeds (the same seeds for every policy); error bars: "
             "+-1 std over those seeds.\nBold, named: the learned policy and FedAvg. Markers that would overlap "
             f"are spread sideways by {OFFSET_PT:g} pt each (their rings with them).", fontsize="small")
    fig.tight_layout(rect=(0, 0.07, 0.8, 1))
    atomic_write(path, partial(fig.savefig, format="png", dpi=110))
    plt.close(fig)


def _line_style(name: str, styles: dict) -> dict:
    bold = name in EMPHASISED
    return {"color": styles[name]["color"], "marker": styles[name]["marker"], "lw": 2.6 if bold else 1.1,
            "alpha": 1.0 if bold else 0.7, "ms": 7 if bold else 5, "mec": "black" if bold else "white",
            "mew": 0.8 if bold else 0.3, "zorder": 2 if bold else 3}  # thin lines on top: a thin line under a
    # bold one (FedProx's under FedAvg's) stays visible, and a bold line stays visible around a thin one


def _markevery(index: int, points: int) -> tuple[int, int]:
    """Markers on every ``step``-th point, starting at ``index mod step``: policies whose lines coincide
    show their markers at different points."""
    step = max(1, points // 6)
    return index % step, step


def _curve_panel(ax, x: dict, y: dict, styles: dict) -> None:
    """One line per policy: ``x[name]``, ``y[name]`` are ``(seeds, points)`` arrays; the mean is drawn,
    with a +-1 std band over seeds for the emphasised policies; markers staggered (:func:`_markevery`)."""
    for i, name in enumerate(y):
        xs, ys = x[name].mean(axis=0), y[name].mean(axis=0)
        ax.plot(xs, ys, label=name, markevery=_markevery(i, len(xs)), **_line_style(name, styles))
        if name in EMPHASISED:
            std = y[name].std(axis=0)
            ax.fill_between(xs, ys - std, ys + std, color=styles[name]["color"], alpha=0.15, lw=0)
    ax.grid(alpha=0.3)


def zoom_limits(y: dict, first: int, margin: float = 0.1) -> tuple[float, float]:
    """y-limits covering every policy's mean from point ``first`` on, and the +-1 std bands of the
    emphasised policies, widened by ``margin`` of their span on each side (``y[name]``: ``(seeds, points)``)."""
    low, high = np.inf, -np.inf
    for name, values in y.items():
        mean = values.mean(axis=0)[first:]
        spread = values.std(axis=0)[first:] if name in EMPHASISED else 0.0
        low, high = min(low, float(np.min(mean - spread))), max(high, float(np.max(mean + spread)))
    pad = margin * ((high - low) or 0.01)
    return low - pad, high + pad


def _zoom_inset(ax, x: dict, y: dict, styles: dict) -> None:
    """An inset of the last :data:`ZOOM_ROUNDS` of the rounds, its accuracy axis zoomed to the data there."""
    from matplotlib.ticker import MaxNLocator

    points = next(iter(y.values())).shape[1]
    first = int(points * (1 - ZOOM_ROUNDS))
    if points - first < 2:
        return
    inset = ax.inset_axes((0.42, 0.08, 0.55, 0.5))
    for i, name in enumerate(y):
        xs, ys = x[name].mean(axis=0)[first:], y[name].mean(axis=0)[first:]
        inset.plot(xs, ys, markevery=_markevery(i, len(xs)), **_line_style(name, styles))
    inset.set_xlim(first - 0.3, points - 0.7)
    inset.xaxis.set_major_locator(MaxNLocator(integer=True))
    inset.set_ylim(*zoom_limits(y, first))
    inset.set_title(f"rounds {first}-{points - 1}, zoomed", fontsize="small")
    inset.tick_params(labelsize="small")
    inset.grid(alpha=0.3)


def _traffic_panel(ax, upload: dict, styles: dict) -> None:
    """Cumulative traffic (upload, download or both) per round; policies with the same mean curve are drawn
    once, in the first one's style, and named together in the panel's upper left corner."""
    groups: list[list[str]] = []
    for name in upload:
        same = next((g for g in groups if np.allclose(upload[g[0]].mean(0), upload[name].mean(0))), None)
        same.append(name) if same else groups.append([name])
    notes = []
    for i, group in enumerate(groups):
        ys = upload[group[0]].mean(axis=0)
        ax.plot(np.arange(len(ys)), ys, markevery=_markevery(i, len(ys)), **_line_style(group[0], styles))
        if len(group) > 1:
            notes.append((" = ".join(group), styles[group[0]]["color"]))
    for i, (text, colour) in enumerate(notes):
        ax.text(0.03, 0.97 - 0.12 * i, ("one line, identical curves:\n" if i == 0 else "") + text,
                transform=ax.transAxes, va="top", fontsize="small", color=colour)
    ax.grid(alpha=0.3)


def _stack(records: list[EpisodeRecord], values) -> np.ndarray:
    series = [np.asarray(values(r), dtype=float) for r in records]
    length = min(len(s) for s in series)
    return np.stack([s[:length] for s in series])


def plot_learning_curves(records: dict[str, list[EpisodeRecord]], path: Path) -> None:
    """``learning_curves.png``: test accuracy after each round (with an inset zoomed to the last rounds,
    :func:`zoom_limits`), test accuracy against simulated time (one point per round at the mean time over
    seeds; linear time axis), and cumulative upload, download and traffic (upload + download) per round
    (policies with identical curves share one line, named together in the panel); lines are means over
    seeds, bands +-1 std over seeds for the emphasised policies."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    styles = policy_styles(list(records))
    accuracy = {n: _stack(eps, lambda r: r.test_accuracy) for n, eps in records.items()}
    rounds = {n: np.broadcast_to(np.arange(a.shape[1]), a.shape) for n, a in accuracy.items()}
    time = {n: _stack(eps, lambda r: r.wall_clock_s) for n, eps in records.items()}
    per_round = {n: {"upload": _stack(eps, lambda r: r.upload_mb), "download": _stack(eps, lambda r: r.download_mb)}
                 for n, eps in records.items()}
    directions = {"upload": ("upload",), "download": ("download",),
                  "traffic (upload + download)": ("upload", "download")}
    fig, grid = plt.subplots(2, 3, figsize=(16, 10))
    axes = grid.ravel()
    _curve_panel(axes[0], rounds, accuracy, styles)
    _zoom_inset(axes[0], rounds, accuracy, styles)
    _curve_panel(axes[1], time, accuracy, styles)
    axes[2].axis("off")
    for ax, (direction, parts) in zip(axes[3:], directions.items()):
        cumulative = {n: np.cumsum(np.pad(sum(mb[p] for p in parts), ((0, 0), (1, 0))), axis=1)
                      for n, mb in per_round.items()}
        _traffic_panel(ax, cumulative, styles)
        ax.set(xlabel="FL round", ylabel=f"cumulative {direction.split(' (')[0]} (MB)",
               title=f"cumulative {direction} per round")
    axes[0].set(xlabel="FL round", ylabel="test accuracy", title="accuracy per round")
    axes[1].set(xlabel="simulated wall-clock time (s)", ylabel="test accuracy",
                title="accuracy over simulated time (a marker per round)")
    for ax in (axes[0], *axes[3:]):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
    fig.legend(*axes[0].get_legend_handles_labels(), loc="center right", frameon=False, fontsize="small")
    seeds = len(next(iter(records.values())))
    fig.text(0.01, 0.01, f"Lines: mean over {seeds} evaluation episodes; bold: the learned policy and FedAvg, "
             "with a band of +-1 std over episodes; thin: the other policies.", fontsize="small")
    fig.tight_layout(rect=(0, 0.04, 0.9, 1))
    atomic_write(path, partial(fig.savefig, format="png", dpi=110))
    plt.close(fig)


def plot_results(records: dict[str, list[EpisodeRecord]], out_dir: str | Path) -> dict[str, Path]:
    """Write ``summary.png`` (:func:`plot_summary`) and ``learning_curves.png`` (:func:`plot_learning_curves`)
    into ``out_dir``; returns ``kind -> path``."""
    import matplotlib

    matplotlib.use("Agg")
    out_dir = Path(out_dir)
    paths = {"summary": out_dir / "summary.png", "learning_curves": out_dir / "learning_curves.png"}
    seeds = len({r.seed for episodes in records.values() for r in episodes})
    plot_summary(summarise(per_episode_metrics(records)), seeds, paths["summary"])
    plot_learning_curves(records, paths["learning_curves"])
    return paths
