"""Per-episode metrics of a comparison, and their mean and spread over evaluation seeds and training runs."""

from __future__ import annotations

import numpy as np

from fedenv.evaluation.rollout import EpisodeRecord

METRICS = ("final_accuracy", "rounds_to_fedavg", "total_latency_s", "total_upload_mb", "total_download_mb",
           "total_traffic_mb", "team_return")
"""Per-episode metrics: final test accuracy, rounds to the reference's final test accuracy, summed round
latency (s), summed upload, download and both (MB), and the team return."""


def per_episode_metrics(records: dict[str, list[EpisodeRecord]], reference: str = "fedavg") -> dict[str, list[dict]]:
    """Metrics of every episode (:data:`METRICS`), with its ``seed``, ``probing`` mode and ``checkpoint``
    (None for fixed policies). ``rounds_to_fedavg``: first round reaching the reference policy's final test
    accuracy on the same seed (NaN when never reached, or when the reference was not run)."""
    targets = {r.seed: r.final_accuracy for r in records.get(reference, [])}
    out = {}
    for name, episodes in records.items():
        rows = []
        for r in episodes:
            reached = r.rounds_to(targets[r.seed]) if r.seed in targets else None
            rows.append({
                "seed": r.seed,
                "probing": r.probing,
                "checkpoint": r.checkpoint,
                "final_accuracy": r.final_accuracy,
                "rounds_to_fedavg": float("nan") if reached is None else float(reached),
                "total_latency_s": r.total_latency_s,
                "total_upload_mb": r.total_upload_mb,
                "total_download_mb": r.total_download_mb,
                "total_traffic_mb": r.total_traffic_mb,
                "team_return": r.team_return,
            })
        out[name] = rows
    return out


def _finite_mean(values) -> float:
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    return float(finite.mean()) if len(finite) else float("nan")


def _finite_std(values) -> float:
    finite = np.asarray(values, dtype=float)
    finite = finite[np.isfinite(finite)]
    return float(finite.std()) if len(finite) else float("nan")


def _grouped_means(episodes: list[dict], metric: str, key: str) -> list[float]:
    """Mean of ``metric`` (NaN left out) within each group of episodes sharing ``key`` (a seed or a
    checkpoint), in order of first appearance."""
    groups: dict = {}
    for episode in episodes:
        groups.setdefault(episode[key], []).append(episode[metric])
    return [_finite_mean(values) for values in groups.values()]


def summarise(per_episode: dict[str, list[dict]]) -> list[dict]:
    """Mean and spread of each metric, one row per policy, with the policy's ``probing`` mode (True if
    any of its episodes probed) and its number of ``checkpoints`` (training runs; 0 for fixed policies).

    ``{metric}_mean`` is the mean over all episodes; ``{metric}_std`` the standard deviation over
    evaluation seeds of the per-seed mean (over checkpoints); ``{metric}_runs_std`` (policies from more
    than one checkpoint only) the standard deviation over training runs of each checkpoint's mean over
    seeds. With one checkpoint or none, ``_std`` is the plain standard deviation over episodes. A NaN
    ``rounds_to_fedavg`` (not reached) is left out of the means and counted in ``reached``.
    """
    rows = []
    for name, episodes in per_episode.items():
        checkpoints = {e.get("checkpoint") for e in episodes} - {None}
        row = {"policy": name, "probing": any(e["probing"] for e in episodes), "episodes": len(episodes),
               "checkpoints": len(checkpoints)}
        for metric in METRICS:
            row[f"{metric}_mean"] = _finite_mean([e[metric] for e in episodes])
            row[f"{metric}_std"] = _finite_std(_grouped_means(episodes, metric, "seed"))
            if len(checkpoints) > 1:
                row[f"{metric}_runs_std"] = _finite_std(_grouped_means(episodes, metric, "checkpoint"))
        row["reached"] = int(np.isfinite([e["rounds_to_fedavg"] for e in episodes]).sum())
        rows.append(row)
    return rows


def summarise_by_checkpoint(per_episode: dict[str, list[dict]]) -> list[dict]:
    """:func:`summarise` rows of each checkpoint of each learned policy on its own (with its
    ``checkpoint``), for the policies loaded from more than one checkpoint."""
    rows = []
    for name, episodes in per_episode.items():
        checkpoints = list(dict.fromkeys(e.get("checkpoint") for e in episodes if e.get("checkpoint") is not None))
        if len(checkpoints) < 2:
            continue
        for checkpoint in checkpoints:
            row = summarise({name: [e for e in episodes if e.get("checkpoint") == checkpoint]})[0]
            rows.append({**row, "checkpoint": checkpoint})
    return rows
