"""Compare policies on identical seeds: run, summarise, tabulate, write CSV/JSON and plots.

Every policy runs the same seeds, so on a given seed all policies see the same partition, model
initialisation, trace assignment and candidate draws (paired comparison).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
from pathlib import Path

import numpy as np

from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.fileio import atomic_write, atomic_write_text
from fedenv.policies import Policy
from fedenv.rollout import EpisodeRecord, run_episode

METRICS = ("final_accuracy", "rounds_to_fedavg", "total_latency_s", "total_comm_mb", "team_return")


def evaluate_policies(
    env_config: EnvConfig, policies: list[Policy], seeds: list[int], progress: bool = True
) -> dict[str, list[EpisodeRecord]]:
    """Run every policy on every seed (each in the env its ``env_overrides`` ask for).

    Returns:
        ``policy name -> [EpisodeRecord per seed]``, seeds in the given order.
    """
    from tqdm.auto import tqdm

    envs: dict[str, ClientSelectionEnv] = {}
    records: dict[str, list[EpisodeRecord]] = {}
    bar = tqdm(total=len(policies) * len(seeds), desc="evaluate", unit="episode", disable=not progress)
    for policy in policies:
        key = json.dumps(policy.env_overrides, sort_keys=True)
        if key not in envs:
            envs[key] = ClientSelectionEnv(dataclasses.replace(env_config, **policy.env_overrides))
        records[policy.name] = []
        for seed in seeds:
            records[policy.name].append(run_episode(envs[key], policy, seed))
            bar.update()
            bar.set_postfix(policy=policy.name, ret=f"{records[policy.name][-1].team_return:.3f}")
    bar.close()
    return records


def compare(env_config: EnvConfig, policies: list[Policy], seeds: list[int], out_dir: str | Path | None = None,
            progress: bool = False, title: str = "") -> dict[str, list[EpisodeRecord]]:
    """Evaluate ``policies`` on ``seeds``, print the summary table (after ``title``) and, with
    ``out_dir``, write the result files (:func:`write_results`). Returns the records."""
    records = evaluate_policies(env_config, policies, seeds, progress=progress)
    print(title or f"seeds {seeds} (team return = shared reward summed over rounds; mean +- std over episodes)")
    print(format_table(summarise(per_episode_metrics(records))))
    if out_dir is not None:
        paths = write_results(out_dir, records, env_config)
        print("wrote " + ", ".join(str(p) for p in paths.values()))
    return records


def per_episode_metrics(records: dict[str, list[EpisodeRecord]], reference: str = "fedavg") -> dict[str, list[dict]]:
    """Metrics of every episode. ``rounds_to_fedavg``: first round reaching the reference policy's final
    accuracy on the same seed (NaN when never reached, or when the reference was not run)."""
    targets = {r.seed: r.final_accuracy for r in records.get(reference, [])}
    out = {}
    for name, episodes in records.items():
        rows = []
        for r in episodes:
            reached = r.rounds_to(targets[r.seed]) if r.seed in targets else None
            rows.append({
                "seed": r.seed,
                "final_accuracy": r.final_accuracy,
                "rounds_to_fedavg": float("nan") if reached is None else float(reached),
                "total_latency_s": r.total_latency_s,
                "total_comm_mb": r.total_comm_mb,
                "team_return": r.team_return,
            })
        out[name] = rows
    return out


def summarise(per_episode: dict[str, list[dict]]) -> list[dict]:
    """Mean and standard deviation (over episodes) of each metric, one row per policy. A NaN
    ``rounds_to_fedavg`` (not reached) is left out of its mean and counted in ``reached``."""
    rows = []
    for name, episodes in per_episode.items():
        row = {"policy": name, "episodes": len(episodes)}
        for metric in METRICS:
            values = np.array([e[metric] for e in episodes], dtype=float)
            finite = values[np.isfinite(values)]
            row[f"{metric}_mean"] = float(finite.mean()) if len(finite) else float("nan")
            row[f"{metric}_std"] = float(finite.std()) if len(finite) else float("nan")
        row["reached"] = int(np.isfinite([e["rounds_to_fedavg"] for e in episodes]).sum())
        rows.append(row)
    return rows


def format_table(rows: list[dict]) -> str:
    """Fixed-width text table of :func:`summarise` rows (mean +- std)."""
    headers = ["policy", "final acc", "rounds to fedavg acc", "latency (s)", "upload (MB)", "team return"]
    fmt = {"final_accuracy": "{:.4f}", "rounds_to_fedavg": "{:.1f}", "total_latency_s": "{:.1f}",
           "total_comm_mb": "{:.1f}", "team_return": "{:.4f}"}
    lines = []
    for row in rows:
        cells = [row["policy"]]
        for metric in METRICS:
            mean, std = row[f"{metric}_mean"], row[f"{metric}_std"]
            cell = "never" if math.isnan(mean) else f"{fmt[metric].format(mean)} +- {fmt[metric].format(std)}"
            if metric == "rounds_to_fedavg" and not math.isnan(mean) and row["reached"] < row["episodes"]:
                cell += f" ({row['reached']}/{row['episodes']})"
            cells.append(cell)
        lines.append(cells)
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *lines)]
    render = lambda cells: "  ".join(str(c).ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([render(headers), render(["-" * w for w in widths])] + [render(c) for c in lines])


def write_results(out_dir: str | Path, records: dict[str, list[EpisodeRecord]], env_config: EnvConfig) -> dict[str, Path]:
    """Write ``results.csv`` (one row per policy and episode), ``results.json`` (summary, per-episode
    metrics, round-by-round records and the env config) and three plots, each atomically.

    Returns:
        ``kind -> path`` of the written files.
    """
    out_dir = Path(out_dir)
    per_episode = per_episode_metrics(records)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=["policy", "seed", *METRICS], lineterminator="\n")
    writer.writeheader()
    for name, episodes in per_episode.items():
        for episode in episodes:
            writer.writerow({"policy": name, **episode})
    paths = {"csv": out_dir / "results.csv", "json": out_dir / "results.json"}
    atomic_write_text(paths["csv"], text.getvalue())
    document = {
        "env_config": env_config.to_dict(),
        "summary": summarise(per_episode),
        "episodes": per_episode,
        "records": {name: [r.to_dict() for r in episodes] for name, episodes in records.items()},
    }
    atomic_write_text(paths["json"], json.dumps(_json_safe(document), indent=1))
    paths.update(plot_results(records, out_dir))
    return paths


def _json_safe(value):
    """NaN and infinity become None (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


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
        atomic_write(paths[kind], lambda handle: fig.savefig(handle, format="png", dpi=120))
        plt.close(fig)
    return paths
