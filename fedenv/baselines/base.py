"""The interface every selection policy meets, and the helpers the baselines share.

A policy maps a round's observations (and infos) to one action per agent. It declares the environment
settings it needs in ``env_overrides`` (its aggregation rule, FedProx's proximal term) and, if it learns
from feedback (the bandits), receives each step's infos in :meth:`Policy.observe`. The learned VDN
policy (``agents.policy.GreedyPolicy``) implements the same interface, so ``evaluate.py`` treats all
policies alike.

Adding a policy is one file and one registration line. The file, ``fedenv/baselines/lowest_loss.py``::

    from fedenv.baselines.base import Policy, candidates

    class LowestLoss(Policy):
        name = "lowest-loss"
        env_overrides = {"aggregation": "fedavg"}
        probes = True  # it decides on this round's probing loss

        def act(self, observations, infos):
            ranked = sorted(candidates(observations), key=lambda a: infos[a]["probe_loss"])
            return {agent: 1 for agent in ranked[: len(ranked) // 2]}

and the line in the policies section of :mod:`fedenv.registry`::

    POLICIES.register("lowest-loss", "fedenv.baselines.lowest_loss:LowestLoss")

(outside the package, ``POLICIES.register("lowest-loss", LowestLoss)`` before the policies are built).
``make_policy("lowest-loss")`` and ``evaluate.py --policies lowest-loss`` then find it; the keyword
arguments of the class's ``__init__`` are the options ``make_policy`` passes on.

Policies that select ``m`` of the candidates use ``m = max(1, round(select_fraction * candidates))``;
``select_fraction`` defaults to :data:`DEFAULT_SELECT_FRACTION`.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from fedenv.latency import reported_round_s

DEFAULT_SELECT_FRACTION = 0.4
"""Share of the candidates that the fixed-ratio policies (fedcm-ucb, fedcm-ts, oort, fastest) select by
default: FedCM's main runs sample 8 of 20 clients (Kim et al., arXiv 2012.03270, Fig. 3 and Tables 3-5,
"With sampling 8 out of 20 clients"). FedCA's Table 2 sweeps other ratios, up to 0.6 at least."""


class Policy(ABC):
    """Base class. Subclasses set ``name`` and implement :meth:`act`.

    Attributes:
        name: the policy's name in tables and on the command line.
        env_overrides: :class:`~fedenv.config.EnvConfig` fields the policy needs (applied by the runner).
        probes: whether the policy decides on the round's probing epoch (``EnvConfig.probing``): True
            for learned policies trained on probing observations; False (the default) for pre-selection
            policies, which choose before any client trains and are run without probing, so that they
            are charged only for what they make clients do.
        selects_from_all_online: whether the policy is meant to choose among every online client (FedCM's
            bandits keep statistics per client): without probing the runner then makes every online
            client a candidate (``clients_per_round = num_clients``); with probing it keeps the env's
            random candidates and warns.
        compared: whether ``evaluate.py --policies all`` and the studies' comparisons with every fixed
            policy include it (:func:`~fedenv.baselines.factory.compared_policies`), and so whether it can be
            the best fixed policy that paired differences are taken against
            (:func:`~fedenv.evaluation.paired.compare_to_references`); False for policies that only make sense
            with options (a schedule, a sweep's settings) and for references of ours.
        looks_ahead: whether the policy is an oracle that reads the round's true round times before
            deciding (:meth:`look_ahead`, which :func:`fedenv.evaluation.run_episode` then calls before each
            :meth:`act`); False for every policy a server could run.
    """

    name = "policy"
    env_overrides: ClassVar[dict[str, Any]] = {}
    probes: ClassVar[bool] = False
    selects_from_all_online: ClassVar[bool] = False
    compared: ClassVar[bool] = True
    looks_ahead: ClassVar[bool] = False

    def reset(self, seed: int) -> None:  # noqa: B027 - optional no-op hook
        """Called before each episode with the episode's seed (seed any randomness from it)."""

    @abstractmethod
    def act(self, observations: Mapping[str, Mapping[str, np.ndarray]],
            infos: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
        """The round's actions.

        Args:
            observations: ``agent -> {"observation": float32 vector, "action_mask": int8 (2,)}``.
            infos: ``agent -> info dict`` of the last reset or step (``probe_loss``, latencies, ...).

        Returns:
            ``agent -> 0 | 1``; agents left out (and non-candidates) count as 0.
        """

    def observe(self, infos: Mapping[str, Mapping[str, Any]]) -> None:  # noqa: B027 - optional no-op hook
        """Feedback after each step (the step's infos); fixed policies ignore it."""

    def configure(self, clients_per_round: int) -> None:  # noqa: B027 - optional no-op hook
        """Called by the runners (:func:`fedenv.evaluation.evaluate_policies` and its Ray version) before
        the policy's episodes with the comparison's ``clients_per_round`` (that of the configuration given,
        before a ``selects_from_all_online`` policy's pool is widened to every online client): such a policy
        sizes its selection from it, so that a larger pool does not buy it more uploads."""

    def look_ahead(self, round_s: Mapping[str, float]) -> None:  # noqa: B027 - optional no-op hook
        """Called by the runner before each :meth:`act` of a policy that :attr:`looks_ahead`, with
        ``{candidate: seconds}``, the time each would add to the coming round if selected
        (:meth:`fedenv.simulator.FederationSimulator.candidate_round_s`), which no server knows before the
        round; it is never called for other policies."""

    def register_clients(self, profile_duration_s: Mapping[str, float], probing: bool) -> None:  # noqa: B027
        """Called by the runner (:func:`fedenv.evaluation.run_episode`) after :meth:`reset`, before the
        first round, with what the server knows before any client has reported: each agent's round time
        estimated from its device profile (s, :func:`fedenv.evaluation.rollout.profile_duration_s`; FedScale's
        client manager registers every client so) and whether the episode's candidates probe before the
        decision (``EnvConfig.probing``). Fixed policies that use neither ignore it."""


def candidates(observations: Mapping[str, Mapping[str, np.ndarray]]) -> list[str]:
    """Agents whose action mask allows action 1 this round."""
    return [agent for agent, obs in observations.items() if obs["action_mask"][1]]


def check_select_fraction(select_fraction: float) -> float:
    """``select_fraction`` itself, when it is in (0, 1].

    Raises:
        ValueError: ``select_fraction`` not a number or outside (0, 1].
    """
    if isinstance(select_fraction, bool) or not isinstance(select_fraction, numbers.Real):
        raise ValueError(f"select_fraction={select_fraction!r} must be a number")
    if not 0.0 < select_fraction <= 1.0:
        raise ValueError(f"select_fraction={select_fraction} must be in (0, 1]")
    return select_fraction


def check_counts(policy: str, **counts) -> None:
    """Refuse a count option of ``policy`` (``k=2``) that is not an integer (Python's or NumPy's; a bool is not
    one).

    Raises:
        ValueError: names the option, its value and the policy.
    """
    for option, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"{policy} {option}={value!r} must be an integer")


def select_count(num_candidates: int, fraction: float) -> int:
    """``m = max(1, round(fraction * num_candidates))`` (0 without candidates)."""
    return 0 if num_candidates == 0 else max(1, round(fraction * num_candidates))


def predicted_duration_s(info: Mapping[str, Any]) -> float:
    """A client's expected round time in seconds from what the server has seen: its latest probing
    latency plus its latest upload latency (the probing latency again before its first upload); 0 for
    a client that has reported nothing (see :func:`expected_duration_s`)."""
    return float(reported_round_s(info["probe_latency_s"], info["upload_latency_s"]))


def expected_duration_s(agent: str, info: Mapping[str, Any], profile_duration_s: Mapping[str, float]) -> float:
    """A client's expected round time, s: :func:`predicted_duration_s` once it has reported a probing
    latency, else (never seen) its device-profile estimate ``profile_duration_s[agent]`` (FedScale's client
    manager registers every client with such an estimate, ``registerDuration``; see
    :meth:`fedenv.traces.TraceReplay.profile_round_s`). The estimate covers what a report covers: the
    model's download, one local epoch and the upload.

    Raises:
        ValueError: a never-seen client without a profile estimate (the runner,
            :func:`fedenv.evaluation.run_episode`, gives them through :meth:`Policy.register_clients`).
    """
    if info["probe_latency_s"] > 0:
        return predicted_duration_s(info)
    if agent not in profile_duration_s:
        raise ValueError(f"{agent} has reported no latency and has no device-profile estimate: call the policy's "
                         "register_clients(profile_duration_s, probing) after reset (run_episode does)")
    return float(profile_duration_s[agent])
