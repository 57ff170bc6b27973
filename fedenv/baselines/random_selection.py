"""Random selection: the data- and system-blind baseline."""

from __future__ import annotations

import numpy as np

from fedenv.baselines.base import Policy, candidates


class RandomPolicy(Policy):
    """Each candidate uploads with probability ``p`` (our default 1/2), independently; seeded per episode.

    Raises:
        ValueError: ``p`` outside [0, 1].
    """

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
