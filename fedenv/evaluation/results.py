"""The comparison's result files: ``results.csv``, ``results.json`` and the plots."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from fedenv.config import EnvConfig
from fedenv.evaluation.metrics import METRICS, per_episode_metrics, summarise, summarise_by_checkpoint
from fedenv.evaluation.plots import plot_results
from fedenv.evaluation.rollout import EpisodeRecord
from fedenv.fileio import atomic_write_json, atomic_write_text

RESULT_FILES = ("results.csv", "results.json", "summary.png", "learning_curves.png")
"""The files :func:`write_results` writes into its folder (``evaluate.py --out`` refuses a folder holding
them without ``--overwrite``)."""


def write_results(out_dir: str | Path, records: dict[str, list[EpisodeRecord]],
                  env_config: EnvConfig, transfer: dict | None = None) -> dict[str, Path]:
    """Write ``results.csv`` (one row per policy and episode, with its probing mode and checkpoint),
    ``results.json`` and the plots (:func:`~fedenv.evaluation.plots.plot_results`), each atomically.

    ``results.json`` holds ``env_config`` (the base one: each policy ran with its ``env_overrides`` and
    its probing mode, the ``probing`` column), ``summary`` (one row per policy), ``summary_per_checkpoint``
    (one row per checkpoint of a policy from several training runs), ``episodes`` (per-episode metrics),
    ``records`` (round by round) and, with a learned policy, ``transfer`` (``trained_on`` /
    ``evaluated_on``: the EnvConfig fields that differ, :func:`~fedenv.evaluation.transfer.config_differences`).

    Returns:
        ``kind -> path`` of the written files.
    """
    out_dir = Path(out_dir)
    per_episode = per_episode_metrics(records)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=["policy", "probing", "checkpoint", "seed", *METRICS], lineterminator="\n")
    writer.writeheader()
    for name, episodes in per_episode.items():
        for episode in episodes:
            writer.writerow({"policy": name, **episode})
    paths = {"csv": out_dir / "results.csv", "json": out_dir / "results.json"}
    atomic_write_text(paths["csv"], text.getvalue())
    document = {
        "env_config": env_config.to_dict(),
        "summary": summarise(per_episode),
        "summary_per_checkpoint": summarise_by_checkpoint(per_episode),
        "episodes": per_episode,
        "records": {name: [r.to_dict() for r in episodes] for name, episodes in records.items()},
    }
    if transfer is not None:
        document["transfer"] = transfer
    atomic_write_json(paths["json"], document)
    paths.update(plot_results(records, out_dir))
    return paths

