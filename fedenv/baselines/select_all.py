"""Policies that select every candidate; the aggregation rule they ask for makes the difference."""

from __future__ import annotations

from typing import Any, ClassVar

from fedenv.baselines.base import Policy, candidates


class SelectAllPolicy(Policy):
    """Every candidate finishes training and uploads; the aggregation rule makes the difference."""

    def act(self, observations, infos):
        return {agent: 1 for agent in candidates(observations)}


class FedAvgPolicy(SelectAllPolicy):
    """FedAvg: every candidate uploads; FedAvg aggregation (McMahan et al., AISTATS 2017)."""

    name = "fedavg"
    env_overrides: ClassVar[dict[str, Any]] = {"aggregation": "fedavg"}


class FedProxPolicy(SelectAllPolicy):
    """FedProx: every candidate uploads; local training adds ``mu/2 ||w - w_global||^2`` (Li et al.,
    MLSys 2020, Eq. 2) with mu = 0.1, the value FedCM gives its FedProx baseline (Kim et al., arXiv
    2012.03270, App. D; also in FedProx's own candidate set {0.001, 0.01, 0.1, 1}, Sec. 5.3.2); FedAvg
    aggregation."""

    name = "fedprox"
    env_overrides: ClassVar[dict[str, Any]] = {"aggregation": "fedavg", "fedprox_mu": 0.1}


class FedCAPolicy(SelectAllPolicy):
    """FedCA: every candidate uploads; combinatorial averaging keeps the best-scoring subset
    (Kim et al., arXiv 2012.03270, Eq. 4-5)."""

    name = "fedca"
    env_overrides: ClassVar[dict[str, Any]] = {"aggregation": "fedca"}


class FedAdpPolicy(SelectAllPolicy):
    """FedAdp: every candidate uploads; adaptive weighting by smoothed angles, and the local learning rate
    decayed by 0.995 per round (Wu and Wang, arXiv 2012.00661: "learning rate decay of 0.995 per
    communication round", setting of the Fig. 1 experiment)."""

    name = "fedadp"
    env_overrides: ClassVar[dict[str, Any]] = {"aggregation": "fedadp", "lr_decay": 0.995}


class ConfiguredPolicy(SelectAllPolicy):
    """Every candidate uploads, in the environment settings given per instance: a baseline written as its
    settings, for sweeps (``benchmarks/paper_checks.py``: FedPdp; FedProx at each mu). Not part of
    ``--policies all`` (:attr:`Policy.compared`).

    Args:
        name: its name in tables.
        env_overrides: :class:`~fedenv.config.EnvConfig` fields it runs with, e.g.
            ``{"aggregation": "fedavg", "fedprox_mu": 1.0}``.
    """

    compared: ClassVar[bool] = False

    def __init__(self, name: str = "select-all", env_overrides: dict[str, Any] | None = None):
        self.name = name
        self.env_overrides = dict(env_overrides or {})
