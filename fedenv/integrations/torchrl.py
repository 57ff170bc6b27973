"""TorchRL glue (optional extra ``pip install -e ".[torchrl]"``; TorchRL and TensorDict are imported only
when a function here is called).

:func:`torchrl_env` wraps the environment in TorchRL's ``PettingZooWrapper`` (one group of agents,
categorical actions, the action mask and the global state); :mod:`fedenv.integrations.benchmarl`
registers it as a BenchMARL task. :class:`TorchRLPolicy` runs a trained TorchRL policy module (a
BenchMARL experiment's) as a :class:`~fedenv.baselines.Policy`.
"""

from __future__ import annotations

import numpy as np

from fedenv.baselines.base import Policy
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.integrations.learner_infos import LearnerInfos


def torchrl_env(config: EnvConfig, seed: int | None = None, device="cpu"):
    """TorchRL ``PettingZooWrapper`` over the environment: one group ``"agents"``, categorical actions,
    the action mask read from the observations, and the global ``state``.

    The tensordicts hold every info key but the test accuracy (the environment is wrapped in
    :class:`~fedenv.integrations.learner_infos.LearnerInfos`, so no loss module, replay buffer or BenchMARL
    logger can read it); every such key is present at reset and at every step, so TorchRL keeps all of them
    in its specs. Each finished episode's final test accuracy, for reports, is in
    ``env._env.episode_reports`` (TorchRL keeps the PettingZoo env as ``_env``); it is scored once per
    episode (``report_test_accuracy="episode_end"``).
    """
    from torchrl.envs import PettingZooWrapper

    env = LearnerInfos(ClientSelectionEnv(config, report_test_accuracy="episode_end"))
    return PettingZooWrapper(env, categorical_actions=True, use_mask=False, seed=seed,
                             return_state=True, device=device, group_map={"agents": [
                                 f"client_{i}" for i in range(config.num_clients)]})


class TorchRLPolicy(Policy):
    """A TorchRL policy module of one group ``"agents"`` (e.g. a BenchMARL experiment's
    ``experiment.policy``) as a :class:`~fedenv.baselines.Policy`: deterministic (exploration off)."""

    probes = True  # learned on probing observations: runs with the probing epoch

    def __init__(self, module, name: str = "benchmarl"):
        self.module, self.name = module, name

    def act(self, observations, infos):
        import torch
        from tensordict import TensorDict
        from torchrl.envs.utils import ExplorationType, set_exploration_type

        agents = list(observations)
        obs = torch.as_tensor(np.stack([observations[a]["observation"] for a in agents]))
        mask = torch.as_tensor(np.stack([observations[a]["action_mask"] for a in agents]).astype(bool))
        td = TensorDict({"agents": TensorDict({"observation": TensorDict({"observation": obs}, [len(agents)]),
                                               "action_mask": mask}, [len(agents)])}, [])
        with torch.no_grad(), set_exploration_type(ExplorationType.DETERMINISTIC):
            actions = self.module(td)["agents", "action"].reshape(-1).tolist()
        return {a: int(x) for a, x, m in zip(agents, actions, mask[:, 1].tolist()) if m}
