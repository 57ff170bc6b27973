"""FedScale's Oort options and their defaults (SymbioticLab/FedScale ``fedscale/cloud/config_parser.py``
@ 0f1a07ea860dc5fe38c13ff8e51329da1e686809), with the port's switches for FedScale's quirks."""

from __future__ import annotations

import math
from dataclasses import dataclass

_RANGES = {"exploration_factor": (0.0, 1.0), "exploration_decay": (0.0, 1.0), "exploration_min": (0.0, 1.0),
           "round_threshold": (0.0, 100.0), "round_penalty": (0.0, math.inf), "pacer_step": (1, math.inf),
           "pacer_delta": (0.0, 100.0), "clip_bound": (0.0, 1.0), "cut_off_util": (0.0, math.inf),
           "sample_window": (1.0, math.inf), "blacklist_max_len": (0.0, 1.0), "local_steps": (1, math.inf),
           "batch_size": (1, math.inf), "filter_less": (0, math.inf), "filter_more": (0, math.inf)}


@dataclass(frozen=True)
class OortOptions:
    """FedScale's Oort options, with FedScale's defaults (fedscale/cloud/config_parser.py @ 0f1a07e).

    Attributes:
        exploration_factor: 0.9, initial epsilon (share of the slots kept for exploration).
        exploration_decay: 0.98, epsilon's factor per selection. exploration_min: 0.3, epsilon's floor.
        round_threshold: 30, percentile (0-100) of the registered durations taken as preferred duration T;
            100 means T = inf (no penalty). round_penalty: 2.0, alpha in ``(T / duration) ** alpha``.
        pacer_step: 20, the pacer's window W in rounds. pacer_delta: 5, its step in percentile points.
        clip_bound: 0.9, rewards are clipped at this quantile of the positive rewards.
        cut_off_util: 0.05, exploitation keeps scores >= cut_off_util * the (exploitLen+1)-th score.
        sample_window: 5.0, exploration draws from the best ``sample_window * explore_len`` unexplored.
        blacklist_rounds: -1 (off), clients selected more often are excluded; blacklist_max_len: 0.3, at
            most this share of the registered clients is excluded.
        local_steps, batch_size: 20 and 30, FedScale's; a client's first reward is ``min(size, 20 * 30)``.
        filter_less, filter_more: 32 and 1e15, clients with fewer / more samples are never registered.
        guard_small_pools, reset_stale_explore, fill_exploitation: port-only switches, False = FedScale.
            ``guard_small_pools``: FedScale raises IndexError when no more clients are explored than
            exploitLen, and ValueError when fewer scores than slots are non-zero; True clamps instead.
            ``reset_stale_explore``: with no unexplored client online, FedScale returns LAST round's
            exploration clients again; True returns none. ``fill_exploitation``: FedScale keeps
            ``int(k * epsilon)`` slots for exploration even when fewer unexplored clients are online and
            so returns fewer than ``k``; True gives those slots to exploitation.
        use_round_argument: port-only, False = FedScale: the staleness term's current time is the
            selector's own count (one behind the round of the feedback); True uses ``select``'s ``round``.

    Raises:
        ValueError: a value outside its range (the message names the field and the range).
    """

    exploration_factor: float = 0.9
    exploration_decay: float = 0.98
    exploration_min: float = 0.3
    round_threshold: float = 30.0
    round_penalty: float = 2.0
    pacer_step: int = 20
    pacer_delta: float = 5.0
    clip_bound: float = 0.9
    cut_off_util: float = 0.05
    sample_window: float = 5.0
    blacklist_rounds: int = -1
    blacklist_max_len: float = 0.3
    local_steps: int = 20
    batch_size: int = 30
    filter_less: float = 32
    filter_more: float = 1e15
    guard_small_pools: bool = False
    reset_stale_explore: bool = False
    fill_exploitation: bool = False
    use_round_argument: bool = False

    def __post_init__(self):
        for name, (low, high) in _RANGES.items():
            value = getattr(self, name)
            if not low <= value <= high:
                raise ValueError(f"Oort option {name}={value} must be in [{low}, {high}]")
