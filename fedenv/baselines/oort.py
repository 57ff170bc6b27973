"""Oort guided participant selection (Lai et al., OSDI 2021)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from fedenv.baselines.base import (
    DEFAULT_SELECT_FRACTION,
    Policy,
    candidates,
    check_select_fraction,
    predicted_duration_s,
    select_count,
)


def oort_utility(data_size: float, mean_sq_loss: float, duration_s: float, preferred_s: float,
                 round_index: int, last_selected: int, penalty: float = 2.0) -> float:
    """Oort's client utility (Lai et al., OSDI 2021, Eq. 2 and Sec. 4.3; FedScale's implementation).

    ``|B_i| sqrt(mean_{k in B_i} loss_k^2)`` over all of the client's probing samples, plus the staleness
    bonus ``sqrt(0.1 ln(round) / last_selected)``, times ``(preferred_s / duration_s) ** penalty`` when the
    client is slower than the preferred round duration.
    """
    utility = data_size * math.sqrt(mean_sq_loss)
    utility += math.sqrt(0.1 * math.log(max(round_index, 1)) / max(last_selected, 1))
    if duration_s > preferred_s:
        utility *= (preferred_s / max(duration_s, 1e-9)) ** penalty
    return utility


class Oort(Policy):
    """Oort guided participant selection (Lai et al., OSDI 2021) with FedScale's defaults: exploration
    factor from 0.9, times 0.98 per round, down to 0.3; ``(T/duration)^2`` penalty where the preferred
    duration T is the 30th percentile of the candidates' predicted durations. Each round the ``m`` slots
    are split: an exploration share goes to candidates never selected before (at random), the rest to
    the explored candidates of highest :func:`oort_utility`.

    Raises:
        ValueError: ``select_fraction`` outside (0, 1].
    """

    name = "oort"
    env_overrides: ClassVar[dict[str, Any]] = {"aggregation": "fedavg"}

    def __init__(self, select_fraction: float = DEFAULT_SELECT_FRACTION, exploration: float = 0.9,
                 decay: float = 0.98, exploration_min: float = 0.3, preferred_percentile: float = 30.0):
        self.select_fraction, self.initial_exploration = check_select_fraction(select_fraction), exploration
        self.decay, self.exploration_min, self.preferred_percentile = decay, exploration_min, preferred_percentile
        self.reset(0)

    def reset(self, seed):
        self.rng = np.random.default_rng([seed, 13])
        self.exploration = self.initial_exploration
        self.round = 0
        self.last_selected: dict[str, int] = {}

    def act(self, observations, infos):
        self.round += 1
        chosen = candidates(observations)
        m = select_count(len(chosen), self.select_fraction)
        if not chosen:
            return {}
        durations = {a: predicted_duration_s(infos[a]) for a in chosen}
        preferred = float(np.percentile(list(durations.values()), self.preferred_percentile))
        explored = [a for a in chosen if a in self.last_selected]
        unexplored = [a for a in chosen if a not in self.last_selected]
        explore_slots = min(len(unexplored), round(self.exploration * m))
        exploit_slots = min(len(explored), m - explore_slots)
        explore_slots = min(len(unexplored), m - exploit_slots)
        utility = {a: oort_utility(infos[a]["data_size"], infos[a]["probe_loss_sq"], durations[a], preferred,
                                   self.round, self.last_selected[a]) for a in explored}
        picked = sorted(explored, key=lambda a: -utility[a])[:exploit_slots]
        picked += list(self.rng.permutation(unexplored)[:explore_slots]) if explore_slots else []
        self.exploration = max(self.exploration_min, self.exploration * self.decay)
        return {agent: 1 for agent in picked}

    def observe(self, infos):
        for agent, info in infos.items():
            if info["selected"]:
                self.last_selected[agent] = self.round
