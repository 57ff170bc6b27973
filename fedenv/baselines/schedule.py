"""An open-loop upload schedule: a few random candidates each round, every candidate in the last rounds."""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from fedenv.baselines.base import Policy, candidates, check_counts


class LateRoundsPolicy(Policy):
    """``k`` candidates drawn at random (seeded per episode) upload in each of the first ``num_rounds -
    last_rounds`` rounds; every candidate uploads in the last ``last_rounds`` rounds.

    Raises:
        ValueError: a count that is not an integer, ``k`` below 0 or ``last_rounds`` outside ``[0, num_rounds]``.
    """

    compared: ClassVar[bool] = False

    def __init__(self, k: int = 1, last_rounds: int = 0, num_rounds: int = 20, name: str = "late-rounds"):
        check_counts(name, k=k, last_rounds=last_rounds, num_rounds=num_rounds)
        if k < 0 or not 0 <= last_rounds <= num_rounds:
            raise ValueError(f"{name} k={k}, last_rounds={last_rounds}: need k >= 0 and 0 <= last_rounds <= "
                             f"num_rounds={num_rounds}")
        self.k, self.last_rounds, self.num_rounds, self.name = k, last_rounds, num_rounds, name
        self.reset(0)

    def reset(self, seed: int) -> None:
        self.rng, self.round = np.random.default_rng([seed, 11]), 0

    def act(self, observations, infos):
        chosen = candidates(observations)
        self.round += 1
        if self.round > self.num_rounds - self.last_rounds:
            selected = set(chosen)
        else:
            selected = set(self.rng.choice(chosen, size=min(self.k, len(chosen)), replace=False).tolist())
        return {agent: int(agent in selected) for agent in chosen}
