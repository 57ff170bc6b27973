"""Rounds without probing (``EnvConfig.probing=False``): who trains, what the round costs, what clients report."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import fedenv
from fedenv.engine import make_schedule, train_together
from fedenv.simulator import FederationSimulator, samples_per_epoch

TINY = {"num_clients": 4, "clients_per_round": 4, "num_rounds": 2, "device": "cpu"}


def drive(process):
    """Run an env process to its end, serving its requests alone; returns (value, requests, results)."""
    requests, results = [], []
    try:
        request = next(process)
        while True:
            requests.append(request)
            results.append(train_together([request])[0])
            request = process.send(results[-1])
    except StopIteration as stop:
        return stop.value, requests, results


def client(i, train_ms_per_sample, upload_kbps, download_kbps):
    return {"client": i, "device": "d", "train_ms_per_sample": train_ms_per_sample, "upload_kbps": [upload_kbps],
            "download_kbps": [download_kbps]}


@pytest.fixture
def two_client_trace(write_trace):
    """Two always-online clients with one bandwidth value each; the reference model is the env's MLP, so
    a sample costs the trace's ms per sample."""
    macs = FederationSimulator(fedenv.EnvConfig(num_clients=2, clients_per_round=2, device="cpu")).model_macs
    return write_trace([client(0, 2.0, 1000.0, 2000.0), client(1, 1.0, 500.0, 4000.0)], macs=macs)


def hand_worked_round_s(env, epochs):
    """Each client's whole round: download + E x samples x ms/sample + upload, from the trace above."""
    bits, n = env.simulator.model_bits, env.simulator.clients.data_size  # MLP: no BatchNorm, whole epochs
    return np.array([bits / 2e6 + epochs * n[0] * 2.0 / 1000 + bits / 1e6,
                     bits / 4e6 + epochs * n[1] * 1.0 / 1000 + bits / 5e5])


def test_round_latency_is_the_slowest_selected_clients_whole_round(two_client_trace):
    env = fedenv.parallel_env(num_clients=2, clients_per_round=2, local_epochs=3, trace=two_client_trace,
                              probing=False, device="cpu")
    env.reset(seed=0)
    whole = hand_worked_round_s(env, 3)
    _, _, _, _, infos = env.step({"client_0": 1, "client_1": 1})
    assert infos["client_0"]["round_latency_s"] == pytest.approx(whole.max())
    _, _, _, _, infos = env.step({"client_1": 1})  # the faster client alone is not charged for the other
    assert infos["client_0"]["round_latency_s"] == pytest.approx(whole[1])
    assert infos["client_0"]["wall_clock_s"] == pytest.approx(whole.max() + whole[1])


def test_the_deadline_applies_to_the_whole_round(two_client_trace):
    env = fedenv.parallel_env(num_clients=2, clients_per_round=2, local_epochs=2, trace=two_client_trace,
                              probing=False, device="cpu")
    env.reset(seed=0)
    whole = hand_worked_round_s(env, 2)
    env = fedenv.parallel_env(env.config, round_deadline_s=float(whole.mean()))
    env.reset(seed=0)
    _, _, _, _, infos = env.step({"client_0": 1, "client_1": 1})
    slow, fast = (f"client_{i}" for i in np.argsort(-whole))
    assert infos[slow]["dropped"] and not infos[fast]["dropped"] and infos[fast]["kept"]
    assert infos[fast]["round_latency_s"] == pytest.approx(whole.mean())
    assert infos[slow]["probe_loss"] == 0.0  # a straggler reports nothing


@pytest.mark.parametrize("epochs", [1, 3])
def test_only_the_selected_clients_train_and_only_after_the_decision(epochs):
    env = fedenv.parallel_env(**TINY, local_epochs=epochs, probing=False)
    (observations, _), requests, _ = drive(env.reset_process(seed=4))
    assert requests == []
    assert all(o["observation"][0] == 0.0 for o in observations.values())  # nobody has reported a loss yet
    _, requests, _ = drive(env.step_process({"client_1": 1, "client_3": 1}))
    assert [r.clients.tolist() for r in requests] == [[1, 3]] * min(epochs, 2)
    assert [r.epochs for r in requests] == [1, epochs - 1][:min(epochs, 2)]  # the first epoch is reported
    _, requests, _ = drive(env.step_process({}))
    assert requests == []


def test_with_probing_every_candidate_trains_before_the_decision():
    env = fedenv.parallel_env(**TINY, probing=True)
    _, requests, _ = drive(env.reset_process(seed=4))
    assert [(r.clients.tolist(), r.epochs) for r in requests] == [([0, 1, 2, 3], 1)]


def test_a_selected_client_trains_the_same_model_as_with_probing_and_reports_its_first_epoch():
    runs = {}
    for probing in (True, False):
        env = fedenv.parallel_env(**TINY, local_epochs=3, probing=probing)
        drive(env.reset_process(seed=5))
        probed_loss = env.simulator.clients.probe_loss.copy()
        _, _, results = drive(env.step_process({"client_0": 1, "client_2": 1}))
        runs[probing] = env, probed_loss, results
    with_probing, without = runs[True], runs[False]
    final_with = with_probing[2][0]  # the remaining epochs of clients 0 and 2 (then the next round's probing)
    final_without = without[2][-1]
    for name, value in final_with.params.items():
        torch.testing.assert_close(final_without.params[name], value, rtol=1e-5, atol=1e-6)
    for name, value in with_probing[0].simulator.federation.global_params.items():
        torch.testing.assert_close(without[0].simulator.federation.global_params[name], value, rtol=1e-5, atol=1e-6)
    clients_with, clients_without = with_probing[0].simulator.clients, without[0].simulator.clients
    np.testing.assert_allclose(clients_without.probe_loss[[0, 2]], with_probing[1][[0, 2]], rtol=1e-5)
    assert clients_without.probe_loss[[1, 3]].tolist() == [0.0, 0.0]  # not selected: never took part
    np.testing.assert_allclose(clients_without.probe_latency_hist_s[[0, 2], 0],
                               clients_with.probe_latency_hist_s[[0, 2], 1])  # [0] is the next round's probe
    assert clients_without.probe_latency_hist_s[[1, 3], 0].tolist() == [0.0, 0.0]


def test_selecting_everyone_gives_the_same_accuracy_for_less_latency(write_trace):
    # client 0 downloads slowly and uploads fast, client 1 the reverse: with probing the server waits for
    # the slower download and then the slower upload, without it for the slower whole round only
    trace = write_trace([client(0, 0.01, 1e6, 100.0), client(1, 0.01, 100.0, 1e6)])
    curves = {}
    for probing in (True, False):
        env = fedenv.parallel_env(num_clients=2, clients_per_round=2, num_rounds=3, trace=trace, probing=probing,
                                  device="cpu")
        env.reset(seed=6)
        accuracy, latency = [], []
        while env.agents:
            _, _, _, _, infos = env.step({agent: 1 for agent in env.agents})
            accuracy.append((infos["client_0"]["validation_accuracy"], infos["client_0"]["test_accuracy"]))
            latency.append(infos["client_0"]["round_latency_s"])
        curves[probing] = np.array(accuracy), np.array(latency)
    np.testing.assert_allclose(curves[False][0], curves[True][0], atol=1e-9)
    transfer_s = env.simulator.model_bits / 1e5  # one model over 100 kbit/s
    assert np.all(curves[True][1] > 2 * transfer_s) and np.all(curves[False][1] < 1.01 * transfer_s)


def test_samples_per_epoch_by_hand_and_as_the_minibatch_schedule_counts():
    sizes = np.array([5, 32, 70])
    assert samples_per_epoch(sizes, 32, drop_last=False).tolist() == [5, 32, 70]
    assert samples_per_epoch(sizes, 32, drop_last=True).tolist() == [0, 32, 64]
    for drop_last in (False, True):
        schedule = make_schedule([np.arange(n) for n in sizes], 1, 32, [torch.Generator() for _ in sizes], drop_last)
        counted = schedule.valid.sum(dim=(0, 2)).tolist()
        assert counted == samples_per_epoch(sizes, 32, drop_last).tolist()
