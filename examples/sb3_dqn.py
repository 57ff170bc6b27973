"""Stable-Baselines3 DQN with one Q-network shared by all clients (parameter sharing: one sub-env per client).

    python examples/sb3_dqn.py --episodes 20 --out results/sb3_dqn      # needs: pip install -e ".[sb3]"
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
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--num-rounds", type=int, default=20)
    parser.add_argument("--num-clients", type=int, default=10)
    parser.add_argument("--eval-episodes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/sb3_dqn")
    args = parser.parse_args(argv)

    from stable_baselines3 import DQN

    config = EnvConfig(num_rounds=args.num_rounds, num_clients=args.num_clients, clients_per_round=args.num_clients)
    out = Path(args.out)
    steps = args.episodes * args.num_rounds * args.num_clients
    model = DQN("MlpPolicy", sb3_vec_env(config, num_envs=1), seed=args.seed, gamma=1.0,
                learning_starts=args.num_clients,
                train_freq=1, gradient_steps=2, target_update_interval=10 * args.num_clients,
                exploration_fraction=0.5, buffer_size=50_000, tensorboard_log=str(out / "tensorboard"), verbose=0)
    print(f"{args.episodes} training episodes: a smoke test, too short to learn (SB3 PPO reached 0.74 of the best "
          "fixed policy's return at 150 episodes, benchmarks/learners.py; docs/results/studies.md)", flush=True)
    model.learn(total_timesteps=steps, callback=sb3_progress_callback(args.episodes))
    policy = SB3Policy(model, "DQN", "append", config)
    policy.save(out / "policy")

    compare(config, [FedAvgPolicy(), RandomPolicy(), policy], list(range(1000, 1000 + args.eval_episodes)), out)
    print(f"policy saved to {out / 'policy'}; results in {out}")


if __name__ == "__main__":
    main()
