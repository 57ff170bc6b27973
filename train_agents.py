"""Train VDN client-selection agents on the trace-driven FL environment (the main job).

    python train_agents.py                       # embedded default federation (mnist5k, 10 clients)
    python train_agents.py --dataset mnist --data-root ../shared/data --episodes 2
    python train_agents.py --config my_run.yaml --seed 3

Writes under ``--run-dir`` (default ``runs/<timestamp>``): TensorBoard logs, ``checkpoint.pt`` (weights,
env config, observation layout) and ``config.json``. At the end it prints the learned greedy policy
against ``fedavg`` and ``random`` on held-out seeds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from pathlib import Path

from agents.trainer import greedy_policy, train_vdn
from agents.vdn import VDNConfig
from fedenv.config import EnvConfig
from fedenv.cli import add_dataclass_arguments, dataclass_from_args, env_config_from_args, parse_with_config_file
from fedenv.evaluation import evaluate_policies, format_table, per_episode_metrics, summarise
from fedenv.fileio import atomic_write_text
from fedenv.observation import feature_names
from fedenv.policies import FedAvgPolicy, RandomPolicy

DEFAULT_EPISODES = 300
HELD_OUT_SEEDS = (1000, 1001, 1002)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=DEFAULT_EPISODES, help="training episodes (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="run seed: training episodes use env seeds "
                        "10000 + 1000000 * seed + episode; evaluation seeds 1000.. are never trained on")
    parser.add_argument("--run-dir", default=None, help="output folder (default: runs/<timestamp>)")
    parser.add_argument("--config", default=None, help="YAML or JSON file of flag values (flags override it)")
    parser.add_argument("--checkpoint-interval", type=int, default=25, help="episodes between checkpoints")
    parser.add_argument("--eval-seeds", type=int, nargs="*", default=list(HELD_OUT_SEEDS),
                        help="held-out seeds of the final comparison (none to skip it)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    add_dataclass_arguments(parser, EnvConfig)
    add_dataclass_arguments(parser, VDNConfig, prefix="vdn-")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parse_with_config_file(parser, argv)
    try:
        env_config = env_config_from_args(args)
        vdn_config = dataclass_from_args(VDNConfig, args, prefix="vdn-")
        if args.episodes < 1:
            raise ValueError(f"--episodes={args.episodes} must be >= 1")
    except ValueError as error:
        parser.error(str(error))
    run_dir = Path(args.run_dir or Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S"))
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run_dir / "config.json", json.dumps({
        "episodes": args.episodes, "seed": args.seed, "env": env_config.to_dict(), "vdn": vdn_config.to_dict(),
    }, indent=2))
    print(f"run dir: {run_dir}  (tensorboard --logdir {run_dir})", flush=True)
    start = time.perf_counter()
    learner, _ = train_vdn(env_config, vdn_config, args.episodes, args.seed, run_dir,
                           args.checkpoint_interval, progress=not args.no_progress)
    print(f"trained {args.episodes} episodes in {time.perf_counter() - start:.0f} s; checkpoint: {run_dir / 'checkpoint.pt'}")
    if args.eval_seeds:
        names = feature_names(env_config.history_length)
        policies = [FedAvgPolicy(), RandomPolicy(), greedy_policy(learner, env_config, names)]
        records = evaluate_policies(env_config, policies, list(args.eval_seeds), progress=not args.no_progress)
        print(f"\nheld-out seeds {list(args.eval_seeds)} (team return = shared reward summed over rounds):")
        print(format_table(summarise(per_episode_metrics(records))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
