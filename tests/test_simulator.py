"""The round simulation (fedenv.simulator.FederationSimulator), driven without the env: partition,
candidates, round latency and wall clock, deadlines, and diverged uploads."""

import numpy as np
import pytest
import torch

from fedenv.simulator import FederationSimulator, run_alone
from tests.helpers import expected_round_latency_s, tiny_config


def started(config, seed):
    simulator = FederationSimulator(config)
    run_alone(simulator.reset_process(seed))
    return simulator


def play(simulator, selected):
    chosen = np.zeros(simulator.config.num_clients, dtype=bool)
    chosen[selected] = True
    return run_alone(simulator.play_round_process(chosen))


def test_partition_gives_disjoint_clients_apart_from_the_validation_split():
    simulator = started(tiny_config(num_clients=5, clients_per_round=2, val_fraction=0.2), seed=3)
    shards = simulator.client_indices
    assert len(shards) == 5 and all(len(s) > 0 for s in shards)
    owned = np.concatenate(shards)
    assert len(np.unique(owned)) == len(owned)  # no sample held by two clients
    assert len(np.intersect1d(owned, simulator.validation_indices)) == 0
    assert simulator.clients.data_size.tolist() == [len(s) for s in shards]
    assert np.array_equal(started(tiny_config(num_clients=5, clients_per_round=2, val_fraction=0.2), seed=3)
                          .client_indices[0], shards[0])  # the seed fixes the partition


def test_candidates_are_sorted_online_clients_and_the_clock_sums_the_round_latencies():
    config = tiny_config(num_clients=6, clients_per_round=4, num_rounds=4, local_epochs=3)
    simulator = started(config, seed=5)
    clock_s = 0.0
    for t, pick in enumerate([[0, 2], [], [1], [0, 1, 2, 3]]):
        candidates = simulator.candidates
        assert len(candidates) == min(4, int(simulator.clients.online.sum()))
        assert np.all(np.diff(candidates) > 0) and simulator.clients.online[candidates].all()
        selected = candidates[[i for i in pick if i < len(candidates)]]
        expected = expected_round_latency_s(simulator, selected)
        outcome = play(simulator, selected)
        assert outcome.latency_s == pytest.approx(expected)
        assert outcome.selected.tolist() == outcome.completed.tolist() == selected.tolist()
        assert outcome.upload_mb == pytest.approx(len(selected) * simulator.model_size_mb)
        assert simulator.round == t + 1
        assert (simulator.clients.last_upload_round[selected] == t).all()
        clock_s += expected
        assert simulator.wall_clock_s == pytest.approx(clock_s)
        run_alone(simulator.begin_round_process())


def test_model_size_is_float32_parameters_in_megabytes():
    simulator = FederationSimulator(tiny_config())
    assert simulator.model_size_mb == pytest.approx(simulator.model_parameters * 4 / 1e6)


def test_a_deadline_before_anyone_finishes_drops_every_upload_and_charges_the_probing_it_waited_for():
    simulator = started(tiny_config(round_deadline_s=1e-3), seed=0)
    observed_probe_s = simulator.clients.probe_latency_hist_s[simulator.candidates, 0].copy()
    assert observed_probe_s.max() > 1e-3  # the decision used probes that arrived after the deadline
    before = {n: p.clone() for n, p in simulator.federation.global_params.items()}
    outcome = play(simulator, simulator.candidates)
    assert len(outcome.selected) == 3 and len(outcome.completed) == 0  # everyone selected, nobody on time
    assert outcome.latency_s == observed_probe_s.max() and outcome.upload_mb == 0.0
    assert outcome.reward_accuracy == outcome.previous_reward_accuracy
    assert all(torch.equal(before[n], p) for n, p in simulator.federation.global_params.items())
    assert (simulator.clients.last_upload_round == -1).all()


def test_diverged_uploads_are_excluded_and_the_model_stays_finite():
    simulator = started(tiny_config(lr=1e12), seed=0)  # 1e9 left one client finite on the 25 % validation split
    before = {n: p.clone() for n, p in simulator.federation.global_params.items()}
    outcome = play(simulator, simulator.candidates)
    assert outcome.completed.tolist() == [0, 1, 2] and len(outcome.usable) == 0 and len(outcome.kept) == 0
    assert outcome.reward_accuracy == outcome.previous_reward_accuracy  # no usable upload: the model is unchanged
    assert all(torch.equal(before[n], p) for n, p in simulator.federation.global_params.items())
    assert outcome.upload_mb == pytest.approx(3 * simulator.model_size_mb)  # they did upload
