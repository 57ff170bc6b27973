"""Stable-Baselines3 PPO with one policy shared by all clients (parameter sharing: one sub-env per client).

Trains on the embedded default federation, saves the policy, and compares it with fedavg and random on
held-out seeds through the same policy interface that evaluate.py uses; the saved policy can also be
evaluated with ``python evaluate.py --sb3 <out>/policy --policies fedavg,random``.

    python examples/sb3_ppo.py --episodes 20 --out results/sb3_ppo      # needs: pip install -e ".[sb3]"
    python examples/sb3_ppo.py --maskable                               # sb3-contrib MaskablePPO
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fedenv.baselines import FedAvgPolicy, RandomPolicy
from fedenv.config import EnvConfig
from fedenv.evaluation import compare
from fedenv.integrations.sb3 import SB3Policy, sb3_progress_callback, sb3_vec_env


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=20, help="training episodes (per vector env)")
    parser.add_argument("--num-rounds", type=int, default=20)
    parser.add_argument("--num-clients", type=int, default=10)
    parser.add_argument("--eval-episodes", type=int, default=3)
    parser.add_argument("--maskable", action="store_true", help="use sb3-contrib's MaskablePPO")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/sb3_ppo")
    args = parser.parse_args(argv)

    config = EnvConfig(num_rounds=args.num_rounds, num_clients=args.num_clients, clients_per_round=args.num_clients)
    venv = sb3_vec_env(config, num_envs=1)
    out = Path(args.out)
    if args.maskable:
        from sb3_contrib import MaskablePPO as Algorithm
    else:
        from stable_baselines3 import PPO as Algorithm
    model = Algorithm("MlpPolicy", venv, seed=args.seed, n_steps=args.num_rounds, batch_size=args.num_rounds * 2,
                      n_epochs=4, gamma=1.0, tensorboard_log=str(out / "tensorboard"), verbose=0)
    print(f"{args.episodes} training episodes: a smoke test, too short to learn (SB3 PPO reached 0.74 of the best "
          "fixed policy's return at 150 episodes, benchmarks/learners.py; docs/results/studies.md)", flush=True)
    model.learn(total_timesteps=args.episodes * args.num_rounds * args.num_clients,
                callback=sb3_progress_callback(args.episodes))
    policy = SB3Policy(model, "MaskablePPO" if args.maskable else "PPO", "append", config)
    policy.save(out / "policy")

    compare(config, [FedAvgPolicy(), RandomPolicy(), policy], list(range(1000, 1000 + args.eval_episodes)), out)
    print(f"policy saved to {out / 'policy'}; results in {out}")


if __name__ == "__main__":
    main()
