"""Shared pieces of the learned-agent studies (``transfer.py``, ``reward_sweep.py``, ``learners.py``).

Every study evaluates learned policies against fixed baselines on the same held-out seeds (from
:data:`EVAL_SEED_BASE` up, never a training seed of :func:`agents.trainer.training_seed`) and writes

- ``table.csv``: one row per setting (or learner), means over the evaluation episodes;
- ``episodes.json``: ``row name -> policy name -> [per-episode metrics]``
  (:func:`fedenv.evaluation.per_episode_metrics`), from which every mean and ratio of the table can be
  recomputed.

The ``ratio`` column is FedMarl's comparison (Zhang et al., AAAI 2022, arXiv 2201.02932, Sec. 5, Fig. 7:
"1.36x and 1.32x higher average total reward"): the learned policy's mean team return divided by the
mean team return of the best fixed policy on the same seeds (best in hindsight, by mean return). A ratio
of returns only reads as "x times higher" when the denominator is positive, so it is NaN otherwise.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
from pathlib import Path

import numpy as np

from agents.checkpoint import load_checkpoint
from agents.config import VDNConfig
from agents.networks import output_layer
from agents.policy import GreedyPolicy
from agents.rollout import TRAINING_TEST_REPORTS
from agents.trainer import CHECKPOINT_NAME, Trainer, train_vdn
from agents.validation import check_validation_seeds, validate
from fedenv.baselines import Policy, compared_policies, make_policy
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation import EpisodeRecord, evaluate_policies, per_episode_metrics
from fedenv.evaluation.paired import best_by_mean_return, ratio_of_means
from fedenv.fileio import atomic_write_json
from fedenv.registry import DATASETS, POLICIES

EVAL_SEED_BASE = 1000
QUICK_FIXED = ("fedavg", "random", "fastest")
"""Fixed policies of ``--quick`` runs; full runs compare with every registered policy."""
QUICK_FEDERATION = dict(dataset="mnist5k", num_clients=3, clients_per_round=3, num_rounds=2, test_samples=200,
                        device="cpu")
"""The CI-sized federation of ``--quick``: the embedded 5,000 digits, 3 clients, 2 rounds."""
SUMMARY_METRICS = ("team_return", "final_accuracy", "total_latency_s", "total_upload_mb", "total_download_mb",
                   "total_traffic_mb")


def add_study_arguments(parser: argparse.ArgumentParser, episodes: int) -> None:
    """Flags every study takes: scale, seeds, data, output."""
    parser.add_argument("--quick", action="store_true",
                        help="CI size: mnist5k, 3 clients, 2 rounds, 1 training episode, 1 evaluation episode")
    parser.add_argument("--episodes", type=int, default=episodes, help="VDN training episodes per agent")
    parser.add_argument("--eval-episodes", type=int, default=5, help="held-out evaluation episodes per setting")
    parser.add_argument("--seed", type=int, default=0, help="training seed")
    parser.add_argument("--num-clients", type=int, default=10)
    parser.add_argument("--num-rounds", type=int, default=20)
    parser.add_argument("--dataset", default="mnist5k", choices=DATASETS.names(),
                        help="dataset of the training federation (default: the embedded mnist5k)")
    parser.add_argument("--data-root", default=None,
                        help="folder holding MNIST/ and FashionMNIST/ (torchvision layout)")
    parser.add_argument("--train-samples", type=int, default=None,
                        help="partition a fixed subset of this many training samples (EnvConfig.train_samples)")
    parser.add_argument("--test-samples", type=int, default=None,
                        help="evaluate on a fixed subset of this many test samples (EnvConfig.test_samples)")
    parser.add_argument("--device", default="auto", help="torch device of the FL engine")
    parser.add_argument("--fixed", default=None,
                        help="comma-separated fixed policies (default: those of evaluate.py --policies all; --quick: "
                             "fedavg,random,fastest)")
    parser.add_argument("--out", required=True, help="output folder (table.csv, episodes.json)")


def apply_quick(args: argparse.Namespace) -> None:
    """Shrink ``args`` to the CI size when ``--quick`` is given."""
    if args.quick:
        args.episodes, args.eval_episodes = 1, 1
        args.num_clients, args.num_rounds = QUICK_FEDERATION["num_clients"], QUICK_FEDERATION["num_rounds"]


def base_config(args: argparse.Namespace) -> EnvConfig:
    """The training federation: :data:`QUICK_FEDERATION` with ``--quick``, else ``--dataset`` (from
    ``--data-root``, cut to ``--train-samples`` and ``--test-samples``) with ``--num-clients`` clients (all
    candidates) and ``--num-rounds`` rounds."""
    if args.quick:
        return EnvConfig(**QUICK_FEDERATION).validate()
    return EnvConfig(dataset=args.dataset, data_root=args.data_root, train_samples=args.train_samples,
                     test_samples=args.test_samples, num_clients=args.num_clients, clients_per_round=args.num_clients,
                     num_rounds=args.num_rounds, device=args.device).validate()


def scaled_weights(config: EnvConfig, scale: float) -> EnvConfig:
    """``config`` with ``latency_weight`` and ``comm_weight`` multiplied by ``scale``.

    Raises:
        ValueError: ``scale`` is not positive.
    """
    if not scale > 0:
        raise ValueError(f"reward weight scale={scale!r} must be > 0")
    return dataclasses.replace(config, latency_weight=config.latency_weight * scale,
                               comm_weight=config.comm_weight * scale)


def fixed_names(args: argparse.Namespace) -> list[str]:
    """The fixed policies to compare with (``--fixed``; see :data:`QUICK_FIXED`)."""
    if args.fixed:
        names = [n.strip() for n in args.fixed.split(",") if n.strip()]
    else:
        names = list(QUICK_FIXED if args.quick else compared_policies())
    for name in names:
        POLICIES.get(name)
    if "fedavg" not in names:
        raise ValueError(f"--fixed={args.fixed!r} must include fedavg (every table reports it)")
    return names


def eval_seeds(count: int) -> list[int]:
    """``count`` held-out evaluation seeds, from :data:`EVAL_SEED_BASE` up."""
    return list(range(EVAL_SEED_BASE, EVAL_SEED_BASE + count))


def train_agent(config: EnvConfig, episodes: int, seed: int, run_dir: Path,
                vdn_config: VDNConfig | None = None) -> GreedyPolicy:
    """Train VDN agents with :func:`agents.trainer.train_vdn` (checkpoint in ``run_dir``); the greedy policy."""
    trainer, _ = train_vdn(config, vdn_config or VDNConfig(), episodes, seed, run_dir, progress=False)
    return trainer.greedy_policy()


def fine_tune(checkpoint: Path, config: EnvConfig, episodes: int, seed: int,
              initial_eps: float | None = None, head_only: bool = False) -> GreedyPolicy:
    """Continue training the Q-network of ``checkpoint`` for ``episodes`` episodes in ``config``.

    A fresh :class:`~agents.trainer.Trainer` gets the checkpoint's weights
    (:meth:`~agents.trainer.Trainer.initialise_from`: online and target network);
    exploration starts at the checkpoint's final epsilon (the policy is already trained; with a demonstrator, the
    margin term at its final weight, ``demonstration_final_weight`` where set), or, with ``initial_eps``, is
    re-annealed: epsilon starts there and falls linearly to the final epsilon over the checkpoint's
    ``exploration_fraction`` of the ``episodes`` (a training run's schedule,
    :func:`agents.rollout.exploration_epsilon`; with a demonstrator an exploring candidate plays the
    demonstrator's action in the new setting). Gradient
    steps start after the first episode (``learning_starts = num_rounds``), so that a short fine-tuning
    run (FedMarl's 10 episodes) trains at all. With ``head_only`` only the Q-network's output layer
    (:func:`agents.networks.output_layer`) is trained, the rest of it and a mixer kept as the checkpoint has them:
    the values' scale and offset are re-fitted to the new setting's returns on the features learned in training
    (the last-layer fine-tuning of transfer learning, e.g. Kumar et al., ICLR 2022, "linear probing").

    Raises:
        ValueError: the checkpoint's observation layout or hidden widths differ from ``config``'s; ``initial_eps``
            outside [the checkpoint's final epsilon, 1].
    """
    document = load_checkpoint(checkpoint)
    vdn = document["vdn_config"]
    if initial_eps is not None and not vdn.exploration_final_eps <= initial_eps <= 1:
        raise ValueError(f"initial_eps={initial_eps!r} must lie in [{vdn.exploration_final_eps}, 1]: from the final "
                         f"epsilon of {checkpoint} (no re-annealing) to 1 (exploring every action)")
    start = vdn.exploration_final_eps if initial_eps is None else initial_eps
    vdn = dataclasses.replace(vdn, exploration_initial_eps=start, learning_starts=config.num_rounds)
    if vdn.demonstration_final_weight is not None:  # the margin term's weight at its schedule's end, as epsilon
        vdn = dataclasses.replace(vdn, demonstration_weight=vdn.demonstration_final_weight)
    trainer = Trainer(config, vdn, episodes, seed)
    trainer.initialise_from(document)
    if head_only:
        trainer.learner.q.requires_grad_(False)
        if trainer.learner.mixer is not None:
            trainer.learner.mixer.requires_grad_(False)
        output_layer(trainer.learner.q).requires_grad_(True)
    while trainer.episode < episodes:
        trainer.play_episodes()
    return trainer.greedy_policy()


def fine_tune_validated(checkpoint: Path, config: EnvConfig, episodes: int, seed: int, val_seeds: list[int],
                        initial_eps: float | None = None, head_only: bool = False) -> tuple[GreedyPolicy, bool]:
    """:func:`fine_tune`, keeping the fine-tuned weights only where they do better than the checkpoint's on
    ``val_seeds``: both greedy policies play one episode per validation seed in ``config``
    (:func:`agents.validation.validate`), and the checkpoint's policy is returned unless the fine-tuned one's
    mean team return is higher (model selection on the new setting's validation episodes, as ``best.pt`` is
    chosen in training; it costs ``2 * len(val_seeds)`` greedy episodes there besides the ``episodes``).

    Returns:
        The policy kept and whether it is the fine-tuned one.

    Raises:
        ValueError: as :func:`fine_tune`; bad ``val_seeds`` (:func:`agents.validation.check_validation_seeds`).
    """
    val_seeds = check_validation_seeds(val_seeds)
    zero_shot = GreedyPolicy.from_checkpoint(checkpoint)
    tuned = fine_tune(checkpoint, config, episodes, seed, initial_eps, head_only)
    env = ClientSelectionEnv(config, report_test_accuracy=TRAINING_TEST_REPORTS)
    zero_shot_return = validate(zero_shot, env, val_seeds).team_return
    kept = validate(tuned, env, val_seeds).team_return > zero_shot_return
    return (tuned if kept else zero_shot), kept


def checkpoint_path(run_dir: Path) -> Path:
    """Where :func:`train_agent` wrote the checkpoint of ``run_dir``."""
    return run_dir / CHECKPOINT_NAME


def evaluate_records(config: EnvConfig, learned: list[Policy], fixed: list[str],
                     seeds: list[int]) -> dict[str, list[EpisodeRecord]]:
    """Episodes of the ``fixed`` policies (each in its own probing mode, as ``evaluate.py``) and of the
    ``learned`` ones (in ``config``'s probing mode, the mode they were trained in), on the same seeds."""
    records = evaluate_policies(config, [make_policy(name) for name in fixed], seeds, progress=True)
    if learned:
        records.update(evaluate_policies(config, learned, seeds, progress=True, probing=config.probing))
    return records


def evaluate(config: EnvConfig, learned: list[Policy], fixed: list[str], seeds: list[int]) -> dict[str, list[dict]]:
    """Per-episode metrics (:func:`fedenv.evaluation.per_episode_metrics`) of :func:`evaluate_records`."""
    return per_episode_metrics(evaluate_records(config, learned, fixed, seeds))


def mean_of(episodes: list[dict], metric: str) -> float:
    """Mean of ``metric`` over the episodes."""
    return float(np.mean([e[metric] for e in episodes]))


def return_ratio(value: float, reference: float) -> float:
    """``value / reference`` when ``reference > 0``, else NaN (module docstring;
    :func:`fedenv.evaluation.paired.ratio_of_means`, the rule of the study's intervals)."""
    return float(ratio_of_means(value, reference))


def compare_columns(per_episode: dict[str, list[dict]], learned: str, fixed: list[str]) -> dict:
    """Table columns of one setting: means of :data:`SUMMARY_METRICS` for ``learned``, FedAvg and the best
    fixed policy, the best fixed policy's name, and ``ratio`` (:func:`return_ratio` of the returns)."""
    best = best_by_mean_return(per_episode, fixed)
    row = {}
    for prefix, name in (("learned", learned), ("fedavg", "fedavg"), ("best_fixed", best)):
        for metric in SUMMARY_METRICS:
            row[f"{prefix}_{metric}"] = mean_of(per_episode[name], metric)
    row["best_fixed"] = best
    row["ratio"] = return_ratio(row["learned_team_return"], row["best_fixed_team_return"])
    return row


PRINTED = ("learned_team_return", "learned_final_accuracy", "fedavg_team_return", "fedavg_final_accuracy",
           "best_fixed", "best_fixed_team_return", "best_fixed_final_accuracy", "ratio")
"""The columns of :func:`compare_columns` that the studies print (``table.csv`` has them all)."""


def write_study(out: Path, rows: list[dict], episodes: dict[str, dict[str, list[dict]]], printed: list[str]) -> None:
    """Write ``table.csv`` (every column) and ``episodes.json`` into ``out``; print the ``printed`` columns."""
    out.mkdir(parents=True, exist_ok=True)
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with open(out / "table.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    atomic_write_json(out / "episodes.json", episodes)
    print(format_rows(rows, printed))
    print(f"wrote {out / 'table.csv'} and {out / 'episodes.json'}")


def format_rows(rows: list[dict], columns: list[str]) -> str:
    """Plain-text table: floats with 4 significant digits, missing cells empty."""
    def cell(value) -> str:
        return f"{value:.4g}" if isinstance(value, float) else str(value)

    cells = [[cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)
