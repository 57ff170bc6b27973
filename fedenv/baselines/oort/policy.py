"""Oort guided participant selection (Lai et al., OSDI 2021) as a fedenv policy, on FedScale's selector."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from fedenv.baselines.base import (
    DEFAULT_SELECT_FRACTION,
    Policy,
    candidates,
    check_select_fraction,
    expected_duration_s,
    select_count,
)
from fedenv.baselines.oort.options import OortOptions
from fedenv.baselines.oort.selector import OortSelector


def oort_utility(data_size: float, mean_sq_loss: float) -> float:
    """Oort's statistical utility ``|B_i| sqrt(1/|B_i| sum_{k in B_i} Loss(k)^2)`` (Lai et al., OSDI 2021,
    Sec. 4.2), with ``B_i`` all of the client's ``data_size`` samples and ``mean_sq_loss`` the mean squared
    per-sample loss (nats^2) of its probing epoch over all of them. FedScale's client
    (``fedscale/cloud/execution/torch_client.py`` @ 036cee4ccf1184fdc4ed08761ae0fd871d328f18) uses the
    losses of its LAST minibatch only, times ``min(size, local_steps * batch_size)``; we follow the paper.
    A NaN loss gives NaN, which the selector scores as 0.

    Raises:
        ValueError: a negative ``data_size`` or ``mean_sq_loss``.
    """
    if data_size < 0 or mean_sq_loss < 0:
        raise ValueError(f"data_size={data_size} and mean_sq_loss={mean_sq_loss} must be >= 0")
    return data_size * math.sqrt(mean_sq_loss)


class OortPolicy(Policy):
    """Oort (Lai et al., OSDI 2021) as FedScale implements it (:mod:`fedenv.baselines.oort.selector`,
    ported from SymbioticLab/FedScale ``thirdparty/oort/oort.py`` @ ce6426658c9b87092ec9ff9dc5c37da32d7609d6):
    each round it picks ``m = select_count(candidates, select_fraction)`` of the round's candidates
    (the online clients the environment offers), exploiting explored clients in proportion to their
    normalised, clipped utility plus staleness, times the ``(T / duration) ** round_penalty`` penalty with
    the pacer's preferred duration T, and exploring unexplored clients ranked by data size.

    A client is registered the first time it is a candidate, with its data size and its expected round
    time (:func:`~fedenv.baselines.base.expected_duration_s`: latest probing plus upload latency, s, or,
    for a client that has reported nothing, its device-profile estimate, as FedScale's client manager
    registers it), which is refreshed every round it is a candidate. After a round, every client that
    trained in it (selected and not dropped by the deadline: FedScale's stragglers report nothing) feeds
    back :func:`oort_utility` of that round's own training (as FedScale's client computes its utility over
    the samples it has just trained on): the loss of the round's first local epoch, which is the probing
    epoch the policy saw before deciding when the env probes, and the epoch the env reports after the step
    without probing (:meth:`register_clients` says which), with its expected round time then and the
    round. Draws use one ``numpy.random.Generator`` seeded with the episode seed in :meth:`reset`.

    Options (FedScale's defaults, ``fedscale/cloud/config_parser.py`` @ 0f1a07ea860dc5fe38c13ff8e51329da1e686809;
    see :class:`~fedenv.baselines.oort.options.OortOptions`): ``exploration`` (FedScale's
    ``exploration_factor``) 0.9, ``exploration_decay`` 0.98, ``exploration_min`` 0.3, ``round_threshold`` 30,
    ``round_penalty`` 2.0, ``pacer_step`` 20, ``pacer_delta`` 5, ``clip_bound`` 0.9, ``cut_off_util`` 0.05,
    ``sample_window`` 5.0, ``blacklist_rounds`` -1, ``blacklist_max_len`` 0.3, ``local_steps`` 20 and
    ``batch_size`` 30 (FedScale's, not the environment's: they only cap a client's exploration priority at
    600 samples), ``filter_less`` 32, ``filter_more`` 1e15 (clients with fewer / more samples are never
    selected). FedScale's ``exploration_alpha`` (logged only), ``sample_seed`` (the episode seed is used)
    and ``overcommitment`` (the aggregator's, not the selector's) do not apply.

    Fixes of FedScale's quirks, on here: ``guard_small_pools``, because FedScale crashes (IndexError) when
    no more clients are explored than exploitation slots, which small federations reach in a few rounds;
    ``reset_stale_explore``, because FedScale re-returns last round's exploration clients once none is
    left unexplored, which may be offline now or picked twice; ``fill_exploitation``, because FedScale
    otherwise returns only ``m - int(m * epsilon)`` clients once every candidate is explored. FedScale's
    round counter (``use_round_argument`` off) is kept: it delays the staleness term by a round but makes
    no selection wrong.

    Raises:
        ValueError: ``select_fraction`` outside (0, 1], or an option outside its range.
    """

    name = "oort"
    env_overrides: ClassVar[dict[str, Any]] = {"aggregation": "fedavg"}

    def __init__(self, select_fraction: float = DEFAULT_SELECT_FRACTION, exploration: float = 0.9,
                 exploration_decay: float = 0.98, exploration_min: float = 0.3, round_threshold: float = 30.0,
                 round_penalty: float = 2.0, pacer_step: int = 20, pacer_delta: float = 5.0,
                 clip_bound: float = 0.9, cut_off_util: float = 0.05, sample_window: float = 5.0,
                 blacklist_rounds: int = -1, blacklist_max_len: float = 0.3, local_steps: int = 20,
                 batch_size: int = 30, filter_less: float = 32, filter_more: float = 1e15):
        self.select_fraction = check_select_fraction(select_fraction)
        self.options = OortOptions(
            exploration_factor=exploration, exploration_decay=exploration_decay, exploration_min=exploration_min,
            round_threshold=round_threshold, round_penalty=round_penalty, pacer_step=pacer_step,
            pacer_delta=pacer_delta, clip_bound=clip_bound, cut_off_util=cut_off_util, sample_window=sample_window,
            blacklist_rounds=blacklist_rounds, blacklist_max_len=blacklist_max_len, local_steps=local_steps,
            batch_size=batch_size, filter_less=filter_less, filter_more=filter_more,
            guard_small_pools=True, reset_stale_explore=True, fill_exploitation=True)
        self.reset(0)

    def reset(self, seed: int) -> None:
        """A fresh selector whose draws follow ``seed``; no profile estimates until :meth:`register_clients`."""
        self.selector = OortSelector(np.random.default_rng(seed), self.options)
        self.round = 0
        self.probing = False
        self.profile_duration_s: dict[str, float] = {}
        self.pending: dict[str, float | None] = {}  # picked agent -> its utility when known at decision time

    def register_clients(self, profile_duration_s: Mapping[str, float], probing: bool) -> None:
        """The episode's device-profile estimates (s) and whether its candidates probe before the decision."""
        self.profile_duration_s, self.probing = dict(profile_duration_s), bool(probing)

    def act(self, observations, infos):
        self.round += 1
        chosen = candidates(observations)
        for agent in chosen:
            duration_s = expected_duration_s(agent, infos[agent], self.profile_duration_s)
            self.selector.register(agent, infos[agent]["data_size"], duration_s)
            self.selector.update_duration(agent, duration_s)
        picked = self.selector.select(self.round, chosen, select_count(len(chosen), self.select_fraction))
        self.pending = {a: self._utility(infos[a]) for a in picked} if self.probing else dict.fromkeys(picked)
        return {agent: 1 for agent in picked}

    def observe(self, infos: Mapping[str, Mapping[str, Any]]) -> None:
        for agent, utility in self.pending.items():
            info = infos[agent]
            if info["selected"] and not info["dropped"]:
                fresh = utility if self.probing else self._utility(info)
                self.selector.update(agent, fresh, expected_duration_s(agent, info, self.profile_duration_s),
                                     self.round)
        self.pending = {}

    @staticmethod
    def _utility(info: Mapping[str, Any]) -> float:
        return oort_utility(info["data_size"], info["probe_loss_sq"])
