"""What the reward pays for: fixed upload schedules on the default federation, next to FedAvg.

A diagnostic for the learned agents (docs/results/learned-agent.md, where benchmarks/agent_study.py holds
the learned agents against the best of these schedules): the schedule
``k random, all last L`` lets ``k`` random candidates upload in each of the first ``T - L`` rounds and
every candidate in the last ``L`` rounds, without probing (it is charged only for the clients it makes
train). Over a grid of ``(k, L)`` it shows which final accuracy, latency and upload a simple
open-loop policy reaches and what team return the calibrated reward (docs/design.md, section 5) gives
it: the reward's price of the last accuracy points can be read off pairs of schedules, and a learned
policy can be held against the best schedule's return. ``--weight-scale`` prices latency and upload
at a multiple of the calibrated weights; ``--probing`` charges FedAvg and the schedules the probing epoch
that the learned agent pays (the same selections train the same models in both modes).

Writes ``table.csv`` (one row per schedule and FedAvg: means over the held-out seeds, and the ratios of
FedAvg's latency and upload to the schedule's) and ``episodes.json`` (:mod:`benchmarks.common`).

    python -m benchmarks.schedules --quick --out results/schedules_quick
    python -m benchmarks.schedules --out results/schedules        # the default federation, seeds 1000-1004
    python -m benchmarks.schedules --weight-scale 0.2 --out results/schedules_x0.2   # w2 and w3 x 0.2
    python -m benchmarks.schedules --probing --out results/schedules_probing         # charged a probing epoch
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file, python benchmarks/NAME.py: import this checkout (repo root), as -m does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse

from benchmarks.common import EVAL_SEED_BASE, QUICK_FEDERATION, SUMMARY_METRICS, mean_of, scaled_weights, write_study
from fedenv.baselines import LateRoundsPolicy, make_policy
from fedenv.config import EnvConfig
from fedenv.evaluation import evaluate_policies, per_episode_metrics

DEFAULT_GRID = "1:3,2:3,1:5,2:5,3:5,2:8"
"""``k:L`` pairs of the full run."""


def parse_grid(text: str) -> list[tuple[int, int]]:
    """``"k:L,k:L"`` -> ``[(k, L), ...]``.

    Raises:
        ValueError: an item that is not two integers joined by ``:``.
    """
    pairs = []
    for item in text.split(","):
        parts = item.strip().split(":")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise ValueError(f"--grid item {item!r} is not k:L with integers k, L >= 0 (e.g. {DEFAULT_GRID})")
        pairs.append((int(parts[0]), int(parts[1])))
    return pairs


def schedule_rows(per_episode: dict[str, list[dict]]) -> list[dict]:
    """One row per policy: the means of :data:`~benchmarks.common.SUMMARY_METRICS` and FedAvg's latency and
    upload over the policy's (``latency_gain``, ``upload_gain``)."""
    fedavg = {metric: mean_of(per_episode["fedavg"], metric) for metric in SUMMARY_METRICS}
    rows = []
    for name, episodes in per_episode.items():
        row = {"policy": name, **{metric: mean_of(episodes, metric) for metric in SUMMARY_METRICS}}
        row["latency_gain"] = fedavg["total_latency_s"] / row["total_latency_s"]
        row["upload_gain"] = fedavg["total_upload_mb"] / row["total_upload_mb"]
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--grid", default=DEFAULT_GRID, help="comma-separated k:L schedules (default: %(default)s)")
    parser.add_argument("--episodes", type=int, default=5, help="held-out seeds from 1000 (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="CI size: 3 clients, 2 rounds, 1 seed, grid 1:1")
    parser.add_argument("--weight-scale", type=float, default=1.0,
                        help="multiplier of the latency and upload weights w2 and w3 (default: %(default)s)")
    parser.add_argument("--probing", action="store_true",
                        help="run FedAvg and the schedules with the probing epoch (charged like the learned agent's) "
                             "instead of without it")
    parser.add_argument("--out", required=True, help="output folder (table.csv, episodes.json)")
    args = parser.parse_args(argv)
    config = EnvConfig(**QUICK_FEDERATION) if args.quick else EnvConfig(device="cpu")
    try:
        config = scaled_weights(config, args.weight_scale)
        schedules = [LateRoundsPolicy(k, last, config.num_rounds, name=f"{k} random, all last {last}")
                     for k, last in parse_grid("1:1" if args.quick else args.grid)]
    except ValueError as error:
        parser.error(str(error))
    seeds = list(range(EVAL_SEED_BASE, EVAL_SEED_BASE + (1 if args.quick else args.episodes)))
    policies = [make_policy("fedavg"), *schedules]
    per_episode = per_episode_metrics(evaluate_policies(config.validate(), policies, seeds, progress=True,
                                                        probing=True if args.probing else None))
    write_study(Path(args.out), schedule_rows(per_episode), per_episode,
                ["policy", *SUMMARY_METRICS, "latency_gain", "upload_gain"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
