"""Fastest-first selection: a system heuristic that ignores data."""

from __future__ import annotations

from fedenv.baselines.base import (
    DEFAULT_SELECT_FRACTION,
    Policy,
    candidates,
    check_select_fraction,
    predicted_duration_s,
    select_count,
)


class Fastest(Policy):
    """The ``m`` candidates with the lowest predicted round time (:func:`predicted_duration_s`): a simple
    system heuristic that ignores data.

    Raises:
        ValueError: ``select_fraction`` outside (0, 1].
    """

    name = "fastest"

    def __init__(self, select_fraction: float = DEFAULT_SELECT_FRACTION):
        self.select_fraction = check_select_fraction(select_fraction)

    def act(self, observations, infos):
        chosen = sorted(candidates(observations), key=lambda a: predicted_duration_s(infos[a]))
        return {agent: 1 for agent in chosen[: select_count(len(chosen), self.select_fraction)]}
