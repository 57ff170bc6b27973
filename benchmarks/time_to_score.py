"""Wall time until the greedy policy's validation return first reaches a score: throughput and sample
efficiency of the main job judged together.

Each row trains the main job's agents (``train_agents.py``'s settings: :data:`train_agents.DEFAULT_EPISODES`
episodes of the default federation, default :class:`agents.config.VDNConfig`) as one *variant*
(:data:`VARIANTS`) and validates the greedy policy every ``--eval-interval`` episodes on the validation
seeds (:data:`agents.validation.VALIDATION_SEEDS`), as ``train_agents.py --eval-interval`` does. A row
reports the training time (wall clock, validation excluded) and the episodes played when the validation
team return first reached ``--score``, the best and last validation return, FL rounds per second, and
the time relative to the *default* row, which every run measures first as the reference, in the same
process and under the same load. Beside every row: the 1-minute load average before and after it
(:func:`os.getloadavg`), CPUs and torch's intra-op and inter-op threads. On a machine shared with other
jobs, times move with the load: compare rows of one run, never rows of runs apart.

Variants: ``default`` (the main job), ``unfused-engine`` (``--engine unfused``: the MLP's SGD step applied
after its gradients, the default of release 0.1.0; other float rounding, so other trained weights),
``overlap-learner`` (``train_agents.py --overlap-learner``: gradient steps in a learner thread beside the
episodes) and
``fewer-episodes`` (``--fewer-episodes`` episodes, the exploration schedule over that horizon).

    python benchmarks/time_to_score.py --score 0.2                  # every variant, the main job's size
    python benchmarks/time_to_score.py --score 0.2 --variants default overlap-learner --seed 1
    python benchmarks/time_to_score.py --quick                       # CI size (seconds)
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file, python benchmarks/NAME.py: import this checkout (repo root), as -m does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from agents.callbacks import Callback, crossed
from agents.config import VDNConfig
from agents.trainer import Trainer, learn
from agents.validation import VALIDATION_SEEDS, validate
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.fileio import atomic_write_json
from fedenv.names import check_known
from train_agents import DEFAULT_EPISODES, set_threads

DEFAULT_EVAL_INTERVAL = 25
QUICK_ENV = dict(dataset="mnist5k", num_clients=3, clients_per_round=3, num_rounds=2, test_samples=200,
                 device="cpu")
"""The CI-sized federation of ``--quick`` (benchmarks.common's)."""
QUICK_VDN = dict(learning_starts=2, batch_size=8)
QUICK_EPISODES = 3


@dataclass
class Job:
    """What one row trains."""

    env_config: EnvConfig
    vdn_config: VDNConfig
    episodes: int
    overlap_learner: bool = False


VARIANTS: dict[str, Callable[[Job, argparse.Namespace], Job]] = {
    "default": lambda job, args: job,
    "unfused-engine": lambda job, args: dataclasses.replace(
        job, env_config=dataclasses.replace(job.env_config, engine="unfused")),
    "overlap-learner": lambda job, args: dataclasses.replace(job, overlap_learner=True),
    "fewer-episodes": lambda job, args: dataclasses.replace(job, episodes=args.fewer_episodes),
}
"""Variant name -> the job it trains, from the main job and the arguments; ``default`` is the reference."""
REFERENCE = "default"


@dataclass
class ScoreHistory(Callback):
    """Validation every ``interval`` episodes (greedy policy, ``seeds`` in ``env``), with the training
    time so far (wall clock, s, the validations' own time left out) of each."""

    interval: int
    env: ClientSelectionEnv
    seeds: list[int]
    points: list[tuple[int, float, float]] = field(default_factory=list)
    """``(episodes played, training time s, validation team return)`` per validation."""
    rounds: int = 0
    _training_s: float = 0.0
    _since: float = 0.0

    def on_training_start(self, trainer) -> None:
        self._since = time.perf_counter()

    def on_episodes_end(self, trainer, before, summaries, rounds_per_s) -> None:
        self._training_s += time.perf_counter() - self._since
        self.rounds = trainer.steps
        if crossed(before, trainer.episode, self.interval) or trainer.episode == trainer.episodes:
            result = validate(trainer.greedy_policy(), self.env, self.seeds)
            self.points.append((trainer.episode, self._training_s, result.team_return))
        self._since = time.perf_counter()

    @property
    def training_s(self) -> float:
        return self._training_s


def first_reaching(points: list[tuple[int, float, float]], score: float) -> tuple[int, float] | None:
    """``(episodes, training s)`` of the first validation whose return is at least ``score``; None if none."""
    return next(((episodes, seconds) for episodes, seconds, value in points if value >= score), None)


def run_variant(name: str, job: Job, score: float, interval: int, seed: int) -> dict:
    """Train ``job`` once and measure it; the row as a dict (see the module docstring)."""
    load_before = os.getloadavg()[0]
    history = ScoreHistory(interval, ClientSelectionEnv(job.env_config), list(VALIDATION_SEEDS))
    trainer = Trainer(job.env_config, job.vdn_config, job.episodes, seed, overlap_learner=job.overlap_learner)
    try:
        learn(trainer, [history])
    finally:
        trainer.close()
    reached = first_reaching(history.points, score)
    returns = [value for _, _, value in history.points]
    return {"variant": name, "episodes": job.episodes, "score": score,
            "episodes_to_score": None if reached is None else reached[0],
            "time_to_score_s": None if reached is None else reached[1],
            "best_return": max(returns), "last_return": returns[-1], "training_s": history.training_s,
            "fl_rounds_per_s": history.rounds / history.training_s, "load_before": load_before,
            "load_after": os.getloadavg()[0], "cpus": os.cpu_count(), "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads(), "validations": history.points}


def format_row(row: dict, reference: dict) -> str:
    """One printed line: time and episodes to the score, relative time, throughput, load and threads."""
    if row["time_to_score_s"] is None:
        reached, ratio = "not reached", "-"
    else:
        reached = f"{row['time_to_score_s']:7.1f} s at episode {row['episodes_to_score']}"
        ratio = ("-" if reference["time_to_score_s"] is None else
                 f"{row['time_to_score_s'] / max(reference['time_to_score_s'], 1e-9):.2f}x")
    return (f"{row['variant']:16s} {row['episodes']:5d} ep  {reached:28s} vs default {ratio:6s} "
            f"best {row['best_return']:+.4f} last {row['last_return']:+.4f}  trained {row['training_s']:7.1f} s "
            f"{row['fl_rounds_per_s']:6.2f} rounds/s  load {row['load_before']:.2f}->{row['load_after']:.2f} "
            f"on {row['cpus']} CPUs, threads {row['threads']}/{row['interop_threads']}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--score", type=float, default=None,
                        help="validation team return to reach (required unless --quick; there -1: any return)")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), metavar="NAME",
                        help=f"variants after the default reference (default: all; allowed: {', '.join(VARIANTS)})")
    parser.add_argument("--episodes", type=int, default=None,
                        help=f"episodes of the main job (default {DEFAULT_EPISODES}; --quick: {QUICK_EPISODES})")
    parser.add_argument("--fewer-episodes", type=int, default=None,
                        help="episodes of the fewer-episodes variant (default: half of --episodes)")
    parser.add_argument("--eval-interval", type=int, default=None,
                        help=f"episodes between validations (default {DEFAULT_EVAL_INTERVAL}; --quick: 1)")
    parser.add_argument("--seed", type=int, default=0, help="training seed of every row")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op and inter-op threads (default 1)")
    parser.add_argument("--quick", action="store_true", help="CI size: 3 clients, 2 rounds, 3 episodes")
    parser.add_argument("--out", default=None, metavar="FILE",
                        help="also write the rows as JSON (an existing file is refused)")
    return parser


def check_args(args: argparse.Namespace) -> None:
    """Fill the defaults of ``args`` and check them.

    Raises:
        ValueError: an unknown variant, no ``--score`` without ``--quick``, counts below 1, an existing ``--out``.
    """
    for name in args.variants:
        check_known(name, VARIANTS, "variant", field=False)
    if args.score is None:
        if not args.quick:
            raise ValueError("--score is required (the validation team return to reach), unless --quick")
        args.score = -1.0
    args.episodes = args.episodes or (QUICK_EPISODES if args.quick else DEFAULT_EPISODES)
    args.fewer_episodes = args.fewer_episodes or max(1, args.episodes // 2)
    args.eval_interval = args.eval_interval or (1 if args.quick else DEFAULT_EVAL_INTERVAL)
    for flag in ("episodes", "fewer_episodes", "eval_interval", "threads"):
        if getattr(args, flag) < 1:
            raise ValueError(f"--{flag.replace('_', '-')}={getattr(args, flag)} must be >= 1")
    if args.out is not None and Path(args.out).exists():
        raise ValueError(f"--out {args.out} exists: give another file or remove it")


def main(argv: list[str] | None = None) -> list[dict]:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        check_args(args)
    except ValueError as error:
        parser.error(str(error))
    set_threads(args.threads)
    env_config = EnvConfig(**QUICK_ENV) if args.quick else EnvConfig()
    vdn_config = VDNConfig(**QUICK_VDN) if args.quick else VDNConfig()
    job = Job(env_config, vdn_config, args.episodes)
    names = [REFERENCE] + [n for n in dict.fromkeys(args.variants) if n != REFERENCE]
    print(f"time to validation return {args.score:+.4f}, seed {args.seed}, validation every {args.eval_interval} "
          f"episodes; times are training wall clock (validation excluded), noisy under load", flush=True)
    rows = []
    for name in names:
        rows.append(run_variant(name, VARIANTS[name](job, args), args.score, args.eval_interval, args.seed))
        print(format_row(rows[-1], rows[0]), flush=True)
    if args.out is not None:
        atomic_write_json(args.out, rows)
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
