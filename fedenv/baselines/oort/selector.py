"""Oort's training-participant selector (Lai et al., OSDI 2021), ported from FedScale (numpy only).

Source: SymbioticLab/FedScale ``thirdparty/oort/oort.py`` at commit ce6426658c9b87092ec9ff9dc5c37da32d7609d6
(class ``_training_selector``: ``register_client``, ``update_client_util``, ``pacer``, ``calculateSumUtil``,
``get_blacklist``, ``getTopK``, ``get_norm``; the same logic as at 3e5ba367653715b8943c1788942edeee05a4759),
with the parts of ``fedscale/cloud/client_manager.py`` (commit 0f1a07ea860dc5fe38c13ff8e51329da1e686809) it
relies on: clients outside ``[filter_less, filter_more]`` samples are never registered, a client's first
reward is ``min(size, local_steps * batch_size)``, and the first selection is uniform at random. The
defaults are those of ``fedscale/cloud/config_parser.py`` at the same commit (see :class:`OortOptions`).

One selection of ``k`` among the online registered clients (``getTopK``), once there are more than ``k``:

1. epsilon <- max(epsilon * exploration_decay, exploration_min), BEFORE it is used;
2. the pacer (:func:`pacer`) may move the percentile ``round_threshold``; the preferred duration T is that
   percentile of ALL registered clients' durations (:func:`preferred_duration`);
3. an explored client scores ``|(min(r, clip) - min) / range + sqrt(0.1 ln(t) / t_i)| * P``: its reward
   ``r`` (the statistical utility of its last participation) normalised over the online clients' positive
   rewards (:func:`reward_norm`, unexplored clients' size-based rewards included), the staleness term with
   ``t_i`` the round of its last feedback, and the system penalty ``P`` (:func:`system_penalty`);
4. exploitation: ``min(k - int(k * epsilon), explored)`` clients drawn without replacement in proportion to
   score (:func:`sampling_probabilities`) from the clients scoring at least ``cut_off_util`` times the
   (exploitLen+1)-th best score, and at least the ``10 * exploitLen + 1`` best whatever their scores;
5. exploration: the remaining slots go to unexplored clients, ranked by their registered reward (data size
   capped at ``local_steps * batch_size``) times P; ``explore_len`` of them are drawn in proportion to that
   value from the best ``int(sample_window * explore_len)``.

Where FedScale's code departs from the paper, this follows the code (the policy,
:mod:`fedenv.baselines.oort.policy`, says where fedenv follows the paper). Differences from FedScale that
change no selection: the random generator is passed in (FedScale seeds the global ``np.random`` with
``sample_seed`` 233); unexplored clients are ranked in registration order before the sort (FedScale iterates
a ``set``, whose order changes with Python's hash seed, so ties would break differently in every process);
non-finite rewards are left out of the normalisation statistics, and a NaN score counts as 0.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from fedenv.baselines.oort.options import OortOptions


@dataclass
class Arm:
    """What the selector knows of one client (FedScale's ``totalArms`` entry)."""

    reward: float
    duration_s: float
    time_stamp: int
    count: int = 0


def sampling_probabilities(weights: Sequence[float]) -> np.ndarray:
    """``(n,)`` probabilities ``w_i / sum(w)`` for drawing in proportion to ``weights`` (FedScale:
    ``np.random.choice(p=w / max(1e-4, sum(w)))``), summing to 1 also for degenerate weights: a NaN weight
    counts as 0; if any weight is +inf, the +inf ones share the probability equally (the limit of
    ``w_i / sum(w)``); if every weight is 0 (or NaN), the probability is uniform.

    Raises:
        ValueError: no weights, or a negative weight.
    """
    w = np.nan_to_num(np.asarray(weights, dtype=np.float64), nan=0.0, posinf=np.inf)
    if w.size == 0 or (w < 0).any():
        raise ValueError(f"weights={list(weights)} must be non-empty and non-negative")
    if np.isinf(w).any():
        w = np.isinf(w).astype(np.float64)
    total = w.sum()
    return w / total if total > 0 else np.full(w.size, 1.0 / w.size)


def system_penalty(duration_s: float, preferred_s: float, round_penalty: float) -> float:
    """Oort's system utility factor ``(T / t_i) ** alpha`` when the client's duration ``t_i`` exceeds the
    preferred duration ``T`` (both s), else 1 (Lai et al., Eq. 2; FedScale's ``getTopK``)."""
    return (preferred_s / max(1e-4, duration_s)) ** round_penalty if duration_s > preferred_s else 1.0


def preferred_duration(durations_s: Iterable[float], round_threshold: float) -> float:
    """T: the duration at index ``int(n * round_threshold / 100)`` of the ``n`` sorted durations (s);
    ``inf`` when ``round_threshold >= 100`` (FedScale's ``getTopK``)."""
    ordered = sorted(durations_s)
    if round_threshold >= 100.0 or not ordered:
        return math.inf
    return ordered[min(int(len(ordered) * round_threshold / 100.0), len(ordered) - 1)]


def pacer(history: Sequence[float], training_round: int, round_threshold: float, step: int,
          delta: float) -> float:
    """The new ``round_threshold`` (FedScale's ``pacer``). Every ``step`` rounds from round ``2 * step``,
    it compares the exploitation utility summed over the last ``step`` rounds (``history``, one value a
    round, newest last), ``U``, with the ``step`` rounds before, ``U'``: a plateau, ``|U - U'| <= 0.1 U'``,
    relaxes T by ``delta`` percentile points (up to 100); a sharp change, ``|U - U'| >= 5 U'``, tightens it
    (down to ``delta``). The paper (Algorithm 1) relaxes T when utility stops growing; FedScale's test is
    the one above."""
    if training_round < 2 * step or training_round % step:
        return round_threshold
    before, now = sum(history[-2 * step:-step]), sum(history[-step:])
    if abs(now - before) <= 0.1 * before:
        return min(100.0, round_threshold + delta)
    if abs(now - before) >= 5 * before:
        return max(delta, round_threshold - delta)
    return round_threshold


def reward_norm(rewards: Sequence[float], clip_bound: float) -> tuple[float, float, float]:
    """``(minimum, range, clip value)`` of the positive finite ``rewards`` (FedScale's ``get_norm``): the
    clip value is the reward at index ``int(n * clip_bound)`` once sorted, the minimum is 0.999 times the
    smallest, the range is ``max(largest - minimum, 1e-4)``. Without any such reward, ``(0, 1, 0)``, so that
    scores are the staleness term alone (FedScale raises IndexError)."""
    ordered = sorted(r for r in rewards if 0 < r < math.inf)
    if not ordered:
        return 0.0, 1.0, 0.0
    low = 0.999 * ordered[0]
    return low, max(ordered[-1] - low, 1e-4), ordered[min(int(len(ordered) * clip_bound), len(ordered) - 1)]


class OortSelector:
    """FedScale's ``_training_selector`` with the client manager's registration and first round.

    Args:
        rng: the ``numpy.random.Generator`` of every draw.
        options: :class:`OortOptions` (FedScale's defaults when omitted).

    Attributes:
        exploration: the current epsilon. round_threshold: the pacer's current percentile.
        preferred_duration_s: T of the latest selection (s). exploit_clients, explore_clients: its picks.
    """

    def __init__(self, rng: np.random.Generator, options: OortOptions | None = None):
        self.rng, self.options = rng, options or OortOptions()
        self.arms: dict[Hashable, Arm] = {}
        self.unexplored: set[Hashable] = set()
        self.successful_clients: set[Hashable] = set()
        self.exploit_util_history: list[float] = []
        self.exploit_clients: list[Hashable] = []
        self.explore_clients: list[Hashable] = []
        self.exploration, self.round_threshold = self.options.exploration_factor, self.options.round_threshold
        self.preferred_duration_s, self.training_round, self.selections = math.inf, 0, 0

    def register(self, client: Hashable, size: int, duration_s: float) -> bool:
        """Register a client with ``size`` samples and an expected duration (s); False (nothing registered)
        when ``size`` is outside ``[filter_less, filter_more]``. Registering again changes nothing."""
        opts = self.options
        if not opts.filter_less <= size <= opts.filter_more:
            return False
        if client not in self.arms:
            self.arms[client] = Arm(min(size, opts.local_steps * opts.batch_size), float(duration_s),
                                    self.training_round)
            self.unexplored.add(client)
        return True

    def update(self, client: Hashable, reward: float, duration_s: float, round: int) -> None:
        """Feedback of a participation (``update_client_util``): its statistical utility, its duration (s)
        and the (1-based) round it took part in.

        Raises:
            ValueError: ``round < 1`` (the staleness term divides by it).
        """
        if round < 1:
            raise ValueError(f"round={round} must be >= 1")
        arm = self.arms[client]
        arm.reward, arm.duration_s, arm.time_stamp, arm.count = float(reward), float(duration_s), round, arm.count + 1
        self.unexplored.discard(client)
        self.successful_clients.add(client)

    def update_duration(self, client: Hashable, duration_s: float) -> None:
        """A new expected duration (s) for a registered client."""
        if client in self.arms:
            self.arms[client].duration_s = float(duration_s)

    def select(self, round: int, online: Iterable[Hashable], k: int) -> list[Hashable]:
        """``k`` of the ``online`` registered clients (all of them when there are at most ``k``; uniformly
        at random the first time, as FedScale's ``clientManager.select_participants``)."""
        self.selections += 1
        online = [c for c in online if c in self.arms]
        if len(online) <= k:
            return online
        if self.selections == 1:
            return [online[i] for i in self.rng.permutation(len(online))[: min(k, len(online) - 1)]]
        cur_time = round if self.options.use_round_argument else self.training_round + 1
        return self._top_k(k, cur_time, set(online))

    def _top_k(self, k: int, cur_time: int, feasible: set) -> list[Hashable]:
        opts = self.options
        self.training_round = cur_time
        blacklist = self._blacklist()
        self._pace()
        keys = [c for c in self.arms if c in feasible and c not in blacklist]
        self.preferred_duration_s = preferred_duration((a.duration_s for a in self.arms.values()),
                                                       self.round_threshold)
        scores = self._scores(cur_time, keys)
        self.exploration = max(self.exploration * opts.exploration_decay, opts.exploration_min)
        unexplored = [c for c in self.arms if c in feasible and c in self.unexplored]
        explore_slots = int(k * self.exploration)
        if opts.fill_exploitation:
            explore_slots = min(explore_slots, len(unexplored))
        self.exploit_clients = self._exploit(scores, min(k - explore_slots, len(scores)))
        if unexplored:
            self.explore_clients = self._explore(unexplored, k - len(self.exploit_clients))
        elif opts.reset_stale_explore:
            self.explore_clients = []
        return self.explore_clients + self.exploit_clients

    def _scores(self, cur_time: int, keys: list[Hashable]) -> dict[Hashable, float]:
        low, span, clip = reward_norm([self.arms[c].reward for c in keys], self.options.clip_bound)
        scores = {}
        for client in keys:
            arm = self.arms[client]
            if arm.count > 0:
                score = (min(arm.reward, clip) - low) / span + math.sqrt(0.1 * math.log(cur_time) / arm.time_stamp)
                score *= system_penalty(arm.duration_s, self.preferred_duration_s, self.options.round_penalty)
                scores[client] = 0.0 if math.isnan(score) else abs(score)
        return scores

    def _exploit(self, scores: dict[Hashable, float], exploit_len: int) -> list[Hashable]:
        ranked = sorted(scores, key=scores.get, reverse=True)
        if exploit_len >= len(ranked) and self.options.guard_small_pools:
            cut_off = 0.0
        else:
            cut_off = scores[ranked[exploit_len]] * self.options.cut_off_util
        pool = []
        for client in ranked:
            if scores[client] < cut_off and len(pool) > 10 * exploit_len:
                break
            pool.append(client)
        return self._choice(pool, exploit_len, [scores[c] for c in pool])

    def _explore(self, unexplored: list[Hashable], slots: int) -> list[Hashable]:
        opts = self.options
        priority = {c: self.arms[c].reward * system_penalty(self.arms[c].duration_s, self.preferred_duration_s,
                                                            opts.round_penalty) for c in unexplored}
        explore_len = min(len(unexplored), slots)
        window = sorted(priority, key=priority.get, reverse=True)[: int(opts.sample_window * explore_len)]
        return self._choice(window, explore_len, [priority[c] for c in window])

    def _choice(self, pool: list[Hashable], size: int, weights: list[float]) -> list[Hashable]:
        """``size`` of ``pool`` drawn without replacement in proportion to ``weights``."""
        if size <= 0:
            return []
        p = sampling_probabilities(weights)
        positive = np.flatnonzero(p)
        if len(positive) < size and self.options.guard_small_pools:
            zero = np.flatnonzero(p == 0)
            index = np.concatenate([positive, self.rng.choice(zero, size - len(positive), replace=False)])
        else:
            index = self.rng.choice(len(pool), size, p=p, replace=False)
        return [pool[i] for i in index]

    def _pace(self) -> None:
        fed_back = [c for c in self.exploit_clients if c in self.successful_clients]
        self.exploit_util_history.append(sum(self.arms[c].reward for c in fed_back) / (len(fed_back) + 1e-4))
        self.successful_clients = set()
        opts = self.options
        self.round_threshold = pacer(self.exploit_util_history, self.training_round, self.round_threshold,
                                     opts.pacer_step, opts.pacer_delta)

    def _blacklist(self) -> set[Hashable]:
        if self.options.blacklist_rounds == -1:
            return set()
        over = sorted((c for c, a in self.arms.items() if a.count > self.options.blacklist_rounds),
                      key=lambda c: self.arms[c].count, reverse=True)
        return set(over[: int(self.options.blacklist_max_len * len(self.arms))])
