"""Scaling out on Ray: evaluation speed-up with W workers against the local loop (same records), and VDN
training FL rounds per second with W rollout actors against one process.

Every process, local or Ray worker, runs torch with one thread (Ray gives each worker OMP_NUM_THREADS=1,
this script sets the same here), so W workers use W cores and do not oversubscribe the machine. The times
include building the environments (in each worker) but not starting the cluster; the learner runs in
this process next to the W workers, so run it on a machine with at least W + 1 free cores.

    python benchmarks/bench_scale.py                  # 10 clients, 10 rounds; 2 workers
    python benchmarks/bench_scale.py --quick          # tiny federation (a smoke test, not a measurement)
    python benchmarks/bench_scale.py --workers 4 --episodes 16
"""

from __future__ import annotations

import argparse
import os
import time

import ray
import torch

from agents.config import VDNConfig
from agents.ray_training import train_vdn_on_ray
from agents.trainer import train_vdn
from fedenv.baselines import FedAvgPolicy, RandomPolicy
from fedenv.config import EnvConfig
from fedenv.distributed import RayOptions
from fedenv.distributed.episodes import evaluate_policies_on_ray
from fedenv.evaluation import evaluate_policies


def timed(function, *args, **kwargs):
    """``(function(*args, **kwargs), seconds)``."""
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def bench_evaluation(config: EnvConfig, episodes: int, options: RayOptions) -> None:
    """Print the local and Ray times of evaluating fedavg and random on ``episodes`` seeds each."""
    seeds = list(range(1000, 1000 + episodes))
    local, local_s = timed(evaluate_policies, config, [FedAvgPolicy(), RandomPolicy()], seeds, progress=False)
    remote, remote_s = timed(evaluate_policies_on_ray, config, [FedAvgPolicy(), RandomPolicy()], seeds, options,
                             progress=False)
    same = {k: [r.to_dict() for r in v] for k, v in local.items()} == \
           {k: [r.to_dict() for r in v] for k, v in remote.items()}
    print(f"evaluation, {2 * episodes} episodes: local {local_s:.1f} s, {options.num_workers} Ray workers "
          f"{remote_s:.1f} s, speed-up {local_s / remote_s:.2f}x, identical records: {same}")


def bench_training(config: EnvConfig, episodes: int, options: RayOptions) -> None:
    """Print FL rounds per second of VDN training in one process and with ``options.num_workers`` actors."""
    vdn = VDNConfig(learning_starts=config.num_rounds)
    (local, _), local_s = timed(train_vdn, config, vdn, episodes, progress=False)
    (remote, _), remote_s = timed(train_vdn_on_ray, config, vdn, episodes, progress=False, options=options)
    local_rate, remote_rate = local.steps / local_s, remote.steps / remote_s
    print(f"training, {episodes} episodes: one process {local_rate:.2f} FL rounds/s, {options.num_workers} "
          f"Ray workers {remote_rate:.2f} FL rounds/s ({remote_rate / local_rate:.2f}x; the workers' own rates: "
          f"{', '.join(f'{r:.2f}' for _, r in sorted(remote.worker_rates.items()))})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2, help="Ray workers (default: %(default)s)")
    parser.add_argument("--episodes", type=int, default=8, help="episodes per measurement (default: %(default)s)")
    parser.add_argument("--quick", action="store_true", help="tiny federation, 2 episodes: a smoke test")
    args = parser.parse_args()
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
    if args.quick:
        config = EnvConfig(num_clients=3, clients_per_round=3, num_rounds=2, test_samples=200, device="cpu")
        episodes = 2
    else:
        config, episodes = EnvConfig(num_rounds=10, device="cpu"), args.episodes
    ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    options = RayOptions("local", args.workers)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; {config.num_clients} clients, "
          f"{config.num_rounds} rounds per episode")
    bench_evaluation(config, episodes, options)
    bench_training(config, episodes, options)


if __name__ == "__main__":
    main()
