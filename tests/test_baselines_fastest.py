"""Fastest-first selection on hand-made infos."""

import numpy as np
import pytest

from fedenv.baselines import FastestPolicy


def test_fastest_selects_the_m_candidates_of_lowest_predicted_round_time():
    latencies = {"a": (1.0, 9.0), "b": (3.0, 0.0), "c": (2.0, 2.0), "d": (0.5, 0.5), "e": (0.1, 0.1)}
    infos = {agent: {"probe_latency_s": p, "upload_latency_s": u} for agent, (p, u) in latencies.items()}
    observations = {agent: {"action_mask": np.array([1, int(agent != "e")])} for agent in latencies}
    # predicted durations: a 10, b 6 (probe twice), c 4, d 1; e is fastest but not a candidate; m = round(0.5 * 4)
    assert FastestPolicy(select_fraction=0.5).act(observations, infos) == {"d": 1, "c": 1}


def test_a_never_seen_candidate_ranks_by_its_device_profile_estimate_not_as_zero():
    latencies = {"a": (1.0, 1.0), "b": (0.0, 0.0), "c": (3.0, 3.0), "d": (0.0, 0.0)}  # b and d never seen
    infos = {agent: {"probe_latency_s": p, "upload_latency_s": u} for agent, (p, u) in latencies.items()}
    observations = {agent: {"action_mask": np.array([1, 1])} for agent in latencies}
    policy = FastestPolicy(select_fraction=0.5)
    policy.register_clients({"a": 0.1, "b": 5.0, "c": 0.1, "d": 1.5}, probing=False)
    # expected durations: a 2 (reported), b 5 (profile), c 6 (reported), d 1.5 (profile); m = 2
    assert policy.act(observations, infos) == {"d": 1, "a": 1}


def test_a_never_seen_candidate_without_a_profile_estimate_is_refused():
    infos = {"a": {"probe_latency_s": 0.0, "upload_latency_s": 0.0}}
    with pytest.raises(ValueError, match="a has reported no latency and has no device-profile estimate"):
        FastestPolicy().act({"a": {"action_mask": np.array([1, 1])}}, infos)
