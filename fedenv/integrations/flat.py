"""Flat observations for libraries that take one vector per agent (Stable-Baselines3's ``MlpPolicy``)."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from fedenv.env import ClientSelectionEnv
from fedenv.integrations.learner_infos import LearnerInfos
from fedenv.names import check_known

MASK_MODES = ("append", "drop")


class FlatObservation(LearnerInfos):
    """Replaces each ``{"observation", "action_mask"}`` dict by one float32 ``Box``: the observation
    vector, followed by the mask (``mask="append"``) or alone (``mask="drop"``). The infos are a learner's
    (:class:`~fedenv.integrations.learner_infos.LearnerInfos`: no test accuracy; it is kept in
    ``episode_reports``).

    Raises:
        ValueError: unknown ``mask`` mode.
    """

    def __init__(self, env: ClientSelectionEnv, mask: str = "append"):
        super().__init__(env)
        self.mask = mask
        self._space = flat_observation_space(env, mask)

    def observation_space(self, agent):
        return self._space

    def reset(self, seed=None, options=None):
        observations, infos = super().reset(seed=seed, options=options)
        return flatten_observations(observations, self.mask), infos

    def step(self, actions):
        observations, rewards, terminations, truncations, infos = super().step(actions)
        return flatten_observations(observations, self.mask), rewards, terminations, truncations, infos


def flat_observation_space(env: ClientSelectionEnv, mask: str) -> spaces.Box:
    """The float32 ``Box`` of one agent's flat observation (:func:`flatten_observations`).

    Raises:
        ValueError: unknown ``mask`` mode.
    """
    check_known(mask, MASK_MODES, "mask")
    inner = env.observation_space(env.possible_agents[0])["observation"]
    low, high = inner.low, inner.high
    if mask == "append":
        low, high = np.concatenate([low, [0.0, 0.0]]), np.concatenate([high, [1.0, 1.0]])
    return spaces.Box(low.astype(np.float32), high.astype(np.float32), dtype=np.float32)


def flatten_observations(observations: dict, mask: str) -> dict:
    """``agent -> float32 vector``: the observation, followed by the action mask when ``mask="append"``."""
    if mask == "drop":
        return {a: o["observation"] for a, o in observations.items()}
    return {a: np.concatenate([o["observation"], o["action_mask"].astype(np.float32)]) for a, o in observations.items()}
