"""Selection policies run in the environment, and the interface every policy meets.

A policy maps a round's observations (and infos) to one action per agent. It declares the environment
settings it needs in ``env_overrides`` (its aggregation rule, FedProx's proximal term) and, if it learns
from feedback (the bandits), receives each step's infos in :meth:`Policy.observe`. The learned VDN
policy (``agents.policy.GreedyPolicy``) implements the same interface, so ``evaluate.py`` treats all
policies alike. Adding one::

    from fedenv.policies import Policy, candidates

    class LowestLoss(Policy):
        name = "lowest-loss"

        def act(self, observations, infos):
            ranked = sorted(candidates(observations), key=lambda a: infos[a]["probe_loss"])
            return {agent: 1 for agent in ranked[: len(ranked) // 2]}

Policies that select ``m`` of the candidates use ``m = max(1, round(select_fraction * candidates))``;
``select_fraction`` defaults to 0.6, FedCM's largest sampling ratio (Kim et al., arXiv 2012.03270).
"""

from __future__ import annotations

import math

import numpy as np

DEFAULT_SELECT_FRACTION = 0.6


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


def select_count(num_candidates: int, fraction: float) -> int:
    """``m = max(1, round(fraction * num_candidates))`` (0 without candidates)."""
    return 0 if num_candidates == 0 else max(1, int(round(fraction * num_candidates)))


def predicted_duration_s(info: dict) -> float:
    """A client's expected round time from what the server has seen: its latest probing latency plus
    its latest upload latency (the probing latency again before its first upload)."""
    upload = info["upload_latency_s"] if info["upload_latency_s"] > 0 else info["probe_latency_s"]
    return info["probe_latency_s"] + upload


class SelectAll(Policy):
    """Every candidate finishes training and uploads; the aggregation rule makes the difference."""

    def act(self, observations, infos):
        return {agent: 1 for agent in candidates(observations)}


class FedAvgPolicy(SelectAll):
    """FedAvg: every candidate uploads; FedAvg aggregation (McMahan et al., AISTATS 2017)."""

    name = "fedavg"
    env_overrides = {"aggregation": "fedavg"}


class FedProxPolicy(SelectAll):
    """FedProx: every candidate uploads; local training adds ``mu/2 ||w - w_global||^2`` with mu = 0.01
    (our default; Li et al., MLSys 2020, Eq. 2); FedAvg aggregation."""

    name = "fedprox"
    env_overrides = {"aggregation": "fedavg", "fedprox_mu": 0.01}


class FedCAPolicy(SelectAll):
    """FedCA: every candidate uploads; combinatorial averaging keeps the best-scoring subset
    (Kim et al., arXiv 2012.03270, Eq. 4-5)."""

    name = "fedca"
    env_overrides = {"aggregation": "fedca"}


class FedAdpPolicy(SelectAll):
    """FedAdp: every candidate uploads; adaptive weighting by smoothed angles (Wu and Wang, arXiv 2012.00661)."""

    name = "fedadp"
    env_overrides = {"aggregation": "fedadp"}


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


class Fastest(Policy):
    """The ``m`` candidates with the lowest predicted round time (:func:`predicted_duration_s`): a simple
    system heuristic that ignores data."""

    name = "fastest"

    def __init__(self, select_fraction: float = DEFAULT_SELECT_FRACTION):
        self.select_fraction = select_fraction

    def act(self, observations, infos):
        chosen = sorted(candidates(observations), key=lambda a: predicted_duration_s(infos[a]))
        return {agent: 1 for agent in chosen[: select_count(len(chosen), self.select_fraction)]}


class BanditPolicy(Policy):
    """FedCM bandit sampling (Kim et al., arXiv 2012.03270, Algorithms 2-3): pick the ``m`` candidates
    with the highest index; after the round, every selected client k gets reward
    ``r_k = 1[k in S_opt]`` from FedCA's combinatorial averaging (the env's ``kept`` info)."""

    env_overrides = {"aggregation": "fedca"}

    def __init__(self, select_fraction: float = DEFAULT_SELECT_FRACTION):
        self.select_fraction = select_fraction
        self.reset(0)

    def reset(self, seed):
        self.rng = np.random.default_rng([seed, 11])
        self.arms: dict[str, list[float]] = {}

    def arm(self, agent: str) -> list[float]:
        raise NotImplementedError

    def index(self, agent: str) -> float:
        raise NotImplementedError

    def update(self, agent: str, reward: float) -> None:
        raise NotImplementedError

    def act(self, observations, infos):
        chosen = candidates(observations)
        for agent in chosen:
            self.arm(agent)
        scores = {agent: self.index(agent) for agent in chosen}
        ranked = sorted(chosen, key=lambda a: -scores[a])
        return {agent: 1 for agent in ranked[: select_count(len(chosen), self.select_fraction)]}

    def observe(self, infos):
        for agent, info in infos.items():
            if info["selected"]:
                self.arm(agent)
                self.update(agent, float(info["kept"]))


class FedCMUCB(BanditPolicy):
    """FedCM-UCB: ``mu_k <- (a_k mu_k + r_k) / (a_k + 1)``, ``a_k <- a_k + 1``; index
    ``mu_k + sqrt(2 ln t / a_k)`` with t the round (our default form). Initialisation (paper's
    Appendix C): ``a_k = 1`` and ``mu_k`` drawn from a Bernoulli(1/2)."""

    name = "fedcm-ucb"

    def reset(self, seed):
        super().reset(seed)
        self.round = 0

    def arm(self, agent):
        if agent not in self.arms:
            self.arms[agent] = [float(self.rng.integers(0, 2)), 1.0]  # [mu, a]
        return self.arms[agent]

    def act(self, observations, infos):
        self.round += 1
        return super().act(observations, infos)

    def index(self, agent):
        mu, a = self.arms[agent]
        return mu + math.sqrt(2.0 * math.log(self.round) / a)

    def update(self, agent, reward):
        mu, a = self.arms[agent]
        self.arms[agent] = [(a * mu + reward) / (a + 1.0), a + 1.0]


class FedCMTS(BanditPolicy):
    """FedCM-TS: ``Beta(alpha_k, beta_k)`` per client from ``(1, 1)``; ``alpha_k += r_k``,
    ``beta_k += 1 - r_k``; each round selects the candidates with the highest posterior samples."""

    name = "fedcm-ts"

    def arm(self, agent):
        return self.arms.setdefault(agent, [1.0, 1.0])  # [alpha, beta]

    def index(self, agent):
        alpha, beta = self.arms[agent]
        return float(self.rng.beta(alpha, beta))

    def update(self, agent, reward):
        alpha, beta = self.arms[agent]
        self.arms[agent] = [alpha + reward, beta + 1.0 - reward]


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
    the explored candidates of highest :func:`oort_utility`."""

    name = "oort"
    env_overrides = {"aggregation": "fedavg"}

    def __init__(self, select_fraction: float = DEFAULT_SELECT_FRACTION, exploration: float = 0.9,
                 decay: float = 0.98, exploration_min: float = 0.3, preferred_percentile: float = 30.0):
        self.select_fraction, self.initial_exploration = select_fraction, exploration
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
        explore_slots = min(len(unexplored), int(round(self.exploration * m)))
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


POLICIES = {
    policy.name: policy
    for policy in (FedAvgPolicy, RandomPolicy, FedProxPolicy, FedCAPolicy, FedCMUCB, FedCMTS, FedAdpPolicy, Oort, Fastest)
}
POLICY_NAMES = tuple(POLICIES)


def make_policy(name: str, select_fraction: float = DEFAULT_SELECT_FRACTION) -> Policy:
    """A baseline policy by name (:data:`POLICY_NAMES`); ``select_fraction`` sets ``m`` for the
    policies that select a subset (fedcm-ucb, fedcm-ts, oort, fastest).

    Raises:
        ValueError: unknown name (the message lists the allowed names) or a fraction outside (0, 1].
    """
    if not 0.0 < select_fraction <= 1.0:
        raise ValueError(f"select_fraction={select_fraction} must be in (0, 1]")
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; allowed: {', '.join(POLICY_NAMES)}")
    policy = POLICIES[name]
    return policy(select_fraction) if policy in (FedCMUCB, FedCMTS, Oort, Fastest) else policy()
