"""Our VDN next to third-party learners on the same env, the same budget of FL rounds and the same
held-out seeds: BenchMARL's QMIX and IQL (and MAPPO on request) through
:mod:`fedenv.integrations.benchmarl`, and Stable-Baselines3 PPO with one policy shared by all clients
through :mod:`fedenv.integrations.sb3`.

Budget: ``--episodes`` episodes of ``num_rounds`` FL rounds each, i.e. ``episodes * num_rounds``
environment steps for VDN and BenchMARL (a BenchMARL frame is one step of the whole federation) and
``episodes * num_rounds * num_clients`` steps for SB3, whose sub-environments are the clients (one FL
round is one step of every client). The other hyperparameters follow ``examples/*.py``. Every learner is
evaluated greedily in the probing mode it was trained in, next to FedAvg and the fixed policies (each in
its own mode) on the same seeds; the fixed policies play first, so that the data is loaded before any
``train_s`` (training wall time, s) is measured. A learner that cannot run (library missing, or an error while training
or evaluating) gets a row whose ``status`` gives the exception, instead of numbers.

Writes ``table.csv`` (``learner, status, train_s`` and :func:`benchmarks.common.compare_columns`) and
``episodes.json``.

    python -m benchmarks.learners --quick --out results/learners_quick
    python -m benchmarks.learners --episodes 300 --out results/learners
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file, python benchmarks/NAME.py: import this checkout (repo root), as -m does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import time

from benchmarks.common import (
    PRINTED,
    add_study_arguments,
    apply_quick,
    base_config,
    compare_columns,
    eval_seeds,
    evaluate_records,
    fixed_names,
    train_agent,
    write_study,
)
from fedenv.baselines import Policy
from fedenv.config import EnvConfig
from fedenv.evaluation import per_episode_metrics
from fedenv.names import check_known

BENCHMARL_ALGORITHMS = {"benchmarl-qmix": "QmixConfig", "benchmarl-iql": "IqlConfig", "benchmarl-mappo": "MappoConfig"}
"""Learner name -> BenchMARL algorithm config class (``benchmarl.algorithms``)."""
LEARNERS = ("vdn", "sb3-ppo", *BENCHMARL_ALGORITHMS)
DEFAULT_LEARNERS = ("vdn", "benchmarl-qmix", "benchmarl-iql", "sb3-ppo")


def benchmarl_experiment_config(frames: int, num_rounds: int, run_dir: Path):
    """BenchMARL ``ExperimentConfig`` for ``frames`` federation steps, as ``examples/benchmarl_vdn.py``
    (batches of up to 5 episodes, undiscounted, Adam 5e-4, exploration annealed over half the run)."""
    from benchmarl.experiment import ExperimentConfig

    config = ExperimentConfig.get_from_yaml()
    per_batch = min(frames, 5 * num_rounds)
    config.max_n_frames = frames
    config.off_policy_collected_frames_per_batch = config.on_policy_collected_frames_per_batch = per_batch
    config.off_policy_n_envs_per_worker = config.on_policy_n_envs_per_worker = 1
    config.off_policy_n_optimizer_steps = per_batch
    config.off_policy_train_batch_size = config.on_policy_minibatch_size = min(64, per_batch)
    config.on_policy_n_minibatch_iters = 4
    config.off_policy_memory_size = 50_000
    config.gamma, config.lr = 1.0, 5e-4
    config.exploration_anneal_frames = max(1, frames // 2)
    config.evaluation, config.render, config.create_json = False, False, False
    config.loggers = ["csv"]
    run_dir.mkdir(parents=True, exist_ok=True)
    config.save_folder = str(run_dir)
    return config


def train_benchmarl(name: str, config: EnvConfig, episodes: int, seed: int, run_dir: Path) -> Policy:
    """Train BenchMARL's algorithm ``name`` (:data:`BENCHMARL_ALGORITHMS`) for ``episodes * num_rounds``
    frames; its policy as a :class:`~fedenv.integrations.torchrl.TorchRLPolicy` named ``name``."""
    import benchmarl.algorithms
    from benchmarl.experiment import Experiment
    from benchmarl.models.mlp import MlpConfig

    from fedenv.integrations.benchmarl import FedEnvTask
    from fedenv.integrations.torchrl import TorchRLPolicy

    algorithm = getattr(benchmarl.algorithms, BENCHMARL_ALGORITHMS[name]).get_from_yaml()
    experiment = Experiment(task=FedEnvTask.CLIENT_SELECTION.get_task(config=config.to_dict()),
                            algorithm_config=algorithm, model_config=MlpConfig.get_from_yaml(), seed=seed,
                            config=benchmarl_experiment_config(episodes * config.num_rounds, config.num_rounds,
                                                               run_dir))
    experiment.run()
    return TorchRLPolicy(experiment.policy, name=name)


def train_sb3_ppo(config: EnvConfig, episodes: int, seed: int, run_dir: Path) -> Policy:
    """Train SB3 PPO (one policy shared by all clients, as ``examples/sb3_ppo.py``) for
    ``episodes * num_rounds * num_clients`` client steps; saved in ``run_dir``."""
    from stable_baselines3 import PPO

    from fedenv.integrations.sb3 import SB3Policy, sb3_vec_env

    model = PPO("MlpPolicy", sb3_vec_env(config, num_envs=1), seed=seed, n_steps=config.num_rounds,
                batch_size=config.num_rounds * 2, n_epochs=4, gamma=1.0, verbose=0)
    model.learn(total_timesteps=episodes * config.num_rounds * config.num_clients)
    policy = SB3Policy(model, "PPO", "append", config)
    policy.save(run_dir)
    return policy


def train_learner(name: str, config: EnvConfig, episodes: int, seed: int, run_dir: Path) -> Policy:
    """Train learner ``name`` (``vdn``, ``sb3-ppo`` or a key of :data:`BENCHMARL_ALGORITHMS`).

    Raises:
        ValueError: an unknown learner (names the allowed ones).
    """
    check_known(name, LEARNERS, "learner", field=False)
    if name == "vdn":
        return train_agent(config, episodes, seed, run_dir)
    if name == "sb3-ppo":
        return train_sb3_ppo(config, episodes, seed, run_dir)
    return train_benchmarl(name, config, episodes, seed, run_dir)


def learner_row(name: str, config: EnvConfig, args: argparse.Namespace, fixed_records: dict,
                episodes: dict) -> dict:
    """Train and evaluate one learner on the seeds of ``fixed_records`` (the fixed policies' episodes);
    its table row (``status`` names the exception if it failed) and its per-episode results, with the
    fixed policies', in ``episodes[name]``."""
    start = time.perf_counter()
    try:
        policy = train_learner(name, config, args.episodes, args.seed, Path(args.out) / "agents" / name)
        train_s = time.perf_counter() - start
        learned = evaluate_records(config, [policy], [], eval_seeds(args.eval_episodes))
    except Exception as error:  # a third-party learner that cannot run on this env: report why in the table
        first_line = (str(error).splitlines() or [""])[0][:200]
        return {"learner": name, "status": f"failed: {type(error).__name__}: {first_line}"}
    episodes[name] = per_episode_metrics({**fixed_records, **learned})
    return {"learner": name, "status": "ok", "train_s": train_s, "frames": args.episodes * config.num_rounds,
            **compare_columns(episodes[name], policy.name, list(fixed_records))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_study_arguments(parser, episodes=300)
    parser.add_argument("--learners", default=",".join(DEFAULT_LEARNERS),
                        help="comma-separated, of: " + ", ".join(LEARNERS))
    args = parser.parse_args(argv)
    apply_quick(args)
    names = [n.strip() for n in args.learners.split(",") if n.strip()]
    for name in names:
        try:
            check_known(name, LEARNERS, "--learners: learner", field=False)
        except ValueError as error:
            parser.error(str(error))
    config, episodes = base_config(args), {}
    fixed_records = evaluate_records(config, [], fixed_names(args), eval_seeds(args.eval_episodes))  # loads the data
    rows = [learner_row(name, config, args, fixed_records, episodes) for name in names]
    write_study(Path(args.out), rows, episodes, ["learner", "status", "train_s", *PRINTED])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
