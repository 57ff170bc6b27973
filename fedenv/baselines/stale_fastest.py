"""A closed-loop heuristic: the fastest of the least recently uploaded candidates, then nearly every candidate
in the last rounds without the slowest."""

from __future__ import annotations

from typing import ClassVar

from fedenv.baselines.base import Policy, candidates, check_counts, expected_duration_s


class StaleFastestPolicy(Policy):
    """In each of the first ``num_rounds - last_rounds`` rounds, the ``k`` fastest of the half of the
    candidates that uploaded least recently upload; in each of the last ``last_rounds`` rounds every
    candidate uploads but the ``drop`` slowest.

    "Fastest" and "slowest" are by :func:`~fedenv.baselines.base.expected_duration_s` (the latest reports,
    or the device profile before a client's first); "least recently" by the round this policy last selected
    the client in the episode (never: first; read from each step's ``selected`` flags in :meth:`observe`, so that
    it counts what was played, also when another policy played it: :mod:`agents.demonstrations`), ties broken by
    the expected duration. The
    ingredients are the papers': the staleness that rotates Oort's selection (Lai et al., OSDI 2021,
    Sec. 4.2, Eq. 2's incentive for clients not selected for long), fastest-first selection
    (:class:`~fedenv.baselines.FastestPolicy`), the open-loop schedule's last rounds
    (:class:`~fedenv.baselines.LateRoundsPolicy`) and dropping the stragglers of a round (Bonawitz et al.,
    MLSys 2019, Sec. 2.3: the server selects more devices than it needs and drops the slowest). It is ours,
    a diagnostic of what a closed-loop rule reaches under the calibrated reward, not a baseline of a seed
    paper, so ``evaluate.py --policies all`` leaves it out (``compared = False``).

    It decides before any client trains (``probes = False``), so it runs without probing.

    Raises:
        ValueError: a count that is not an integer, ``k`` below 1, ``last_rounds`` outside ``[0, num_rounds]`` or
            ``drop`` below 0.
    """

    compared: ClassVar[bool] = False

    def __init__(self, k: int = 1, last_rounds: int = 3, drop: int = 1, num_rounds: int = 20,
                 name: str = "stale-fastest"):
        check_counts(name, k=k, last_rounds=last_rounds, drop=drop, num_rounds=num_rounds)
        if k < 1 or drop < 0 or not 0 <= last_rounds <= num_rounds:
            raise ValueError(f"{name} k={k}, last_rounds={last_rounds}, drop={drop}: need k >= 1, "
                             f"drop >= 0 and 0 <= last_rounds <= num_rounds={num_rounds}")
        self.k, self.last_rounds, self.drop, self.num_rounds, self.name = k, last_rounds, drop, num_rounds, name
        self.profile_duration_s: dict[str, float] = {}
        self.reset(0)

    def reset(self, seed: int) -> None:
        self.round, self.last_selected = 0, {}

    def register_clients(self, profile_duration_s, probing):
        self.profile_duration_s = dict(profile_duration_s)

    def act(self, observations, infos):
        chosen = candidates(observations)
        self.round += 1
        duration = self.durations_s(chosen, infos)
        if self.round > self.num_rounds - self.last_rounds:
            by_speed = sorted(chosen, key=duration.__getitem__)
            selected = by_speed[: max(1, len(chosen) - self.drop)] if chosen else []
        else:
            stalest = sorted(chosen, key=lambda agent: (self.last_selected.get(agent, 0), duration[agent]))
            pool = stalest[: max(self.k, len(chosen) // 2)]
            selected = sorted(pool, key=duration.__getitem__)[: self.k]
        return {agent: int(agent in selected) for agent in chosen}

    def durations_s(self, chosen: list[str], infos) -> dict[str, float]:
        """``{agent: seconds}``, the round time that ranks each of the candidates ``chosen``: the server's estimate
        (:func:`~fedenv.baselines.base.expected_duration_s`)."""
        return {agent: expected_duration_s(agent, infos[agent], self.profile_duration_s) for agent in chosen}

    def observe(self, infos):
        for agent, info in infos.items():
            if info["selected"]:
                self.last_selected[agent] = self.round
