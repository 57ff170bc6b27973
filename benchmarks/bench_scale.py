"""Scaling out on Ray, measured side by side in one run: the speed-up of W workers against one process.

* Evaluation: ``evaluate.py --policies all`` (every registered policy) on ``--episodes`` seeds, in this
  process against W Ray workers (one task per episode, :mod:`fedenv.distributed.episodes`), with a check
  that the records are identical.
* Training: VDN FL rounds per second in one process (:class:`agents.trainer.Trainer`) against a learner
  here and W rollout actors (:class:`agents.ray_training.AsyncRaySource`).

Each ratio is printed against its bar (docs/guides/ray.md: evaluation at least 1.6x and training at least
1.5x with 2 workers on a 2-core machine), with the threads of every process and the load average.

What is timed is the steady state. The cluster, its worker processes and the rollout actors are started
first, untimed, and every process (this one, each evaluation worker, each rollout actor) plays one untimed
warm-up episode first (imports, the dataset cache, torch's first calls). The evaluation times then include
building the environments (each worker builds those its episodes need, as the local loop does); the
training times start once the learner and the environments are built and include the learner's updates.

One torch thread per process: this script sets it here (``OMP_NUM_THREADS=1``, ``torch.set_num_threads(1)``)
and Ray sets ``OMP_NUM_THREADS`` of each worker to the one CPU it reserves, so W workers use W cores. The
learner (this process) shares them: it waits while the evaluation runs, and trains between the actors'
episodes, so the training ratio pays for it.

    python -m benchmarks.bench_scale                     # 10 clients, 10 rounds; 2 workers
    python -m benchmarks.bench_scale --quick             # tiny federation: a smoke test, not a measurement
    python -m benchmarks.bench_scale --workers 4 --episodes 8 --train-episodes 16
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

import ray
import torch

from agents.config import VDNConfig
from agents.ray_training import acting_weights
from agents.trainer import Trainer
from evaluate import FIRST_EVAL_SEED, build_policies, policy_specs
from fedenv.baselines import DEFAULT_SELECT_FRACTION, FedAvgPolicy
from fedenv.config import EnvConfig
from fedenv.distributed import RayOptions
from fedenv.distributed.episodes import evaluate_policies_on_ray
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation import evaluate_policies, run_episode

EVALUATION_BAR = 1.6
TRAINING_BAR = 1.5
"""The speed-ups 2 workers must reach on a 2-core machine (docs/guides/ray.md)."""
WARM_UP_HOLD_S = 1.0
WARM_UP_ATTEMPTS = 10
QUICK = EnvConfig(num_clients=3, clients_per_round=3, num_rounds=2, test_samples=200, device="cpu")


def load() -> str:
    """The machine's load average, for the printout."""
    return "load average {:.2f} / {:.2f} / {:.2f} (1 / 5 / 15 min)".format(*os.getloadavg())


def verdict(ratio: float, bar: float) -> str:
    """``ratio`` against ``bar``: ``1.72x (bar 1.6x: met)``."""
    return f"{ratio:.2f}x (bar {bar}x: {'met' if ratio >= bar else 'NOT met'})"


def timed(function, *args, **kwargs):
    """``(function(*args, **kwargs), seconds)``."""
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def warm_up_episode(config: EnvConfig, hold_s: float = 0.0) -> tuple[int, int]:
    """Play one one-round FedAvg episode of ``config`` in a new environment, then keep the CPU until
    ``hold_s`` seconds have passed; ``(process id, torch threads)``."""
    start = time.perf_counter()
    run_episode(ClientSelectionEnv(dataclasses.replace(config, num_rounds=1)), FedAvgPolicy(), FIRST_EVAL_SEED)
    time.sleep(max(0.0, hold_s - (time.perf_counter() - start)))
    return os.getpid(), torch.get_num_threads()


def warm_up_workers(config: EnvConfig, workers: int, attempts: int = WARM_UP_ATTEMPTS) -> dict[int, int]:
    """:func:`warm_up_episode` as rounds of ``workers`` Ray tasks, each holding its CPU for
    :data:`WARM_UP_HOLD_S` (so that no worker runs the others' share), until ``workers`` distinct worker
    processes have played one or after ``attempts`` rounds; ``process id -> torch threads`` of those that did."""
    task = ray.remote(num_cpus=1)(warm_up_episode)
    played: dict[int, int] = {}
    for _ in range(attempts):
        played.update(ray.get([task.remote(config, WARM_UP_HOLD_S) for _ in range(workers)]))
        if len(played) >= workers:
            break
    return played


def all_policies():
    """New instances of ``evaluate.py --policies all``'s policies (no checkpoint)."""
    return build_policies(policy_specs(["all"], learned=False), [], [], select_fraction=DEFAULT_SELECT_FRACTION)[0]


def bench_evaluation(config: EnvConfig, episodes: int, options: RayOptions) -> bool:
    """Print the local and Ray times of every policy on ``episodes`` seeds; whether the records are identical."""
    seeds = list(range(FIRST_EVAL_SEED, FIRST_EVAL_SEED + episodes))
    policies = all_policies()
    print(f"evaluation ({load()} before): {len(policies)} policies x {episodes} seeds", flush=True)
    local, local_s = timed(evaluate_policies, config, policies, seeds, progress=False)
    remote, remote_s = timed(evaluate_policies_on_ray, config, all_policies(), seeds, options, progress=False)
    same = ({k: [r.to_dict() for r in v] for k, v in local.items()}
            == {k: [r.to_dict() for r in v] for k, v in remote.items()})
    print(f"  one process {local_s:.1f} s, {options.num_workers} Ray workers {remote_s:.1f} s: speed-up "
          f"{verdict(local_s / remote_s, EVALUATION_BAR)}; identical records: {same}", flush=True)
    return same


def play_to_the_end(trainer: Trainer) -> int:
    """Play ``trainer``'s remaining episodes (training as configured); the FL rounds played."""
    start = trainer.steps
    while trainer.episode < trainer.episodes:
        trainer.play_episodes()
    return trainer.steps - start


def bench_training(config: EnvConfig, episodes: int, options: RayOptions) -> None:
    """Print the FL rounds per second of VDN training in one process and with ``options.num_workers`` actors."""
    vdn = VDNConfig(learning_starts=config.num_rounds)
    print(f"training ({load()} before): {episodes} episodes, learning from round {vdn.learning_starts}", flush=True)
    local = Trainer(config, vdn, episodes)  # builds the environment, untimed as the actors' are
    rounds, local_s = timed(play_to_the_end, local)
    local_rate = rounds / local_s
    trainer = Trainer(config, vdn, episodes, seed=0, ray_options=options)
    try:
        threads = ray.get([worker.torch_threads.remote() for worker in trainer.source.workers])  # waits for the actors
        weights = acting_weights(trainer.learner)
        workers = trainer.source.workers
        ray.get([worker.play.remote([0], weights, episodes) for worker in workers])  # warm-up, not the learner's
        rounds, remote_s = timed(play_to_the_end, trainer)
    finally:
        trainer.close()
    remote_rate = rounds / remote_s
    print(f"  one process {local_rate:.2f} FL rounds/s ({local_s:.1f} s), {len(threads)} rollout actors "
          f"(torch threads {threads}) {remote_rate:.2f} FL rounds/s ({remote_s:.1f} s): speed-up "
          f"{verdict(remote_rate / local_rate, TRAINING_BAR)}; the actors' own rates in their last call: "
          f"{', '.join(f'{r:.2f}' for _, r in sorted(trainer.source.worker_rates.items()))} FL rounds/s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="Ray workers (default: %(default)s)")
    parser.add_argument("--episodes", type=int, default=4, help="evaluation seeds per policy (default: %(default)s)")
    parser.add_argument("--train-episodes", type=int, default=8, help="training episodes (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="tiny federation, 2 episodes each: a smoke test")
    args = parser.parse_args(argv)
    if min(args.workers, args.episodes, args.train_episodes) < 1:
        parser.error("--workers, --episodes and --train-episodes must be >= 1")
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    if args.quick:
        config, episodes, train_episodes = QUICK, 2, 2
    else:
        config, episodes, train_episodes = EnvConfig(num_rounds=10, device="cpu"), args.episodes, args.train_episodes
    print(f"{os.cpu_count()} CPUs, {load()}; this process: torch threads {torch.get_num_threads()} (inter-op "
          f"{torch.get_num_interop_threads()}); {config.num_clients} clients, {config.num_rounds} rounds per episode",
          flush=True)
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    try:
        options = RayOptions("local", args.workers)
        warm_up_episode(config)
        workers = warm_up_workers(config, args.workers)
        print(f"warm-up played in this process and in {len(workers)} Ray worker processes (torch threads "
              f"{sorted(workers.values())})" + ("; --quick: a smoke test, its ratios measure nothing" if args.quick
                                                else ""), flush=True)
        same = bench_evaluation(config, episodes, options)
        bench_training(config, train_episodes, options)
    finally:
        ray.shutdown()
    print(f"after: {load()}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
