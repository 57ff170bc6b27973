"""Reproduce, at small scale, the two comparisons the seed papers headline, on full MNIST.

(a) FedAdp vs FedAvg (Wu and Wang, arXiv 2012.00661): rounds to reach a target test accuracy when some
    clients hold x-class non-IID data (the paper: 10 nodes of 600 samples, B = 32, E = 1, lr 0.01;
    "up to 54.1 % fewer rounds" on MNIST).
(b) FedCA and FedCM-TS vs FedAvg / FedPdp (Kim et al., arXiv 2012.03270): final accuracy and rounds to
    FedAvg's final accuracy under Dirichlet(alpha = 0.1) client heterogeneity, 8 of 20 clients per round
    (the paper, CIFAR-10 / VGG-11: FedCM "up to 4.17x" faster convergence).

Every method runs on the same seeds (identical partitions and initial models). The scale (rounds, seeds,
model) is set by flags; the defaults finish in well under 30 minutes on a 2-core CPU.

    python benchmarks/paper_checks.py --data-root ../shared/data
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from fedenv.baselines import FedAdpPolicy, FedAvgPolicy, FedCAPolicy, FedCMTS, SelectAll
from fedenv.config import EnvConfig
from fedenv.evaluation import evaluate_policies


class FedPdpPolicy(SelectAll):
    """Every candidate uploads; FedPdp aggregation (FedCM's Table 1)."""

    name = "fedpdp"
    env_overrides = {"aggregation": "fedpdp"}


def rounds_to(accuracy: list[float], target: float) -> int | None:
    return next((t for t, a in enumerate(accuracy) if a >= target), None)


def fmt_rounds(value) -> str:
    return "never" if value is None else str(value)


def check_fedadp(args) -> None:
    config = EnvConfig(
        dataset="mnist", data_root=args.data_root, model=args.model, partition="xclass", num_clients=10,
        clients_per_round=10, xclass_classes=args.x, xclass_noniid_clients=args.noniid, xclass_samples=600,
        val_fraction=0.0, num_rounds=args.rounds_a, local_epochs=1, batch_size=32, lr=0.01,
        latency_weight=0.0, comm_weight=0.0, device=args.device,
    )
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    records = evaluate_policies(config, [FedAvgPolicy(), FedAdpPolicy()], seeds, progress=False)
    print(f"\n(a) FedAdp vs FedAvg: MNIST, {args.noniid} of 10 clients {args.x}-class non-IID, the rest IID, "
          f"600 samples each, {args.model}, E=1, B=32, lr 0.01, {args.rounds_a} rounds; target {args.target:.0%}")
    print("seed  fedavg rounds  fedadp rounds  fewer rounds")
    reductions = []
    for fedavg, fedadp in zip(records["fedavg"], records["fedadp"]):
        a, b = rounds_to(fedavg.accuracy, args.target), rounds_to(fedadp.accuracy, args.target)
        reduction = f"{1 - b / a:+.1%}" if a and b else "n/a"
        if a and b:
            reductions.append(1 - b / a)
        print(f"{fedavg.seed:<4}  {fmt_rounds(a):<13}  {fmt_rounds(b):<13}  {reduction}")
    mean = f"{np.mean(reductions):.1%}" if reductions else "n/a (target not reached by both)"
    print(f"measured: {mean} fewer rounds on average (best seed {max(reductions, default=float('nan')):.1%}); "
          f"paper: up to 54.1 % fewer rounds on MNIST")


def check_fedcm(args) -> None:
    base = EnvConfig(
        dataset="mnist", data_root=args.data_root, model=args.model, partition="dirichlet", dirichlet_alpha=0.1,
        num_clients=20, val_fraction=0.1, num_rounds=args.rounds_b, local_epochs=args.epochs_b, batch_size=32,
        lr=0.05, latency_weight=0.0, comm_weight=0.0, device=args.device,
    )
    uniform = EnvConfig(**{**base.to_dict(), "clients_per_round": 8})   # 8 of 20 drawn uniformly, all upload
    bandit = EnvConfig(**{**base.to_dict(), "clients_per_round": 20})   # the bandit picks 8 of 20
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    records = evaluate_policies(uniform, [FedAvgPolicy(), FedPdpPolicy(), FedCAPolicy()], seeds, progress=False)
    records.update(evaluate_policies(bandit, [FedCMTS(select_fraction=0.4)], seeds, progress=False))
    print(f"\n(b) FedCA / FedCM-TS vs FedAvg / FedPdp: MNIST, Dirichlet alpha=0.1 over 20 clients, 8 per round, "
          f"{args.model}, E={args.epochs_b}, {args.rounds_b} rounds, FedCA score: ce")
    print("method     final accuracy     rounds to fedavg's final acc   speed-up vs fedavg")
    baseline = [rounds_to(f.accuracy, f.final_accuracy) for f in records["fedavg"]]
    for name, episodes in records.items():
        finals = [r.final_accuracy for r in episodes]
        rounds = [rounds_to(r.accuracy, f.final_accuracy) for r, f in zip(episodes, records["fedavg"])]
        reached = [r for r in rounds if r is not None]
        speed = [base / r for base, r in zip(baseline, rounds) if r]
        rounds_text = f"{np.mean(reached):.1f}" if reached else "never"
        speed_text = f"{np.mean(speed):.2f}x" if speed else "n/a"
        print(f"{name:<9}  {np.mean(finals):.4f} +- {np.std(finals):.4f}  {rounds_text:>6} "
              f"({len(reached)}/{len(rounds)} seeds)              {speed_text}")
    print("paper (CIFAR-10, VGG-11): FedCM up to 4.17x faster convergence and up to +37.25 points of accuracy")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-root", required=True, help="torchvision-layout folder holding MNIST/raw")
    parser.add_argument("--model", default="mlp", choices=["mlp", "lenet5"])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=1000)
    parser.add_argument("--rounds-a", type=int, default=60, help="rounds of check (a)")
    parser.add_argument("--x", type=int, default=1, help="classes per non-IID client in check (a)")
    parser.add_argument("--noniid", type=int, default=5, help="non-IID clients (of 10) in check (a)")
    parser.add_argument("--target", type=float, default=0.85, help="target accuracy of check (a)")
    parser.add_argument("--rounds-b", type=int, default=40, help="rounds of check (b)")
    parser.add_argument("--epochs-b", type=int, default=2, help="local epochs of check (b)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--only", choices=["a", "b"], default=None)
    args = parser.parse_args(argv)
    print(f"torch threads: {torch.get_num_threads()}; load average: {os.getloadavg()[0]:.2f}")
    start = time.perf_counter()
    if args.only in (None, "a"):
        check_fedadp(args)
    if args.only in (None, "b"):
        check_fedcm(args)
    print(f"\ntotal time: {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
