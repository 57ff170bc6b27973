"""Train VDN client-selection agents on the trace-driven FL environment (the main job).

    python train_agents.py                       # embedded default federation (mnist5k, 10 clients)
    python train_agents.py --dataset mnist --data-root ~/data --episodes 2
    python train_agents.py --config my_run.yaml --seed 3
    python train_agents.py --preset mnist-lenet --data-root ~/data   # a paper task (fedenv.presets)

    python train_agents.py --resume runs/X --episodes 800   # extend a finished or interrupted run
    python train_agents.py --seeds 0 1 2 --run-dir runs/s   # one run per seed in runs/s/seed_<s>

Writes under ``--run-dir`` (default ``runs/<timestamp>``): TensorBoard logs, ``checkpoint.pt`` (weights,
env config, observation layout), ``best.pt`` (the best greedy policy on the validation seeds) and
``config.json``; a folder that holds another run is refused (continue it with ``--resume``, or clear it
with ``--overwrite``). At the end it prints the learned greedy policy against ``fedavg`` and ``random`` on
held-out seeds and writes that comparison into the run folder: ``results.csv``, ``results.json``,
``summary.png`` and ``learning_curves.png`` (as ``evaluate.py --out`` does).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import torch

from agents.checkpoint import load_checkpoint
from agents.config import VDNConfig
from agents.trainer import CHECKPOINT_NAME, check_for_federation, train_vdn
from agents.validation import BEST_NAME, VALIDATION_SEEDS, check_validation_seeds
from fedenv.baselines import FedAvgPolicy, RandomPolicy
from fedenv.cli import (
    FlagParser,
    add_dataclass_arguments,
    add_env_arguments,
    check_options_used,
    component_flags,
    dataclass_from_args,
    env_config_from_args,
    parse_with_config_file,
)
from fedenv.config import EnvConfig
from fedenv.distributed import RayOptions, add_ray_arguments, ray_options_from_args, start_ray
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation import RESULT_FILES, compare
from fedenv.fileio import atomic_write_text, claim_output_folder, json_text

DEFAULT_EPISODES = 300
HELD_OUT_SEEDS = (1000, 1001, 1002)
DEFAULT_THREADS = 1
DEFAULT_EVAL_INTERVAL = 50
DEFAULT_CHECKPOINT_INTERVAL = 25
"""Torch threads per run: measured on a 20-episode run of the default federation, a second thread did not
pay (docs/guides/training.md, "Threads")."""
REFUSED_ON_RESUME = ("seed", "seeds", "preset", "config", "init_from")
RUN_FILES = ("config.json", CHECKPOINT_NAME, BEST_NAME, "events.out.tfevents.*", *RESULT_FILES)
"""What a run writes into its folder (its final comparison too): a new run into a folder holding them needs
``--overwrite``."""


@dataclass
class RunPlan:
    """One training run: where it writes and what it trains (``config.json`` holds all but ``run_dir``)."""

    run_dir: Path
    env_config: EnvConfig
    vdn_config: VDNConfig
    episodes: int
    seed: int
    schedule_episodes: int
    init_from: str | None = None
    eval_interval: int = DEFAULT_EVAL_INTERVAL
    val_seeds: tuple[int, ...] = VALIDATION_SEEDS
    num_envs: int = 1
    checkpoint_interval: int = DEFAULT_CHECKPOINT_INTERVAL
    eval_seeds: tuple[int, ...] = HELD_OUT_SEEDS
    overlap_learner: bool = False

    def to_json(self) -> str:
        """Standard JSON (:func:`fedenv.fileio.json_text`: an infinity is ``null``, read back as infinity)."""
        return json_text({"episodes": self.episodes, "schedule_episodes": self.schedule_episodes, "seed": self.seed,
                          "init_from": self.init_from, "eval_interval": self.eval_interval,
                          "val_seeds": list(self.val_seeds), "eval_seeds": list(self.eval_seeds),
                          "num_envs": self.num_envs, "checkpoint_interval": self.checkpoint_interval,
                          "overlap_learner": self.overlap_learner, "env": self.env_config.to_dict(),
                          "vdn": self.vdn_config.to_dict()}, indent=2) + "\n"


def build_parser() -> FlagParser:
    """The parser of every flag: the run's own, ``--preset``, the EnvConfig fields and ``--vdn-*``."""
    parser = FlagParser(prog="train_agents.py", description=__doc__)
    parser.add_argument("--episodes", type=int, default=None, metavar="N",
                        help=f"training episodes, each num_rounds FL rounds (default: {DEFAULT_EPISODES}); with "
                             f"--resume, extends the run to N episodes (epsilon keeps the run's first horizon)")
    parser.add_argument("--seed", type=int, default=None, metavar="N",
                        help="run seed (default 0): training episodes use env seeds 10000 + 1000000 * seed + "
                             "episode, so the evaluation seeds (1000 and up) are never trained on")
    parser.add_argument("--run-dir", default=None, metavar="DIR",
                        help="folder for the TensorBoard logs, checkpoint.pt, best.pt, config.json and the final "
                             "comparison (results.csv, results.json, summary.png, learning_curves.png) "
                             "(default: runs/<timestamp>); a folder holding another run is refused")
    parser.add_argument("--overwrite", action="store_true",
                        help="delete the files of another run in --run-dir (config.json, checkpoints, TensorBoard "
                             "events, the final comparison's results and plots) before training; other files there "
                             "are left")
    parser.add_argument("--resume", default=None, metavar="RUN_DIR",
                        help="continue the run in RUN_DIR from its last checkpoint, to --episodes N if given (its "
                             "config.json fixes the configuration: --seed, --preset, --config and configuration "
                             "flags are refused)")
    parser.add_argument("--config", default=None, metavar="FILE",
                        help="YAML or JSON file mapping flag names (dashes or underscores) to values; flags "
                             "given on the command line override it")
    parser.add_argument("--checkpoint-interval", type=int, default=None, metavar="N",
                        help="episodes between checkpoints, written atomically; the last episode always writes "
                             f"one (default: {DEFAULT_CHECKPOINT_INTERVAL}, or the resumed run's)")
    parser.add_argument("--num-envs", type=int, default=None, metavar="N",
                        help="federations played side by side through one batched engine, each with its own "
                             "seed (default: 1, or the resumed run's)")
    parser.add_argument("--eval-seeds", type=int, nargs="*", default=None, metavar="SEED",
                        help="held-out env seeds of the final comparison of the learned policy against fedavg "
                             "and random (default: 1000 1001 1002, or the resumed run's; the flag alone skips the "
                             "comparison)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress bar: a plain line every 10 episodes or 30 s instead (what a run prints "
                             "anyway when stdout is not a terminal, e.g. a log file)")
    add_run_option_arguments(parser)
    add_env_arguments(parser)
    add_dataclass_arguments(parser, VDNConfig, prefix="vdn-")
    add_ray_arguments(parser, training=True)
    return parser


def add_run_option_arguments(parser: argparse.ArgumentParser) -> None:
    """Validation while training, threads, fine-tuning and several seeds."""
    group = parser.add_argument_group("run options", "validation while training, threads, fine-tuning, seeds")
    group.add_argument("--eval-interval", type=int, default=None, metavar="N",
                       help=f"episodes between greedy evaluations on the validation seeds, logged as eval/* and "
                            f"kept as best.pt when best (0: never; default: {DEFAULT_EVAL_INTERVAL}, or the "
                            f"resumed run's)")
    group.add_argument("--val-seeds", type=int, nargs="+", default=None, metavar="SEED",
                       help="validation env seeds, apart from training (10000 and up) and --eval-seeds "
                            "(default: 500 501 502, or the resumed run's)")
    group.add_argument("--threads", type=int, default=DEFAULT_THREADS, metavar="N",
                       help="torch intra-op and inter-op threads (default: %(default)s, measured: a second "
                            "thread does not speed up the small per-client training)")
    group.add_argument("--overlap-learner", action="store_true", default=None,
                       help="run the learner's gradient steps in a second thread while the next episode plays "
                            "(Ape-X-style actor/learner split: the actor acts with the weights of the episode's "
                            "start; deterministic given the seed, but other weights than the default loop's; "
                            "off by default; a resumed run keeps its own unless the flag is given). Local runs only")
    group.add_argument("--init-from", default=None, metavar="CHECKPOINT",
                       help="start from this checkpoint's Q-network weights (fine-tuning on another setting; "
                            "the observation layouts and --vdn-hidden must match)")
    group.add_argument("--seeds", type=int, nargs="+", default=None, metavar="SEED",
                       help="train one run per seed, into RUN_DIR/seed_<seed>/ (instead of --seed)")


def read_run_config(run_dir: Path) -> tuple[EnvConfig, VDNConfig, int, int]:
    """The configuration a run was started with (its ``config.json``): env, VDN, episodes, seed.

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


def read_run_plan(run_dir: Path) -> RunPlan:
    """The run in ``run_dir`` (:func:`read_run_config` plus the run options of its ``config.json``). Runs
    written before runs could be extended or validated: the schedule spans their planned episodes and
    validation is off.

    Raises:
        FileNotFoundError, ValueError: see :func:`read_run_config`.
    """
    env_config, vdn_config, episodes, seed = read_run_config(run_dir)
    saved = json.loads((run_dir / "config.json").read_text())
    return RunPlan(run_dir, env_config, vdn_config, episodes, seed, int(saved.get("schedule_episodes", episodes)),
                   saved.get("init_from"), int(saved.get("eval_interval", 0)),
                   tuple(saved.get("val_seeds", VALIDATION_SEEDS)), int(saved.get("num_envs", 1)),
                   int(saved.get("checkpoint_interval", DEFAULT_CHECKPOINT_INTERVAL)),
                   tuple(saved.get("eval_seeds", HELD_OUT_SEEDS)), bool(saved.get("overlap_learner", False)))


def configuration_flags_given(parser: argparse.ArgumentParser, args: argparse.Namespace) -> list[str]:
    """The configuration flags refused by ``--resume`` (seed, preset, config file, init-from, EnvConfig and
    VDNConfig fields, component options) given a value, as ``--flag`` strings. ``--episodes`` is allowed: it
    extends the run."""
    fields = {f.name for f in dataclasses.fields(EnvConfig)} | {f"vdn_{f.name}" for f in dataclasses.fields(VDNConfig)}
    names = fields | set(component_flags()) | set(REFUSED_ON_RESUME)
    return [a.option_strings[0] for a in parser._actions if a.dest in names and getattr(args, a.dest, None) is not None]


def resumed_plan(parser: argparse.ArgumentParser, args: argparse.Namespace) -> RunPlan:
    """The run in ``--resume``, extended to ``--episodes`` when given.

    Raises:
        ValueError: a configuration flag was given, or ``--episodes`` is below the episodes already played.
    """
    given = configuration_flags_given(parser, args)
    if given:
        raise ValueError(f"--resume takes the configuration from {Path(args.resume) / 'config.json'}; "
                         f"drop {', '.join(given)} (start a new run to change them)")
    plan = read_run_plan(Path(args.resume))
    if args.episodes is not None:
        played = load_checkpoint(plan.run_dir / CHECKPOINT_NAME)["episodes"]
        if args.episodes < played:
            raise ValueError(f"--episodes={args.episodes}: the run has played {played} episodes already "
                             f"(a run can be extended, not shortened)")
        plan.episodes = args.episodes
    return with_validation(plan, args)


def new_plans(args: argparse.Namespace) -> list[RunPlan]:
    """One plan per seed (``--seeds``: in ``RUN_DIR/seed_<s>``) or the one run of ``--seed``.

    Raises:
        ValueError: a bad value of a configuration flag, ``--episodes`` below 1, or ``--seed`` with ``--seeds``.
    """
    if args.seed is not None and args.seeds is not None:
        raise ValueError("give --seed or --seeds, not both")
    run_dir = Path(args.run_dir or Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S"))
    env_config = env_config_from_args(args)
    check_options_used(env_config)
    vdn_config = dataclass_from_args(VDNConfig, args, prefix="vdn-").validate()
    episodes = DEFAULT_EPISODES if args.episodes is None else args.episodes
    if episodes < 1:
        raise ValueError(f"--episodes={episodes} must be >= 1")
    if args.seeds is None:
        return [with_validation(RunPlan(run_dir, env_config, vdn_config, episodes, args.seed or 0, episodes,
                                        args.init_from), args)]
    return [with_validation(RunPlan(run_dir / f"seed_{seed}", env_config, vdn_config, episodes, seed, episodes,
                                    args.init_from), args) for seed in dict.fromkeys(args.seeds)]


def with_validation(plan: RunPlan, args: argparse.Namespace) -> RunPlan:
    """``plan`` with ``--eval-interval``, ``--val-seeds``, ``--eval-seeds``, ``--num-envs``,
    ``--checkpoint-interval`` and ``--overlap-learner`` where given (else its own: a resumed run keeps
    validating, comparing and batching as it did), checked.

    Raises:
        ValueError: a negative validation interval, a checkpoint interval or ``--num-envs`` below 1, or bad
            validation seeds (:func:`agents.validation.check_validation_seeds`).
    """
    if args.num_envs is not None:
        plan.num_envs = args.num_envs
    if args.checkpoint_interval is not None:
        plan.checkpoint_interval = args.checkpoint_interval
    for flag, value in (("--checkpoint-interval", plan.checkpoint_interval), ("--num-envs", plan.num_envs)):
        if value < 1:
            raise ValueError(f"{flag}={value} must be >= 1")
    if args.overlap_learner is not None:
        plan.overlap_learner = args.overlap_learner
    if args.eval_interval is not None:
        plan.eval_interval = args.eval_interval
    if args.val_seeds is not None:
        plan.val_seeds = tuple(args.val_seeds)
    if args.eval_seeds is not None:
        plan.eval_seeds = tuple(args.eval_seeds)
    if plan.eval_interval < 0:
        raise ValueError(f"--eval-interval={plan.eval_interval} must be >= 0")
    plan.val_seeds = tuple(check_validation_seeds(plan.val_seeds, plan.eval_seeds))
    return plan


def check_threads(args: argparse.Namespace) -> None:
    """Raise ``ValueError`` naming ``--threads`` below 1."""
    if args.threads < 1:
        raise ValueError(f"--threads={args.threads} must be >= 1")


def set_threads(threads: int) -> None:
    """Torch intra-op and inter-op threads. Inter-op threads can be set once per process, before any
    parallel work: a later call (a second ``main`` in one process) keeps the first setting."""
    torch.set_num_threads(threads)
    if torch.get_num_interop_threads() != threads:
        with contextlib.suppress(RuntimeError):
            torch.set_num_interop_threads(threads)


def train(args: argparse.Namespace, plan: RunPlan, ray_options: RayOptions | None = None) -> None:
    """Train ``plan`` (resumed with ``--resume``), locally or, with ``ray_options``, with Ray rollout
    actors (:mod:`agents.ray_training`: the same loop, validation, ``--init-from`` and extension); then
    compare the greedy policy on the plan's ``eval_seeds``.

    Raises:
        ValueError, FileNotFoundError: see :func:`agents.trainer.train_vdn`.
    """
    plan.run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(plan.run_dir / "config.json", plan.to_json())
    print(f"run dir: {plan.run_dir}  (tensorboard --logdir {plan.run_dir})", flush=True)
    start = time.perf_counter()
    trainer, _ = train_vdn(plan.env_config, plan.vdn_config, plan.episodes, plan.seed, plan.run_dir,
                           plan.checkpoint_interval, progress="lines" if args.no_progress else "auto",
                           resume=bool(args.resume), num_envs=plan.num_envs, schedule_episodes=plan.schedule_episodes,
                           eval_interval=plan.eval_interval, val_seeds=plan.val_seeds,
                           init_from=None if args.resume else plan.init_from, ray_options=ray_options,
                           overlap_learner=plan.overlap_learner)
    print(f"trained to episode {trainer.episode} in {time.perf_counter() - start:.0f} s; "
          f"checkpoint: {plan.run_dir / CHECKPOINT_NAME}", flush=True)
    if trainer.learner.gradient_steps == 0:
        print(f"warning: the learner took no gradient step (the first comes after --vdn-learning-starts "
              f"{plan.vdn_config.learning_starts} environment steps; this run played {trainer.steps}), so the greedy "
              "policy acts on the Q-network's initial weights: train more episodes or lower --vdn-learning-starts",
              file=sys.stderr, flush=True)
    if plan.eval_seeds:
        compare(plan.env_config, [FedAvgPolicy(), RandomPolicy(), trainer.greedy_policy()], list(plan.eval_seeds),
                out_dir=plan.run_dir, progress=not args.no_progress and sys.stdout.isatty(),
                title=comparison_title(list(plan.eval_seeds)))


def comparison_title(seeds: list[int]) -> str:
    """The line above the final comparison: which seeds, what the team return is, and why its numbers are
    not README's table (that one is every policy on more held-out seeds, from ``evaluate.py``)."""
    return (f"\nheld-out seeds {seeds} (team return = shared reward summed over rounds; mean +- std over these "
            f"{len(seeds)} seeds; README's table is every policy on more seeds: evaluate.py --checkpoint "
            f"CHECKPOINT --policies all):")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parse_with_config_file(parser, argv)
    try:
        check_threads(args)
        ray_options = ray_options_from_args(args)
        if args.resume and args.overwrite:
            raise ValueError("--overwrite starts a new run in --run-dir; it does not go with --resume")
        plans = [resumed_plan(parser, args)] if args.resume else new_plans(args)
        ClientSelectionEnv(plans[0].env_config)  # data, trace, model and partition checks: fail before any output
        check_for_federation(plans[0].vdn_config, plans[0].env_config)  # the demonstrator, the exploration schedule
        if ray_options is not None:
            start_ray(ray_options)  # a cluster too small for --num-workers is refused, never waited on
        for plan in [] if args.resume else plans:  # the last check: --overwrite deletes
            claim_output_folder(plan.run_dir, RUN_FILES, args.overwrite,
                                f"--run-dir {plan.run_dir} holds another run: continue it with --resume "
                                f"{plan.run_dir}, or give --overwrite to clear it first")
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    set_threads(args.threads)
    for plan in plans:
        try:
            train(args, plan, ray_options)
        except (ValueError, FileNotFoundError) as error:
            parser.error(str(error))
    return 0


if __name__ == "__main__":
    sys.exit(main())
