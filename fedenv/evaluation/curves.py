"""The training curve of a VDN run from its TensorBoard logs, against the fixed policies' held-out means.

    python -m fedenv.evaluation.curves runs/<run> --reference results/<eval>/results.json
    python -m fedenv.evaluation.curves runs/<run> --reference results/<eval>/results.json --smooth 20
    python -m fedenv.evaluation.curves runs/<run> --reference results/<eval>/results.json --out curve.png

Two panels, team return and final test accuracy against training episodes: every training episode
(``charts/episodic_return``, ``fl/final_accuracy``), optionally smoothed by a trailing moving average
over ``--smooth`` episodes, the validation means of the greedy policy (``eval/team_return``,
``eval/final_accuracy``) when the run logged them, and one horizontal line per fixed policy at its mean
over the held-out seeds of an ``evaluate.py`` ``results.json`` (``--reference``). The printed lines say
at which episode each curve first reaches each policy's mean and from which episode on it stays at or
above it: early training episodes explore (epsilon near 1 selects about half the candidates at random),
so a first reach at episode 1 says what exploring scores, not that no training was needed.

The logs' x-axis is FL rounds played (``agents/tensorboard_log.py``); episodes are counted from the
events instead: the n-th ``charts/episodic_return`` event is training episode n, and a validation logged
after ``s`` FL rounds comes after the training episodes logged at or before ``s``. This holds with
``--num-envs``, early-terminated episodes and Ray rollouts alike, where ``rounds / num_rounds`` does not.
The events are read with TensorBoard's own ``EventAccumulator``, which drops the events a resumed run
purged (``purge_step``) as TensorBoard shows them.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from fedenv.cli import FlagParser
from fedenv.fileio import atomic_write

METRICS = {"team_return": "team return", "final_accuracy": "final test accuracy"}
"""The curves' metrics and their axis labels; each is a ``results.json`` summary column ``<metric>_mean``."""
TRAINING_TAGS = {"team_return": "charts/episodic_return", "final_accuracy": "fl/final_accuracy"}
VALIDATION_TAGS = {"team_return": "eval/team_return", "final_accuracy": "eval/final_accuracy"}
EVENT_FILE_GLOB = "events.out.tfevents.*"
DEFAULT_NAME = "training_curve.png"


@dataclass
class Curve:
    """One metric over training: ``values[i]`` was logged when ``episodes[i]`` training episodes had been
    played. Both have shape ``(n,)``."""

    episodes: np.ndarray
    values: np.ndarray


@dataclass
class TrainingCurves:
    """A run's curves by metric (:data:`METRICS`): every training episode, and the validation means
    (empty when the run logged no validation)."""

    run_dir: Path
    training: dict[str, Curve]
    validation: dict[str, Curve] = field(default_factory=dict)


def read_training_curves(run_dir: str | Path) -> TrainingCurves:
    """The training and validation curves logged in ``run_dir`` (a ``train_agents.py --run-dir``).

    Raises:
        FileNotFoundError: ``run_dir`` is not a folder or holds no event file (``events.out.tfevents.*``).
        ValueError: a training tag (:data:`TRAINING_TAGS`) is missing; the message lists the tags found.
    """
    from tensorboard.backend.event_processing import event_accumulator

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run folder {run_dir} does not exist")
    if not any(run_dir.glob(EVENT_FILE_GLOB)):
        raise FileNotFoundError(f"no TensorBoard event files ({EVENT_FILE_GLOB}) in {run_dir}: give the --run-dir "
                                f"of a train_agents.py run (with --seeds, one of its seed_<s> folders)")
    accumulator = event_accumulator.EventAccumulator(str(run_dir), size_guidance={event_accumulator.SCALARS: 0})
    accumulator.Reload()
    found = accumulator.Tags()["scalars"]
    missing = [tag for tag in TRAINING_TAGS.values() if tag not in found]
    if missing:
        raise ValueError(f"the event files in {run_dir} lack the tags {', '.join(missing)} (found: "
                         f"{', '.join(sorted(found)) or 'no scalars'}); a train_agents.py run logs them")
    training = {}
    for metric, tag in TRAINING_TAGS.items():
        events = accumulator.Scalars(tag)
        training[metric] = Curve(np.arange(1, len(events) + 1), np.array([e.value for e in events], dtype=float))
    ended = np.sort([e.step for e in accumulator.Scalars(TRAINING_TAGS["team_return"])])
    validation = {}
    for metric, tag in VALIDATION_TAGS.items():
        if tag in found:
            events = accumulator.Scalars(tag)
            validation[metric] = Curve(np.searchsorted(ended, [e.step for e in events], side="right"),
                                       np.array([e.value for e in events], dtype=float))
    return TrainingCurves(run_dir, training, validation)


def moving_average(values, window: int) -> np.ndarray:
    """Trailing moving average: element ``i`` is the mean of ``values[max(0, i - window + 1) : i + 1]``
    (the first ``window - 1`` over the values so far), so the smoothed curve has a point per episode and
    never looks ahead. ``values``: shape ``(n,)``; returns shape ``(n,)``.

    Raises:
        ValueError: ``window`` is not an integer >= 1.
    """
    if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 1:
        raise ValueError(f"moving-average window={window!r} must be an integer >= 1 (1: no smoothing)")
    values = np.asarray(values, dtype=float)
    sums = np.concatenate([[0.0], np.cumsum(values)])
    ends = np.arange(1, len(values) + 1)
    starts = np.maximum(0, ends - window)
    return (sums[ends] - sums[starts]) / (ends - starts)


def smoothed(curve: Curve, window: int) -> Curve:
    """``curve`` with its values replaced by their :func:`moving_average` over ``window`` episodes."""
    return Curve(curve.episodes, moving_average(curve.values, window))


def reference_means(results_path: str | Path, policies: list[str] | None = None) -> dict[str, dict[str, float]]:
    """``policy -> {metric: mean over the held-out seeds}`` from an ``evaluate.py`` ``results.json``
    (its ``summary`` rows, ``<metric>_mean``; None, a NaN, read as NaN).

    Args:
        policies: the rows to take, in this order; None: every fixed policy of the file (those of
            :data:`fedenv.registry.POLICIES`, so neither ``vdn`` nor a Stable-Baselines3 policy).

    Raises:
        FileNotFoundError: no such file. ValueError: not a results.json, a policy it does not hold, or
            (``policies`` None) no fixed policy in it.
    """
    from fedenv.registry import POLICIES

    results_path = Path(results_path)
    if not results_path.is_file():
        raise FileNotFoundError(f"reference file {results_path} does not exist (evaluate.py writes results.json)")
    try:
        rows = {row["policy"]: row for row in json.loads(results_path.read_text())["summary"]}
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ValueError(f"{results_path} is not an evaluate.py results.json ({error!r})") from error
    if policies is None:
        policies = [name for name in rows if name in POLICIES.names()]
        if not policies:
            raise ValueError(f"{results_path} holds no fixed policy (it has: {', '.join(rows)})")
    unknown = [name for name in policies if name not in rows]
    if unknown:
        raise ValueError(f"{results_path} has no policy {', '.join(unknown)}; it has: {', '.join(rows)}")

    def mean(value) -> float:
        return float("nan") if value is None else float(value)

    return {name: {metric: mean(rows[name][f"{metric}_mean"]) for metric in METRICS} for name in policies}


def first_episode_reaching(curve: Curve, level: float) -> int | None:
    """The first episode at which ``curve`` is at or above ``level`` (None if never)."""
    reached = np.flatnonzero(curve.values >= level)
    return int(curve.episodes[reached[0]]) if len(reached) else None


def first_episode_staying(curve: Curve, level: float) -> int | None:
    """The episode from which ``curve`` stays at or above ``level`` to its end: the one after its last
    episode below ``level`` (its first episode if it is never below; None if its last episode is below)."""
    below = np.flatnonzero(curve.values < level)
    if not len(below):
        return int(curve.episodes[0])
    return int(curve.episodes[below[-1] + 1]) if below[-1] + 1 < len(curve.values) else None


def describe_reaching(curve: Curve, level: float) -> str:
    """``first at episode A, at or above from episode B on``; ``first at episode A, below it at the last
    episode``; or ``never``."""
    first = first_episode_reaching(curve, level)
    if first is None:
        return "never"
    staying = first_episode_staying(curve, level)
    if staying is None:
        return f"first at episode {first}, below it at the last episode"
    return f"first at episode {first}, at or above from episode {staying} on"


def plot_training_curve(curves: TrainingCurves, path: str | Path, references: dict | None = None,
                        smooth: int = 1) -> Path:
    """Write the two-panel PNG (team return, final test accuracy against training episodes) to ``path``
    atomically: the training episodes (thin), their :func:`moving_average` over ``smooth`` episodes (bold,
    when ``smooth`` > 1), the validation means (diamonds) in black and grey, and a dashed horizontal line
    per reference policy (:func:`reference_means`) in its colour of the comparison's plots
    (:func:`~fedenv.evaluation.plots.policy_styles`). Returns ``path``.

    Raises:
        ValueError: ``smooth`` is not an integer >= 1.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    from fedenv.evaluation.plots import EMPHASISED, policy_styles

    averaged = {metric: smoothed(curve, smooth) for metric, curve in curves.training.items()}
    references = references or {}
    styles = policy_styles(list(references))
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    for ax, (metric, label) in zip(axes, METRICS.items()):
        curve = curves.training[metric]
        ax.plot(curve.episodes, curve.values, color="0.55" if smooth > 1 else "black", lw=0.8,
                label="training episodes")
        if smooth > 1:
            ax.plot(curve.episodes, averaged[metric].values, color="black", lw=2.2,
                    label=f"training, moving average over {smooth} episodes")
        if metric in curves.validation:
            check = curves.validation[metric]
            ax.plot(check.episodes, check.values, "D:", color="black", mfc="white", ms=6, lw=1.2,
                    label="validation (greedy policy, validation seeds)")
        level_x = np.linspace(float(curve.episodes[0]), float(curve.episodes[-1]), 6 * len(references) + 1)
        for i, (name, means) in enumerate(references.items()):
            # markers staggered along the line, in the policy's style: equal levels stay told apart
            bold = name in EMPHASISED
            ax.plot(level_x, np.full(len(level_x), means[metric]), ls="--", lw=2.2 if bold else 1.0,
                    color=styles[name]["color"], marker=styles[name]["marker"], ms=7 if bold else 5,
                    markevery=slice(i, None, len(references)), mec="black" if bold else "white", mew=0.5,
                    alpha=1.0 if bold else 0.8, zorder=3 if bold else 2, label=f"{name} (held-out mean)")
        ax.set(xlabel="training episode", ylabel=label, title=f"{label} during training")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="center right", frameon=False, fontsize="small")
    fig.text(0.01, 0.01, f"Run {curves.run_dir}. Dashed lines: each fixed policy's mean over the held-out seeds "
             "of the reference results.json (FedAvg bold; markers staggered so that equal levels stay apart).",
             fontsize="small")
    fig.tight_layout(rect=(0, 0.04, 0.78, 1))
    atomic_write(path, partial(fig.savefig, format="png", dpi=110))
    plt.close(fig)
    return Path(path)


def crossing_lines(curves: TrainingCurves, references: dict, smooth: int) -> list[str]:
    """One line per reference policy and metric: when the (smoothed) training curve and the validation
    curve first reach the policy's mean, and from which episode on they stay at or above it
    (:func:`describe_reaching`)."""
    lines = []
    for name, means in references.items():
        for metric, label in METRICS.items():
            found = {"training" + (f" (moving average over {smooth})" if smooth > 1 else ""):
                     describe_reaching(smoothed(curves.training[metric], smooth), means[metric])}
            if metric in curves.validation:
                found["validation"] = describe_reaching(curves.validation[metric], means[metric])
            lines.append(f"{name} {label} {means[metric]:.4g}: " + "; ".join(f"{k} {v}" for k, v in found.items()))
    return lines


def build_parser() -> FlagParser:
    parser = FlagParser(prog="python -m fedenv.evaluation.curves", usage="%(prog)s RUN_DIR [options]",
                        description=__doc__)
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a train_agents.py --run-dir (its TensorBoard logs)")
    parser.add_argument("--reference", default=None, metavar="RESULTS_JSON",
                        help="an evaluate.py results.json: its fixed policies' held-out means become horizontal lines")
    parser.add_argument("--reference-policies", default=None, metavar="NAMES",
                        help="comma-separated policies of --reference to draw (default: every fixed policy in it)")
    parser.add_argument("--smooth", type=int, default=1, metavar="W",
                        help="trailing moving average over W training episodes (default: %(default)s, no smoothing)")
    parser.add_argument("--out", default=None, metavar="PNG",
                        help=f"the figure (default: RUN_DIR/{DEFAULT_NAME})")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.reference_policies is not None and args.reference is None:
        parser.error("--reference-policies needs --reference RESULTS_JSON")
    if args.smooth < 1:
        parser.error(f"--smooth={args.smooth} must be >= 1 (1: no smoothing)")
    try:
        curves = read_training_curves(args.run_dir)
        names = args.reference_policies.split(",") if args.reference_policies else None
        references = reference_means(args.reference, names) if args.reference else {}
    except (FileNotFoundError, ValueError) as error:
        parser.error(str(error))
    path = plot_training_curve(curves, args.out or Path(args.run_dir) / DEFAULT_NAME, references, args.smooth)
    validations = len(curves.validation["team_return"].values) if "team_return" in curves.validation else 0
    print(f"{args.run_dir}: {len(curves.training['team_return'].values)} training episodes, {validations} validations")
    for line in crossing_lines(curves, references, args.smooth):
        print(line)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
