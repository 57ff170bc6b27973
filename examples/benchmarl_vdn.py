"""BenchMARL's own VDN (or QMIX) trained on the client-selection task, then compared with the baselines.

    python examples/benchmarl_vdn.py --frames 2000 --out results/benchmarl_vdn   # needs: pip install -e ".[torchrl]"
    python examples/benchmarl_vdn.py --algorithm qmix
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fedenv.baselines import FedAvgPolicy, RandomPolicy
from fedenv.config import EnvConfig
from fedenv.evaluation import compare
from fedenv.integrations.benchmarl import FedEnvTask
from fedenv.integrations.torchrl import TorchRLPolicy


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algorithm", choices=["vdn", "qmix"], default="vdn")
    parser.add_argument("--frames", type=int, default=2000, help="environment steps (FL rounds) to train on")
    parser.add_argument("--num-rounds", type=int, default=20)
    parser.add_argument("--num-clients", type=int, default=10)
    parser.add_argument("--eval-episodes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results/benchmarl_vdn")
    args = parser.parse_args(argv)

    from benchmarl.algorithms import QmixConfig, VdnConfig
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models.mlp import MlpConfig

    config = EnvConfig(num_rounds=args.num_rounds, num_clients=args.num_clients, clients_per_round=args.num_clients)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    experiment_config = ExperimentConfig.get_from_yaml()
    per_batch = min(args.frames, 5 * args.num_rounds)
    experiment_config.max_n_frames = args.frames
    experiment_config.off_policy_collected_frames_per_batch = per_batch
    experiment_config.off_policy_n_envs_per_worker = 1
    experiment_config.off_policy_n_optimizer_steps = per_batch
    experiment_config.off_policy_train_batch_size = 64
    experiment_config.off_policy_memory_size = 50_000
    experiment_config.gamma = 1.0
    experiment_config.lr = 5e-4
    experiment_config.exploration_anneal_frames = args.frames // 2
    experiment_config.evaluation = False
    experiment_config.render = False
    experiment_config.loggers = ["csv"]
    experiment_config.create_json = False
    experiment_config.save_folder = str(out)
    algorithm = (VdnConfig if args.algorithm == "vdn" else QmixConfig).get_from_yaml()
    experiment = Experiment(task=FedEnvTask.CLIENT_SELECTION.get_task(config=config.to_dict()),
                            algorithm_config=algorithm, model_config=MlpConfig.get_from_yaml(),
                            seed=args.seed, config=experiment_config)
    experiment.run()

    policy = TorchRLPolicy(experiment.policy, name=f"benchmarl-{args.algorithm}")
    compare(config, [FedAvgPolicy(), RandomPolicy(), policy], list(range(1000, 1000 + args.eval_episodes)), out)
    print(f"results in {out}")


if __name__ == "__main__":
    main()
