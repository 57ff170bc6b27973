"""Fastest-first selection on hand-made infos."""

import numpy as np

from fedenv.baselines import Fastest


def test_fastest_selects_the_m_candidates_of_lowest_predicted_round_time():
    latencies = {"a": (1.0, 9.0), "b": (3.0, 0.0), "c": (2.0, 2.0), "d": (0.5, 0.5), "e": (0.1, 0.1)}
    infos = {agent: {"probe_latency_s": p, "upload_latency_s": u} for agent, (p, u) in latencies.items()}
    observations = {agent: {"action_mask": np.array([1, int(agent != "e")])} for agent in latencies}
    # predicted durations: a 10, b 6 (probe twice), c 4, d 1; e is fastest but not a candidate; m = round(0.5 * 4)
    assert Fastest(select_fraction=0.5).act(observations, infos) == {"d": 1, "c": 1}
