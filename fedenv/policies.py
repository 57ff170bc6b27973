"""Fixed selection policies run in the environment, and the interface every policy meets.

A policy maps the observations (and infos) of a round to one action per agent. It may declare the
environment settings it needs (``env_overrides``, e.g. FedProx's proximal term) and learns nothing
unless it implements :meth:`Policy.observe`. The learned VDN policy (``agents.policy``) implements the
same interface, so ``evaluate.py`` treats all policies alike.

Adding a policy::

    class Fastest(Policy):
        name = "fastest-half"
        def act(self, observations, infos):
            ...  # return {agent: 0 or 1}
"""

from __future__ import annotations

import numpy as np


class Policy:
    """Base class. Subclasses set ``name`` and implement :meth:`act`.

    Attributes:
        name: the policy's name in tables and on the command line.
        env_overrides: :class:`~fedenv.config.EnvConfig` fields the policy needs (applied by the runner).
    """

    name = "policy"
    env_overrides: dict = {}

    def reset(self, seed: int) -> None:
        """Called before each episode with the episode's seed (seed any randomness from it)."""

    def act(self, observations: dict, infos: dict) -> dict:
        """Map ``agent -> {"observation", "action_mask"}`` (and infos) to ``agent -> 0 | 1``."""
        raise NotImplementedError

    def observe(self, infos: dict) -> None:
        """Feedback after each step (the step's infos); fixed policies ignore it."""


def candidates(observations: dict) -> list[str]:
    """Agents whose action mask allows action 1 this round."""
    return [agent for agent, obs in observations.items() if obs["action_mask"][1]]


class FedAvgPolicy(Policy):
    """FedAvg: every candidate finishes training and uploads (McMahan et al., AISTATS 2017)."""

    name = "fedavg"

    def act(self, observations, infos):
        return {agent: 1 for agent in candidates(observations)}


class RandomPolicy(Policy):
    """Each candidate uploads with probability ``p`` (our default 1/2), independently; seeded per episode."""

    name = "random"

    def __init__(self, p: float = 0.5):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"random policy probability must be in [0, 1], got {p}")
        self.p = p
        self.rng = np.random.default_rng(0)

    def reset(self, seed):
        self.rng = np.random.default_rng([seed, 7])

    def act(self, observations, infos):
        chosen = candidates(observations)
        draws = self.rng.random(len(chosen)) < self.p
        return {agent: int(d) for agent, d in zip(chosen, draws)}


FIXED_POLICIES = {"fedavg": FedAvgPolicy, "random": RandomPolicy}


def make_policy(name: str) -> Policy:
    """A fixed policy by name.

    Raises:
        ValueError: unknown name (the message lists the allowed names).
    """
    if name not in FIXED_POLICIES:
        raise ValueError(f"unknown policy {name!r}; allowed: {', '.join(FIXED_POLICIES)}")
    return FIXED_POLICIES[name]()
