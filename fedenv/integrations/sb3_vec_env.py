"""The SB3 ``VecEnv`` of :func:`fedenv.integrations.sb3.sb3_vec_env` (imports Stable-Baselines3).

Its sub-environments are the agents of several federations stepped together by
:class:`~fedenv.vector.VectorClientSelectionEnv`; see :mod:`fedenv.integrations.sb3` for seeding, auto-reset
and the infos of a finished episode. The infos SB3 and its callbacks see are a learner's
(:func:`~fedenv.env.policy_infos`: no test accuracy); each finished episode's report-only values go to
``episode_reports``.
"""

from __future__ import annotations

import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from fedenv.env import policy_infos
from fedenv.integrations.flat import flat_observation_space, flatten_observations
from fedenv.integrations.learner_infos import report_values
from fedenv.vector import VectorClientSelectionEnv, drive_together, federation_seeds


def _rows(vector: VectorClientSelectionEnv, outputs: list[tuple], mask: str) -> tuple:
    """Per-agent rows ``(observations, rewards, dones, infos)`` of every federation's step output."""
    observations, rewards, dones, infos = [], [], [], []
    for obs, reward, terminations, truncations, info in outputs:
        flat = flatten_observations(obs, mask)
        learner_info = policy_infos(info)
        for agent in vector.possible_agents:
            row = learner_info[agent]
            done = terminations[agent] or truncations[agent]
            if done:
                row["terminal_observation"] = flat[agent]
                row["TimeLimit.truncated"] = bool(truncations[agent] and not terminations[agent])
            observations.append(flat[agent])
            rewards.append(reward[agent])
            dones.append(done)
            infos.append(row)
    return np.stack(observations), np.asarray(rewards, dtype=np.float32), np.asarray(dones), infos


class FederationsVecEnv(VecEnv):
    """SB3 ``VecEnv`` whose sub-environments are the agents of several federations (module docstring).

    Attributes:
        episode_reports: per federation, one dict per finished episode: the report-only values of its last
            round (``{"test_accuracy": final test accuracy}``), for logs and reports only.
    """

    def __init__(self, vector: VectorClientSelectionEnv, mask: str):
        self.vector, self.mask = vector, mask
        self.render_mode = None
        agents = vector.possible_agents
        super().__init__(vector.num_envs * len(agents), flat_observation_space(vector.envs[0], mask),
                         vector.envs[0].action_space(agents[0]))
        self._last_obs = None
        self._actions = None
        self.episode_reports: list[list[dict[str, float]]] = [[] for _ in range(vector.num_envs)]

    def _flat(self, observations: dict) -> list:
        flat = flatten_observations(observations, self.mask)
        return [flat[agent] for agent in self.vector.possible_agents]

    def reset(self):
        base = self._seeds[0]
        seeds = None if base is None else federation_seeds(base, self.vector.num_envs)
        started = self.vector.reset(seeds)
        self._reset_seeds()
        self.reset_infos = [policy_infos(info)[a] for _, info in started for a in self.vector.possible_agents]
        self._last_obs = np.stack([row for obs, _ in started for row in self._flat(obs)])
        return self._last_obs

    def step_async(self, actions):
        self._actions = np.asarray(actions).reshape(self.vector.num_envs, -1)

    def step_wait(self):
        agents = self.vector.possible_agents
        outputs = self.vector.step([dict(zip(agents, row.tolist())) for row in self._actions])
        observations, rewards, dones, infos = _rows(self.vector, outputs, self.mask)
        finished = [k for k in range(self.vector.num_envs) if dones[k * len(agents)]]
        for k in finished:
            self.episode_reports[k].append(report_values(outputs[k][4]))
        started = drive_together([self.vector.envs[k].reset_process() for k in finished])
        for k, (obs, info) in zip(finished, started):
            rows = slice(k * len(agents), (k + 1) * len(agents))
            observations[rows] = np.stack(self._flat(obs))
            self.reset_infos[rows] = [policy_infos(info)[a] for a in agents]
        self._last_obs = observations
        return observations, rewards, dones, infos

    def action_masks(self) -> np.ndarray:
        """``(num_envs, 2)`` bool masks of the current observations (needs ``mask="append"``)."""
        if self.mask != "append":
            raise ValueError("action_masks() needs the mask in the observation: build with mask='append'")
        return self._last_obs[:, -2:] > 0.5

    def env_method(self, method_name, *method_args, indices=None, **method_kwargs):
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in self._get_indices(indices)]
        raise AttributeError(f"sub-environments have no method {method_name!r} here")

    def close(self):
        for env in self.vector.envs:
            env.close()

    def get_attr(self, attr_name, indices=None):
        return [getattr(self, attr_name, None) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name, value, indices=None):
        setattr(self, attr_name, value)

    def env_is_wrapped(self, wrapper_class, indices=None):
        return [False for _ in self._get_indices(indices)]
