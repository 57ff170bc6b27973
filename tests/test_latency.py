"""Round latency and deadline rules (fedenv.latency), on values worked by hand."""

from __future__ import annotations

import numpy as np

from fedenv.latency import capped_latency_s, full_round_s, on_time, round_latency_s


def test_round_latency_is_slowest_probe_plus_slowest_finish():
    assert round_latency_s(np.array([1.0, 3.0, 2.0]), np.array([4.0, 0.5])) == 7.0
    assert round_latency_s(np.array([1.0, 3.0]), np.array([])) == 3.0
    assert round_latency_s(np.array([]), np.array([])) == 0.0


def test_deadline_counts_from_the_slowest_probe_not_the_clients_own():
    probe_s = np.array([1.0, 3.0])
    # finishes at 3 + 4 = 7 and 3 + 6 = 9: only the first makes a deadline of 8
    assert on_time(probe_s, np.array([4.0, 6.0]), 8.0).tolist() == [True, False]
    assert on_time(probe_s, np.array([5.0]), 8.0).tolist() == [True]  # exactly at the deadline is on time


def test_without_deadline_everyone_is_on_time_and_latency_is_not_capped():
    assert on_time(np.array([3.0]), np.array([100.0, 200.0]), None).tolist() == [True, True]
    assert on_time(np.array([3.0]), np.array([]), 1.0).tolist() == []
    assert capped_latency_s(9.0, None) == 9.0
    assert capped_latency_s(9.0, 8.0) == 8.0 and capped_latency_s(7.0, 8.0) == 7.0


def test_without_probing_a_client_round_is_download_all_epochs_and_upload():
    # 2 s down + 3 epochs x 1.5 s + 0.5 s up = 7 s; 1 + 3 x 2 + 4 = 11 s
    whole = full_round_s(np.array([2.0, 1.0]), np.array([1.5, 2.0]), 3, np.array([0.5, 4.0]))
    assert whole.tolist() == [7.0, 11.0]
    assert round_latency_s(np.array([]), whole) == 11.0  # nobody probed: the slowest whole round
    assert on_time(np.array([]), whole, 10.0).tolist() == [True, False]  # each client counts from 0
    assert on_time(np.array([]), whole, 11.0).tolist() == [True, True]


def test_a_probing_phase_past_the_deadline_is_charged_in_full():
    # slowest probe 5 s, deadline 2 s: nobody is on time, and the round lasts the 5 s the decision waited
    probe_s = np.array([1.0, 5.0])
    assert on_time(probe_s, np.array([0.5]), 2.0).tolist() == [False]
    assert capped_latency_s(5.5, 2.0, probe_s) == 5.0
    assert capped_latency_s(9.0, 8.0, probe_s) == 8.0  # probing within the deadline: the deadline caps
    assert capped_latency_s(9.0, 8.0, np.array([])) == 8.0  # no probing phase
