"""Paired differences against a named reference policy, with bootstrap confidence intervals.

Every policy of a comparison runs the same evaluation seeds (:mod:`fedenv.evaluation.compare`), so on a
seed all policies see the same partition, initial model, trace assignment and candidate draws. A policy's
difference to a reference is therefore taken seed by seed (paired), and its 95 % confidence interval comes
from a bootstrap that keeps the pairs: a resampled seed brings the policy's and the reference's episodes
on that seed together. A learned policy evaluated from several checkpoints (training runs) has a
``(runs, seeds)`` matrix of values; its interval then resamples training runs too, each run as a whole
(all its seeds), independently of the seeds: the between-run spread is part of the uncertainty (Agarwal
et al., "Deep Reinforcement Learning at the Edge of the Statistical Precipice", NeurIPS 2021, Sec. 4,
whose ``rliable`` library reports percentile bootstrap intervals over runs). The resampling is
``scipy.stats.bootstrap`` (percentile method, seeded); "better", "level" and "worse" are read from the
interval alone: it lies above 0, contains 0, or lies below 0. :func:`mean_interval` gives one policy's
plain mean with the interval of the same resampling (seeds, and whole runs), for tables of every metric.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping

import numpy as np
from scipy import stats

from fedenv.names import check_known

COMPARED_METRICS = ("team_return", "final_accuracy")
"""The metrics whose paired difference is reported; for both, higher is better."""

CONFIDENCE_LEVEL = 0.95
BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_SEED = 0
"""The bootstrap's defaults: a 95 % interval from 9999 resamples, drawn from ``numpy.random.default_rng(0)``."""

STATISTICS = ("difference", "ratio")
"""What :func:`paired_interval` compares: the difference of the means, or their ratio."""

REFERENCE_ROLES = ("fedavg", "best_fixed")
"""The references every comparison reports against: FedAvg, and the fixed policy of the highest mean team
return (column and key names in the result files)."""


def paired_interval(values: np.ndarray, reference: np.ndarray, confidence_level: float = CONFIDENCE_LEVEL,
                    n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED,
                    statistic: str = "difference") -> tuple[float, float, float]:
    """The mean paired difference ``mean(values) - mean(reference)`` (or, with ``statistic="ratio"``, the
    ratio of the means ``mean(values) / mean(reference)``, FedMarl's "x times higher total reward") and its
    bootstrap confidence interval.

    Args:
        values: ``(R, S)`` the policy's metric for each of ``R`` training runs (1 for a fixed policy) on
            each of ``S`` evaluation seeds; ``(S,)`` is one run.
        reference: ``(S,)`` the reference policy's metric on the same seeds, in the same order; or
            ``(R', S)`` for a reference from ``R'`` training runs (one learner variant against another).
        confidence_level: in (0, 1). n_resamples: bootstrap resamples, >= 1. seed: the resampling's seed.
        statistic: ``difference`` or ``ratio`` (:data:`STATISTICS`); a ratio reads as "x times" only
            when the reference's mean is positive, so it is NaN where it is not (:func:`ratio_of_means`).

    Returns:
        ``(statistic, low, high)``: the difference (or ratio) of the means and the interval's bounds (percentile
        bootstrap, ``scipy.stats.bootstrap``): seeds resampled as pairs and, for a side with several runs,
        its runs resampled independently of the seeds and of the other side's, each as a whole. The bounds
        are NaN with fewer than 2 seeds or a non-finite value, and for a ratio unless the reference's mean is
        positive in every resample (a team return can be negative: it subtracts latency and traffic).

    Raises:
        ValueError: shapes that do not pair (the message gives them), a confidence level outside (0, 1), or
            an unknown statistic.
    """
    check_known(statistic, STATISTICS, "statistic")
    values = np.atleast_2d(np.asarray(values, dtype=np.float64))
    reference = np.asarray(reference, dtype=np.float64)
    if (values.ndim != 2 or reference.ndim not in (1, 2) or values.shape[1] != reference.shape[-1]
            or values.shape[0] < 1 or reference.size == 0):
        raise ValueError(f"values of shape {values.shape} and reference of shape {reference.shape} do not pair: "
                         "give (runs, seeds) and (seeds,) or (runs, seeds)")
    reference = np.atleast_2d(reference)
    combine = np.subtract if statistic == "difference" else ratio_of_means
    value = float(combine(values.mean(), reference.mean()))
    low, high = _bootstrap_interval((values, reference), combine, confidence_level, n_resamples, seed)
    return value, low, high


def ratio_of_means(mean: np.ndarray, reference_mean: np.ndarray) -> np.ndarray:
    """``mean / reference_mean`` elementwise where ``reference_mean > 0``, NaN elsewhere: "x times the
    reference" has no meaning for a reference at or below 0 (a policy at 1.2x a negative return is worse)."""
    positive = np.asarray(reference_mean) > 0
    return np.where(positive, np.divide(mean, np.where(positive, reference_mean, 1.0)), np.nan)


def mean_interval(values: np.ndarray, confidence_level: float = CONFIDENCE_LEVEL,
                  n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> tuple[float, float, float]:
    """The mean of one policy's metric over training runs x evaluation seeds and its bootstrap confidence
    interval, resampled as :func:`paired_interval` resamples one side: the seeds and, with several runs,
    the runs independently of the seeds, each run as a whole (all its seeds); the percentile interval over
    runs that ``rliable`` reports (Agarwal et al., NeurIPS 2021, Sec. 4), with the seeds resampled too.

    Args:
        values: ``(R, S)`` the metric (in its own unit, e.g. seconds or MB) for each of ``R`` training runs
            (1 for a fixed policy) on each of ``S`` evaluation seeds; ``(S,)`` is one run.
        confidence_level: in (0, 1). n_resamples: bootstrap resamples, >= 1. seed: the resampling's seed.

    Returns:
        ``(mean, low, high)``: the mean over all ``R x S`` values and the percentile bootstrap interval's
        bounds (``scipy.stats.bootstrap``), in the metric's unit. The bounds are NaN with fewer than 2
        seeds or a non-finite value.

    Raises:
        ValueError: values that are not ``(S,)`` or ``(R, S)`` with ``R, S >= 1`` (the message gives the
            shape), or a confidence level outside (0, 1).
    """
    values = np.atleast_2d(np.asarray(values, dtype=np.float64))
    if values.ndim != 2 or values.size == 0:
        raise ValueError(f"values of shape {values.shape}: give (runs, seeds) or (seeds,), at least one of each")
    low, high = _bootstrap_interval((values,), lambda mean: mean, confidence_level, n_resamples, seed)
    return float(values.mean()), low, high


def _bootstrap_interval(sides: tuple[np.ndarray, ...], combine, confidence_level: float, n_resamples: int,
                        seed: int) -> tuple[float, float]:
    """The percentile bootstrap interval of ``combine(*means)``, the means of ``sides`` (``(R, S)`` matrices
    on the same ``S`` seeds): the seeds resampled once for all sides (pairs kept) and each side with
    ``R > 1`` its runs resampled as whole runs, independently. NaN bounds with fewer than 2 seeds or a
    non-finite value.

    Raises:
        ValueError: a confidence level outside (0, 1).
    """
    if not 0.0 < confidence_level < 1.0:
        raise ValueError(f"confidence_level={confidence_level} must be in (0, 1)")
    seeds = sides[0].shape[1]
    if seeds < 2 or not all(np.isfinite(side).all() for side in sides):
        return math.nan, math.nan
    resampled_runs = [side for side in sides if len(side) > 1]

    def mean_of(side, seed_index, run_index):
        if run_index is None:
            run_index = np.zeros(np.shape(seed_index)[:-1] + (1,), dtype=np.int64)
        return side[run_index[..., :, None], seed_index[..., None, :]].mean(axis=(-2, -1))  # runs x seeds drawn

    def resampled(seed_index, *run_indices, axis=-1):
        drawn = iter(run_indices)
        return combine(*(mean_of(side, seed_index, next(drawn) if len(side) > 1 else None) for side in sides))

    data = (np.arange(seeds), *(np.arange(len(side)) for side in resampled_runs))
    with warnings.catch_warnings():  # equal values give a zero-width interval, a NaN ratio NaN bounds: both meant
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        result = stats.bootstrap(data, resampled, n_resamples=n_resamples, vectorized=True, paired=False,
                                 confidence_level=confidence_level, method="percentile",
                                 rng=np.random.default_rng(seed))
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def interval_label(low: float, high: float) -> str | None:
    """``"better"`` when the interval of a higher-is-better difference lies above 0, ``"worse"`` below 0,
    ``"level"`` when it contains 0; None without an interval (NaN bounds)."""
    if math.isnan(low) or math.isnan(high):
        return None
    return "better" if low > 0 else "worse" if high < 0 else "level"


def reference_policies(per_episode: Mapping[str, list[dict]], fixed: Iterable[str]) -> dict[str, str]:
    """``role -> policy name`` of the references (:data:`REFERENCE_ROLES`) present in a comparison:
    ``fedavg`` when it ran, and ``best_fixed``, the policy of ``fixed`` (the fixed policies run) with the
    highest mean team return (the first of equals, in the comparison's order)."""
    fixed = [name for name in per_episode if name in set(fixed)]
    references = {"fedavg": "fedavg"} if "fedavg" in per_episode else {}
    if fixed:
        references["best_fixed"] = best_by_mean_return(per_episode, fixed)
    return references


def best_by_mean_return(per_episode: Mapping[str, list[dict]], names: Iterable[str]) -> str:
    """The policy of ``names`` (at least one) with the highest mean team return over its episodes in
    ``per_episode``; the first of equals, in the order of ``names``. Best in hindsight, which favours it."""
    return max(names, key=lambda name: float(np.mean([e["team_return"] for e in per_episode[name]])))


def value_matrix(episodes: list[dict], metric: str, seeds: list[int]) -> np.ndarray:
    """``(runs, seeds)`` values of ``metric`` of one policy's episodes, runs (checkpoints; one row for a
    fixed policy) in order of first appearance, seeds in the order of ``seeds``.

    Raises:
        ValueError: a run that lacks one of ``seeds`` or has one twice (the message names it).
    """
    runs: dict = {}
    for episode in episodes:
        runs.setdefault(episode.get("checkpoint"), {})
        if episode["seed"] in runs[episode.get("checkpoint")]:
            raise ValueError(f"checkpoint {episode.get('checkpoint')!r} has seed {episode['seed']} twice")
        runs[episode.get("checkpoint")][episode["seed"]] = episode[metric]
    for run, by_seed in runs.items():
        if sorted(by_seed) != sorted(seeds):
            raise ValueError(f"checkpoint {run!r} ran seeds {sorted(by_seed)}, not the reference's {sorted(seeds)}: "
                             "paired differences need the same seeds")
    return np.array([[by_seed[s] for s in seeds] for by_seed in runs.values()], dtype=np.float64)


def paired_differences(per_episode: Mapping[str, list[dict]], references: Mapping[str, str],
                       metrics: tuple[str, ...] = COMPARED_METRICS, confidence_level: float = CONFIDENCE_LEVEL,
                       n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> list[dict]:
    """Every policy's paired difference against each reference, per metric (:func:`paired_interval`).

    Args:
        per_episode: :func:`~fedenv.evaluation.metrics.per_episode_metrics` of the comparison.
        references: ``role -> reference policy`` (:func:`reference_policies`); a reference run from
            several checkpoints is refused.

    Returns:
        One row per (reference role, policy other than the reference, metric), in that order: ``policy``,
        ``reference`` (its name), ``role``, ``metric``, ``difference`` (policy mean minus reference mean),
        ``ci_low``, ``ci_high``, ``label`` (:func:`interval_label`), ``confidence_level``, ``seeds`` and
        ``runs`` (the policy's training runs, 1 for a fixed policy), ``resamples``, ``bootstrap_seed``.

    Raises:
        ValueError: a reference that did not run or ran from several checkpoints, or a policy whose
            seeds differ from the reference's.
    """
    rows = []
    for role, name in references.items():
        if name not in per_episode:
            raise ValueError(f"reference {name!r} ({role}) did not run; ran: {', '.join(per_episode)}")
        seeds = list(dict.fromkeys(e["seed"] for e in per_episode[name]))
        for policy, episodes in per_episode.items():
            if policy == name:
                continue
            for metric in metrics:
                reference = value_matrix(per_episode[name], metric, seeds)
                if len(reference) != 1:
                    raise ValueError(f"reference {name!r} ran from {len(reference)} checkpoints; a reference is "
                                     "one policy")
                values = value_matrix(episodes, metric, seeds)
                difference, low, high = paired_interval(values, reference[0], confidence_level, n_resamples, seed)
                rows.append({"policy": policy, "reference": name, "role": role, "metric": metric,
                             "difference": difference, "ci_low": low, "ci_high": high,
                             "label": interval_label(low, high), "confidence_level": confidence_level,
                             "seeds": len(seeds), "runs": len(values), "resamples": n_resamples,
                             "bootstrap_seed": seed})
    return rows


def per_seed_differences(per_episode: Mapping[str, list[dict]], references: Mapping[str, str],
                         metrics: tuple[str, ...] = COMPARED_METRICS) -> dict[str, list[dict]]:
    """``policy -> one dict per episode`` (in the order of ``per_episode``) of ``{metric}_minus_{role}``:
    the episode's value minus the reference's on the same seed (NaN for the reference's own episodes)."""
    out = {}
    for policy, episodes in per_episode.items():
        rows = []
        for episode in episodes:
            row = {}
            for role, name in references.items():
                by_seed = {e["seed"]: e for e in per_episode[name]}
                for metric in metrics:
                    same = by_seed.get(episode["seed"])
                    row[f"{metric}_minus_{role}"] = (math.nan if policy == name or same is None
                                                     else episode[metric] - same[metric])
            rows.append(row)
        out[policy] = rows
    return out


def compare_to_references(per_episode: Mapping[str, list[dict]]) -> tuple[dict[str, str], list[dict]]:
    """The references of a comparison (:func:`reference_policies`) and every policy's paired differences to
    them (:func:`paired_differences` with its defaults). The fixed policies that can be the best fixed one
    are those ``--policies all`` compares (:func:`fedenv.baselines.compared_policies`: the seed papers'
    baselines, ``random`` and ``fastest``, also with options, ``oort:select_fraction=0.5``), run without a
    checkpoint. Policies outside them (``stale-fastest``, ``late-rounds``, ``oracle-fastest``, ``select-all``:
    diagnostics and references of ours) are compared to the references but are never the yardstick."""
    from fedenv.baselines.factory import compared_policies

    yardsticks = set(compared_policies())
    fixed = [name for name, episodes in per_episode.items()
             if name.partition(":")[0] in yardsticks and all(e.get("checkpoint") is None for e in episodes)]
    references = reference_policies(per_episode, fixed)
    return references, paired_differences(per_episode, references)
