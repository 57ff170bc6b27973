"""FedCM's bandit client sampling: UCB and Thompson sampling (Kim et al., arXiv 2012.03270, Algorithms 2-3)."""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

from fedenv.baselines.base import DEFAULT_SELECT_FRACTION, Policy, candidates, check_select_fraction, select_count


class BanditPolicy(Policy):
    """FedCM bandit sampling (Kim et al., arXiv 2012.03270, Algorithms 2-3): pick the ``m`` candidates
    with the highest index (``m`` from ``select_fraction``, by default FedCM's 8 of 20, see
    :data:`~fedenv.baselines.base.DEFAULT_SELECT_FRACTION`); equal indices are ordered uniformly at random
    from the episode's seed (our choice: the paper does not say, and a fixed order would favour low ids).
    After the round, every selected client k gets reward ``r_k = 1[k in S_opt]`` from FedCA's
    combinatorial averaging (the env's ``kept`` info).

    However many clients it ranks, it selects ``m = select_count(clients_per_round, select_fraction)`` of
    them, with ``clients_per_round`` the comparison's (given by the runner, :meth:`configure`) rather than
    the size of the pool: without probing the runner offers it every online client
    (``selects_from_all_online``), and a budget growing with that pool would buy it more uploads than the
    policies it is compared with (our choice, so that the comparison is at an equal budget). Before
    :meth:`configure` is called, ``m`` follows the number of candidates, as for the other policies.

    Raises:
        ValueError: ``select_fraction`` outside (0, 1].
    """

    env_overrides: ClassVar[dict[str, Any]] = {"aggregation": "fedca"}
    selects_from_all_online = True  # FedCM takes the top fraction of all clients S (Algorithms 2-3, line 4)

    def __init__(self, select_fraction: float = DEFAULT_SELECT_FRACTION):
        self.select_fraction = check_select_fraction(select_fraction)
        self.clients_per_round: int | None = None
        self.reset(0)

    def configure(self, clients_per_round):
        if clients_per_round < 1:
            raise ValueError(f"clients_per_round={clients_per_round} must be >= 1")
        self.clients_per_round = int(clients_per_round)

    def reset(self, seed):
        self.rng = np.random.default_rng([seed, 11])
        self.arms: dict[str, list[float]] = {}

    @abstractmethod
    def arm(self, agent: str) -> list[float]:
        """The agent's arm statistics, created on first use."""

    @abstractmethod
    def index(self, agent: str) -> float:
        """The agent's selection index this round (higher is selected first)."""

    @abstractmethod
    def update(self, agent: str, reward: float) -> None:
        """Update the agent's arm with reward ``r_k`` in {0, 1}."""

    def act(self, observations, infos):
        chosen = candidates(observations)
        for agent in chosen:
            self.arm(agent)
        scores = {agent: self.index(agent) for agent in chosen}
        shuffled = [chosen[i] for i in self.rng.permutation(len(chosen))]
        ranked = sorted(shuffled, key=lambda a: -scores[a])  # stable sort: ties stay in random order
        budget = len(chosen) if self.clients_per_round is None else min(self.clients_per_round, len(chosen))
        return {agent: 1 for agent in ranked[: select_count(budget, self.select_fraction)]}

    def observe(self, infos):
        for agent, info in infos.items():
            if info["selected"]:
                self.arm(agent)
                self.update(agent, float(info["kept"]))


class FedCMUCBPolicy(BanditPolicy):
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


class FedCMTSPolicy(BanditPolicy):
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
