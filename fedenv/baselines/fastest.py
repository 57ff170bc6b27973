"""Fastest-first selection: a system heuristic that ignores data."""

from __future__ import annotations

from fedenv.baselines.base import (
    DEFAULT_SELECT_FRACTION,
    Policy,
    candidates,
    check_select_fraction,
    expected_duration_s,
    select_count,
)


class FastestPolicy(Policy):
    """The ``m`` candidates with the lowest expected round time (:func:`expected_duration_s`: the latest
    reported latencies, or for a client never seen its device-profile estimate, as FedScale's client
    manager registers it): a simple system heuristic that ignores data.

    Raises:
        ValueError: ``select_fraction`` outside (0, 1].
    """

    name = "fastest"

    def __init__(self, select_fraction: float = DEFAULT_SELECT_FRACTION):
        self.select_fraction = check_select_fraction(select_fraction)
        self.profile_duration_s: dict[str, float] = {}

    def register_clients(self, profile_duration_s, probing):
        self.profile_duration_s = dict(profile_duration_s)

    def act(self, observations, infos):
        chosen = sorted(candidates(observations),
                        key=lambda a: expected_duration_s(a, infos[a], self.profile_duration_s))
        return {agent: 1 for agent in chosen[: select_count(len(chosen), self.select_fraction)]}
