"""The learned-agent study's rows and bars (:mod:`benchmarks.agent_study`), computed from per-episode
metrics already evaluated (``policy name -> [episode dict]``, :func:`fedenv.evaluation.per_episode_metrics`):
per variant and setting its row (:func:`variant_row`), the paired differences between variants
(:func:`variant_differences`), the all-policies rows (:func:`policy_rows`) and the bars read from the rows
(:func:`bars`, the fine-tuning bar :func:`fine_tune_bars`); the bars are those of
:mod:`benchmarks.agent_study`'s docstring."""

from __future__ import annotations

import math

import numpy as np

from benchmarks.agent_study_settings import SETTINGS, TRANSFER_SETTINGS
from fedenv.evaluation.paired import (
    best_by_mean_return,
    interval_label,
    mean_interval,
    paired_interval,
    value_matrix,
)

MARGIN_FLOOR = 0.0
RATIO_TARGET = 1.2
"""The bars: margins with the interval above 0; the transfer ratio at least 1.2, its interval above 1."""
POLICY_METRICS = (("team_return", "team return", 3), ("final_accuracy", "final accuracy", 3),
                  ("total_latency_s", "latency (s)", 1), ("total_upload_mb", "upload (MB)", 1),
                  ("total_download_mb", "download (MB)", 1))
"""The columns of the all-policies table: per-episode metric, heading, decimals."""


def ratio_text(row: dict) -> str:
    """A row's return ratio to the best fixed policy and its interval as text, ``1.16x [1.06, 1.28]``; ``no
    ratio`` where the best fixed policy's mean return is not positive (the ratio is NaN then,
    :func:`fedenv.evaluation.paired.ratio_of_means`), ``no interval`` where the bounds are NaN."""
    if math.isnan(row["ratio"]):
        return f"no ratio ({row['best_fixed']}'s return {row['best_fixed_return']:.3f} is not positive)"
    if math.isnan(row["ratio_low"]):
        return f"{row['ratio']:.2f}x [no interval]"
    return f"{row['ratio']:.2f}x [{row['ratio_low']:.2f}, {row['ratio_high']:.2f}]"


def signed_interval(value: float, low: float, high: float, digits: int = 3) -> str:
    """A difference and its interval as text, signed: ``+0.012 [-0.004, +0.030]``."""
    return f"{value:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def variant_row(per_episode: dict[str, list[dict]], variant: str, fixed: list[str], scheduled: list[str],
                seeds: list[int], references: list[str] = ()) -> dict:
    """One variant at one setting: its mean return, the best fixed policy and schedule (and the best of the
    ``references``, policies outside the bars, when given), the paired differences and the return ratio to the
    best fixed policy with their intervals, the spread over runs."""
    values = value_matrix(per_episode[variant], "team_return", seeds)
    row = {"variant": variant, "runs": len(values), "seeds": len(seeds), "return": float(values.mean()),
           "run_std": float(values.mean(axis=1).std(ddof=1)) if len(values) > 1 else float("nan")}
    for role, names in (("fixed", fixed), ("schedule", scheduled), ("reference", references)):
        if not names:
            continue
        best = best_by_mean_return(per_episode, names)
        reference = value_matrix(per_episode[best], "team_return", seeds)[0]
        difference, low, high = paired_interval(values, reference)
        row.update({f"best_{role}": best, f"best_{role}_return": float(reference.mean()),
                    f"minus_{role}": difference, f"minus_{role}_low": low, f"minus_{role}_high": high,
                    f"minus_{role}_label": interval_label(low, high)})
        if role == "fixed":
            ratio, low, high = paired_interval(values, reference, statistic="ratio")
            row.update({"ratio": ratio, "ratio_low": low, "ratio_high": high})
    return row


def variant_differences(per_episode: dict[str, list[dict]], pairs: list[tuple[str, str]],
                        seeds: list[int]) -> list[dict]:
    """``variant minus reference variant`` in team return for each ``(variant, reference)`` pair, paired on
    the seeds with both sides' training runs resampled (:func:`~fedenv.evaluation.paired.paired_interval`):
    e.g. a shorter training run against the main job's."""
    out = []
    for variant, reference in pairs:
        difference, low, high = paired_interval(value_matrix(per_episode[variant], "team_return", seeds),
                                                value_matrix(per_episode[reference], "team_return", seeds))
        out.append({"variant": variant, "reference": reference, "difference": difference, "low": low, "high": high,
                    "label": interval_label(low, high)})
    return out


def setting_differences(setting: str, per_episode: dict[str, list[dict]], pairs: list[tuple[str, str]],
                        seeds: list[int]) -> list[dict]:
    """:func:`variant_differences` in one setting for the pairs whose two variants were both evaluated there
    (in a transfer setting only the ``--transfer-variants`` are), each difference tagged ``setting``."""
    evaluated = [(a, b) for a, b in pairs if a in per_episode and b in per_episode]
    return [{"setting": setting, **d} for d in variant_differences(per_episode, evaluated, seeds)]


def probing_mode(episodes: list[dict]) -> str:
    """How a policy's episodes played: ``probing`` (every episode with a probing epoch), ``no probing``
    (none), ``mixed``, or ``not recorded`` when an episode lacks the field."""
    modes = {episode.get("probing") for episode in episodes}
    if None in modes:
        return "not recorded"
    return "mixed" if len(modes) > 1 else "probing" if modes == {True} else "no probing"


def policy_rows(per_episode: dict[str, list[dict]], kinds: dict[str, list[str]], seeds: list[int],
                best_fixed: str | None = None) -> list[dict]:
    """The all-policies table of one setting: one row per policy of ``kinds`` (``kind -> policy names``,
    e.g. ``learned``, ``fixed``, ``schedule``, ``reference``; rows in that order), from the per-episode metrics
    already evaluated; with ``best_fixed`` (the setting's best fixed policy), each row's return ratio to it, so
    that a reference rule (a demonstrator) or a schedule is read against the transfer bar as a variant is.

    Returns:
        Rows of ``kind``, ``policy``, ``probing`` (:func:`probing_mode`), ``runs``, ``seeds`` and, for each
        metric of :data:`POLICY_METRICS`, ``{metric}`` (the mean over runs x seeds, in the metric's unit),
        ``{metric}_low`` and ``{metric}_high`` (its 95 % bootstrap interval,
        :func:`~fedenv.evaluation.paired.mean_interval`: seeds and whole runs resampled); with ``best_fixed``
        also ``best_fixed``, ``best_fixed_return`` and ``ratio``, ``ratio_low``, ``ratio_high``: the ratio of
        the mean team returns paired on the seeds (:func:`~fedenv.evaluation.paired.paired_interval`, as
        :func:`variant_row`; read by :func:`ratio_text`).

    Raises:
        ValueError: a policy (or ``best_fixed``) that did not run, or a run that lacks one of ``seeds`` (the
            message names it).
    """
    for name in [*(n for names in kinds.values() for n in names), *([best_fixed] if best_fixed else [])]:
        if name not in per_episode:
            raise ValueError(f"policy {name!r} did not run; ran: {', '.join(per_episode)}")
    reference = value_matrix(per_episode[best_fixed], "team_return", seeds)[0] if best_fixed else None
    rows = []
    for kind, names in kinds.items():
        for name in names:
            matrices = {metric: value_matrix(per_episode[name], metric, seeds) for metric, _, _ in POLICY_METRICS}
            row = {"kind": kind, "policy": name, "probing": probing_mode(per_episode[name]),
                   "runs": len(matrices["team_return"]), "seeds": len(seeds)}
            for metric, values in matrices.items():
                row[metric], row[f"{metric}_low"], row[f"{metric}_high"] = mean_interval(values)
            if reference is not None:
                ratio, low, high = paired_interval(matrices["team_return"], reference, statistic="ratio")
                row.update({"best_fixed": best_fixed, "best_fixed_return": float(reference.mean()),
                            "ratio": ratio, "ratio_low": low, "ratio_high": high})
            rows.append(row)
    return rows


def bars(rows: dict[str, dict[str, dict]], variant: str) -> list[tuple[str, bool | None]]:
    """The bars of :mod:`benchmarks.agent_study`'s docstring for ``variant``: ``(description, met)``, None where
    not measured."""
    trained = rows.get("trained", {}).get(variant)
    out = []
    if trained:
        for role in ("fixed", "schedule"):
            if f"minus_{role}" in trained:
                what = "fixed policy" if role == "fixed" else "open-loop schedule"
                out.append((f"beats the best {what} ({trained[f'best_{role}']}): interval above 0",
                            trained[f"minus_{role}_low"] > MARGIN_FLOOR))
        if "minus_fixed" in trained and not np.isnan(trained["run_std"]):
            out.append(("spread over training runs at most half the margin over the best fixed policy",
                        bool(trained["minus_fixed"] > 0 and trained["run_std"] <= trained["minus_fixed"] / 2)))
    for setting in TRANSFER_SETTINGS:
        row = rows.get(setting, {}).get(variant)
        if row and "ratio" in row:
            out.append((f"{SETTINGS[setting].at}: return at least {RATIO_TARGET}x the best fixed policy's, "
                        "interval above 1", bool(row["ratio"] >= RATIO_TARGET and row["ratio_low"] > 1.0)))
        if row and "ft_minus_zero_shot" in row:
            out += fine_tune_bars(setting, variant, row["ft_minus_zero_shot"], row.get("zero_shot_minus_scratch"))
    return out


def fine_tune_bars(setting: str, variant: str, tuned: dict, scratch: dict | None) -> list[tuple[str, bool | None]]:
    """The fine-tuning bar of ``variant`` at ``setting`` (FedMarl, Zhang et al., AAAI 2022, arXiv 2201.02932,
    Sec. 5, Table 3), from the differences of :func:`variant_differences`: ``tuned`` (the fine-tuned variant
    minus ``variant``) and ``scratch`` (``variant`` minus the scratch variant of ``setting``; None without one).

    Returns:
        ``(description, met)``: fine-tuned minus zero-shot not worse (its interval's upper bound >= 0); and,
        where the zero-shot variant trails the scratch one (an interval below 0), fine-tuned minus zero-shot
        better (interval above 0); met where it does not trail (no gap to close); without a scratch variant
        or an interval, met where fine-tuned minus zero-shot is better (it holds whether or not the zero-shot
        variant trails), else None (not measured).
    """
    name = tuned["variant"]
    at = SETTINGS[setting].at
    out = [(f"{at}: {name} minus {variant} not worse (interval's upper bound >= 0)",
            bool(tuned["high"] >= 0))]
    if scratch is None or scratch["label"] is None:
        why = f"no --scratch {setting}:NAME=GLOB" if scratch is None else "no interval"
        if tuned["low"] > 0:
            out.append((f"{at}: {name} better than {variant} "
                        f"({signed_interval(tuned['difference'], tuned['low'], tuned['high'])}), so better "
                        f"wherever {variant} trails an agent trained there from scratch ({why})", True))
        else:
            out.append((f"{at}: {name} better than {variant} where {variant} trails an agent "
                        f"trained there from scratch: not measured ({why})", None))
    elif scratch["label"] == "worse":
        out.append((f"{at}: {variant} trails {scratch['reference']} (trained there from "
                    f"scratch; {signed_interval(scratch['difference'], scratch['low'], scratch['high'])} worse), so "
                    f"{name} minus {variant} better (interval above 0)", bool(tuned["low"] > 0)))
    else:
        out.append((f"{at}: {variant} does not trail {scratch['reference']} (trained there "
                    f"from scratch; {signed_interval(scratch['difference'], scratch['low'], scratch['high'])} "
                    f"{scratch['label']}): no gap for {name} to close", True))
    return out

