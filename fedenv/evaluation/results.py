"""The comparison's result files: ``results.csv``, ``results.json`` and the plots."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from fedenv.config import EnvConfig
from fedenv.evaluation.metrics import METRICS, per_episode_metrics, summarise, summarise_by_checkpoint
from fedenv.evaluation.paired import COMPARED_METRICS, compare_to_references, per_seed_differences
from fedenv.evaluation.plots import plot_results
from fedenv.evaluation.rollout import EpisodeRecord
from fedenv.fileio import atomic_write_json, atomic_write_text

RESULT_FILES = ("results.csv", "results.json", "summary.png", "learning_curves.png")
"""The files :func:`write_results` writes into its folder (``evaluate.py --out`` refuses a folder holding
them without ``--overwrite``)."""


def write_results(out_dir: str | Path, records: dict[str, list[EpisodeRecord]],
                  env_config: EnvConfig, transfer: dict | None = None,
                  paired: tuple[dict[str, str], list[dict]] | None = None,
                  methods: dict[str, dict] | None = None) -> dict[str, Path]:
    """Write ``results.csv`` (one row per policy and episode, with its probing mode and checkpoint),
    ``results.json`` and the plots (:func:`~fedenv.evaluation.plots.plot_results`), each atomically.

    ``paired`` is ``(references, paired differences)`` of
    :func:`~fedenv.evaluation.paired.compare_to_references` (computed here when omitted). Each row of
    ``results.csv`` then also holds, for each reference role ``r`` (``fedavg``, ``best_fixed``) and each
    metric ``m`` of :data:`~fedenv.evaluation.paired.COMPARED_METRICS`: ``m_minus_r``, the episode's value
    minus the reference's on the same seed, and the policy's interval ``m_minus_r_ci_low``,
    ``m_minus_r_ci_high`` and ``m_minus_r_label`` (the same on each of the policy's rows; empty on the
    reference's own rows).

    ``results.json`` holds ``env_config`` (the base one: each policy ran with its ``env_overrides`` and
    its probing mode, the ``probing`` column), ``summary`` (one row per policy), ``summary_per_checkpoint``
    (one row per checkpoint of a policy from several training runs), ``references`` (role -> policy),
    ``paired_differences`` (:func:`~fedenv.evaluation.paired.paired_differences` rows), ``episodes``
    (per-episode metrics), ``records`` (round by round), with a learned policy ``transfer``
    (``trained_on`` / ``evaluated_on``: the EnvConfig fields that differ,
    :func:`~fedenv.evaluation.transfer.config_differences`) and, with ``methods``, ``methods``: per policy
    the EnvConfig fields it ran with that differ from ``env_config`` (``ran``: its method's settings and
    its probing mode) and the settings given that its method replaced (``overridden``,
    :func:`~fedenv.evaluation.compare.method_overrides`).

    Returns:
        ``kind -> path`` of the written files.
    """
    out_dir = Path(out_dir)
    per_episode = per_episode_metrics(records)
    references, differences = paired if paired is not None else compare_to_references(per_episode)
    per_seed = per_seed_differences(per_episode, references)
    intervals = {(d["policy"], f"{d['metric']}_minus_{d['role']}"): d for d in differences}
    paired_columns = [f"{m}_minus_{role}" for role in references for m in COMPARED_METRICS]
    text = io.StringIO()
    fieldnames = ["policy", "probing", "checkpoint", "seed", *METRICS,
                  *(f"{c}{suffix}" for c in paired_columns for suffix in ("", "_ci_low", "_ci_high", "_label"))]
    writer = csv.DictWriter(text, fieldnames=fieldnames, lineterminator="\n")
    writer.writeheader()
    for name, episodes in per_episode.items():
        for episode, differences_on_seed in zip(episodes, per_seed[name]):
            row = {"policy": name, **episode}
            for column in paired_columns:
                interval = intervals.get((name, column))
                if interval is not None:
                    row.update({column: differences_on_seed[column], f"{column}_ci_low": interval["ci_low"],
                                f"{column}_ci_high": interval["ci_high"], f"{column}_label": interval["label"]})
            writer.writerow(row)
    paths = {"csv": out_dir / "results.csv", "json": out_dir / "results.json"}
    atomic_write_text(paths["csv"], text.getvalue())
    document = {
        "env_config": env_config.to_dict(),
        "summary": summarise(per_episode),
        "summary_per_checkpoint": summarise_by_checkpoint(per_episode),
        "references": references,
        "paired_differences": differences,
        "episodes": per_episode,
        "records": {name: [r.to_dict() for r in episodes] for name, episodes in records.items()},
    }
    if transfer is not None:
        document["transfer"] = transfer
    if methods is not None:
        document["methods"] = methods
    atomic_write_json(paths["json"], document)
    paths.update(plot_results(records, out_dir))
    return paths

