"""Per-episode metrics of a comparison, and their mean and spread over episodes."""

from __future__ import annotations

import numpy as np

from fedenv.evaluation.rollout import EpisodeRecord

METRICS = ("final_accuracy", "rounds_to_fedavg", "total_latency_s", "total_comm_mb", "team_return")


def per_episode_metrics(records: dict[str, list[EpisodeRecord]], reference: str = "fedavg") -> dict[str, list[dict]]:
    """Metrics of every episode, with its ``seed`` and ``probing`` mode. ``rounds_to_fedavg``: first round
    reaching the reference policy's final accuracy on the same seed (NaN when never reached, or when the
    reference was not run)."""
    targets = {r.seed: r.final_accuracy for r in records.get(reference, [])}
    out = {}
    for name, episodes in records.items():
        rows = []
        for r in episodes:
            reached = r.rounds_to(targets[r.seed]) if r.seed in targets else None
            rows.append({
                "seed": r.seed,
                "probing": r.probing,
                "final_accuracy": r.final_accuracy,
                "rounds_to_fedavg": float("nan") if reached is None else float(reached),
                "total_latency_s": r.total_latency_s,
                "total_comm_mb": r.total_comm_mb,
                "team_return": r.team_return,
            })
        out[name] = rows
    return out


def summarise(per_episode: dict[str, list[dict]]) -> list[dict]:
    """Mean and standard deviation (over episodes) of each metric, one row per policy, with the policy's
    ``probing`` mode (True if any of its episodes probed). A NaN ``rounds_to_fedavg`` (not reached) is
    left out of its mean and counted in ``reached``."""
    rows = []
    for name, episodes in per_episode.items():
        row = {"policy": name, "probing": any(e["probing"] for e in episodes), "episodes": len(episodes)}
        for metric in METRICS:
            values = np.array([e[metric] for e in episodes], dtype=float)
            finite = values[np.isfinite(values)]
            row[f"{metric}_mean"] = float(finite.mean()) if len(finite) else float("nan")
            row[f"{metric}_std"] = float(finite.std()) if len(finite) else float("nan")
        row["reached"] = int(np.isfinite([e["rounds_to_fedavg"] for e in episodes]).sum())
        rows.append(row)
    return rows
