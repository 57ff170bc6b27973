"""The client-selection environment as a BenchMARL task (optional extra ``[torchrl]``). An experiment::

    from benchmarl.algorithms import VdnConfig
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models.mlp import MlpConfig
    from fedenv.integrations.benchmarl import FedEnvTask

    task = FedEnvTask.CLIENT_SELECTION.get_task(config={"num_rounds": 20})   # EnvConfig fields
    Experiment(task=task, algorithm_config=VdnConfig.get_from_yaml(),
               model_config=MlpConfig.get_from_yaml(), seed=0, config=ExperimentConfig.get_from_yaml()).run()

All clients form one group ``"agents"`` (BenchMARL shares the policy's parameters within a group);
BenchMARL's VDN and QMIX read the action mask and the global ``state``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from benchmarl.environments.common import Task, TaskClass
from torchrl.data import Composite
from torchrl.envs import EnvBase

from fedenv.config import EnvConfig
from fedenv.integrations.torchrl import torchrl_env
from fedenv.vector import federation_seeds


def _keep(env: EnvBase, key: str) -> Composite:
    spec = env.observation_spec.clone()
    group = spec["agents"]
    for name in list(group.keys()):
        if name != key:
            del group[name]
    if "state" in spec:
        del spec["state"]
    return spec


class FedEnvTaskClass(TaskClass):
    """BenchMARL task class: ``config`` holds :class:`~fedenv.config.EnvConfig` fields."""

    def get_env_fun(self, num_envs: int, continuous_actions: bool, seed: int | None, device) -> Callable[[], EnvBase]:
        """A function building one TorchRL environment per call; BenchMARL's ``SerialEnv`` calls it once
        for its metadata, then once per copy. Call i seeds its federation with the i-th seed of
        :func:`~fedenv.vector.federation_seeds` of ``seed``, so the copies play different federations
        and the same experiment seed gives the same ones (``seed=None``: each copy draws its own).
        Under ``parallel_collection=True`` (TorchRL ``ParallelEnv``) every worker gets a pickled copy of
        the function, so seed that env with ``set_seed`` instead."""
        config = EnvConfig.from_dict(self.config).validate()
        calls = itertools.count()

        def make_env() -> EnvBase:
            index = next(calls)
            copy_seed = None if seed is None else federation_seeds(seed, index + 1)[index]
            return torchrl_env(config, seed=copy_seed, device=device)

        return make_env

    def supports_continuous_actions(self) -> bool:
        return False

    def supports_discrete_actions(self) -> bool:
        return True

    def max_steps(self, env: EnvBase) -> int:
        return EnvConfig.from_dict(self.config).num_rounds

    def has_render(self, env: EnvBase) -> bool:
        return False

    def group_map(self, env: EnvBase) -> dict[str, list[str]]:
        return env.group_map

    def observation_spec(self, env: EnvBase) -> Composite:
        return _keep(env, "observation")

    def info_spec(self, env: EnvBase) -> Composite:
        return _keep(env, "info")

    def state_spec(self, env: EnvBase) -> Composite:
        return Composite({"state": env.observation_spec["state"].clone()})

    def action_mask_spec(self, env: EnvBase) -> Composite:
        return _keep(env, "action_mask")

    def action_spec(self, env: EnvBase) -> Composite:
        return env.full_action_spec

    @staticmethod
    def env_name() -> str:
        return "fedenv"


class FedEnvTask(Task):
    """BenchMARL task enum of this project: ``FedEnvTask.CLIENT_SELECTION.get_task(config={...})``."""

    CLIENT_SELECTION = None

    @staticmethod
    def associated_class():
        return FedEnvTaskClass
