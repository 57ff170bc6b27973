"""Train VDN client-selection agents on the trace-driven FL environment (the main job).

    python train_agents.py                       # embedded default federation (mnist5k, 10 clients)
    python train_agents.py --dataset mnist --data-root ../shared/data --episodes 2
    python train_agents.py --config my_run.yaml --seed 3
    python train_agents.py --preset mnist-lenet --data-root ../shared/data   # a paper task (fedenv.presets)

Writes under ``--run-dir`` (default ``runs/<timestamp>``): TensorBoard logs, ``checkpoint.pt`` (weights,
env config, observation layout) and ``config.json``. At the end it prints the learned greedy policy
against ``fedavg`` and ``random`` on held-out seeds.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
import time
from datetime import datetime
from pathlib import Path

from agents.config import VDNConfig
from agents.ray_training import train_vdn_on_ray
from agents.trainer import train_vdn
from fedenv.baselines import FedAvgPolicy, RandomPolicy
from fedenv.cli import (
    FlagParser,
    add_dataclass_arguments,
    add_env_arguments,
    dataclass_from_args,
    env_config_from_args,
    parse_with_config_file,
)
from fedenv.config import EnvConfig
from fedenv.distributed import add_ray_arguments, ray_options_from_args
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation import compare
from fedenv.fileio import atomic_write_text

DEFAULT_EPISODES = 500
HELD_OUT_SEEDS = (1000, 1001, 1002)


def build_parser() -> FlagParser:
    """The parser of every flag: the run's own, ``--preset``, the EnvConfig fields and ``--vdn-*``."""
    parser = FlagParser(prog="train_agents.py", description=__doc__)
    parser.add_argument("--episodes", type=int, default=None, metavar="N",
                        help=f"training episodes, each num_rounds FL rounds (default: {DEFAULT_EPISODES})")
    parser.add_argument("--seed", type=int, default=None, metavar="N",
                        help="run seed (default 0): training episodes use env seeds 10000 + 1000000 * seed + "
                             "episode, so the evaluation seeds (1000 and up) are never trained on")
    parser.add_argument("--run-dir", default=None, metavar="DIR",
                        help="folder for the TensorBoard logs, checkpoint.pt and config.json "
                             "(default: runs/<timestamp>)")
    parser.add_argument("--resume", default=None, metavar="RUN_DIR",
                        help="continue the run in RUN_DIR from its last checkpoint (its config.json fixes the "
                             "configuration: --episodes, --seed, --preset, --config and configuration flags are "
                             "refused)")
    parser.add_argument("--config", default=None, metavar="FILE",
                        help="YAML or JSON file mapping flag names (dashes or underscores) to values; flags "
                             "given on the command line override it")
    parser.add_argument("--checkpoint-interval", type=int, default=25, metavar="N",
                        help="episodes between checkpoints, written atomically; the last episode always writes "
                             "one (default: %(default)s)")
    parser.add_argument("--num-envs", type=int, default=1, metavar="N",
                        help="federations played side by side through one batched engine, each with its own "
                             "seed (default: %(default)s)")
    parser.add_argument("--eval-seeds", type=int, nargs="*", default=list(HELD_OUT_SEEDS), metavar="SEED",
                        help="held-out env seeds of the final comparison of the learned policy against fedavg "
                             "and random (default: 1000 1001 1002; the flag alone skips the comparison)")
    parser.add_argument("--no-progress", action="store_true",
                        help="hide the progress bars (for logs and batch jobs)")
    add_env_arguments(parser)
    add_dataclass_arguments(parser, VDNConfig, prefix="vdn-")
    add_ray_arguments(parser, training=True)
    return parser


def read_run_config(run_dir: Path) -> tuple[EnvConfig, VDNConfig, int, int]:
    """The configuration a run was started with (its ``config.json``).

    Raises:
        FileNotFoundError: no config.json in ``run_dir``. ValueError: the file is not a run configuration.
    """
    path = run_dir / "config.json"
    if not path.is_file():
        raise FileNotFoundError(f"cannot resume: no config.json in {run_dir}")
    saved = json.loads(path.read_text())
    try:
        return (EnvConfig.from_dict(saved["env"]).validate(), VDNConfig.from_dict(saved["vdn"]).validate(),
                int(saved["episodes"]), int(saved["seed"]))
    except (KeyError, TypeError) as error:
        raise ValueError(f"cannot resume: {path} is not a train_agents.py run configuration ({error})") from error


def configuration_flags_given(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The configuration flags (episodes, seed, preset, config file, EnvConfig and VDNConfig fields)
    given a value, as ``--flag`` strings."""
    fields = {f.name for f in dataclasses.fields(EnvConfig)} | {f"vdn_{f.name}" for f in dataclasses.fields(VDNConfig)}
    names = fields | {"episodes", "seed", "preset", "config"}
    return [a.option_strings[0] for a in parser._actions if a.dest in names and getattr(args, a.dest, None) is not None]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parse_with_config_file(parser, argv)
    for flag, value in (("--checkpoint-interval", args.checkpoint_interval), ("--num-envs", args.num_envs)):
        if value < 1:
            parser.error(f"{flag}={value} must be >= 1")
    try:
        ray_options = ray_options_from_args(args)
        if args.resume:
            given = configuration_flags_given(parser, args)
            if given:
                raise ValueError(f"--resume takes the configuration from {Path(args.resume) / 'config.json'}; "
                                 f"drop {', '.join(given)} (start a new run to change them)")
            run_dir = Path(args.resume)
            env_config, vdn_config, episodes, seed = read_run_config(run_dir)
        else:
            run_dir = Path(args.run_dir or Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S"))
            env_config = env_config_from_args(args)
            vdn_config = dataclass_from_args(VDNConfig, args, prefix="vdn-").validate()
            episodes = DEFAULT_EPISODES if args.episodes is None else args.episodes
            seed = 0 if args.seed is None else args.seed
            if episodes < 1:
                raise ValueError(f"--episodes={episodes} must be >= 1")
        ClientSelectionEnv(env_config)  # data, trace, model and partition checks: fail before any output
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    if not args.resume:
        run_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(run_dir / "config.json", json.dumps({
            "episodes": episodes, "seed": seed, "env": env_config.to_dict(), "vdn": vdn_config.to_dict(),
        }, indent=2))
    print(f"run dir: {run_dir}  (tensorboard --logdir {run_dir})", flush=True)
    start = time.perf_counter()
    train = train_vdn if ray_options is None else functools.partial(train_vdn_on_ray, options=ray_options)
    try:
        trainer, _ = train(env_config, vdn_config, episodes, seed, run_dir, args.checkpoint_interval,
                           progress=not args.no_progress, resume=bool(args.resume), num_envs=args.num_envs)
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    print(f"trained to episode {trainer.episode} in {time.perf_counter() - start:.0f} s; "
          f"checkpoint: {run_dir / 'checkpoint.pt'}")
    if args.eval_seeds:
        compare(env_config, [FedAvgPolicy(), RandomPolicy(), trainer.greedy_policy()], list(args.eval_seeds),
                progress=not args.no_progress,
                title=f"\nheld-out seeds {list(args.eval_seeds)} (team return = shared reward summed over rounds):")
    return 0


if __name__ == "__main__":
    sys.exit(main())
