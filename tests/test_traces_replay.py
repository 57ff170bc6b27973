import numpy as np
import pytest
import torch

import fedenv
from fedenv.traces import ALWAYS_ONLINE, ClientTrace, DeviceTrace, TraceReplay, load_trace, reference_round_latency_s


def base_client(i, **fields):
    return {"client": i, "device": "d", "train_ms_per_sample": 1.0, "upload_kbps": [1000.0],
            "download_kbps": [1000.0], **fields}


def unchecked_trace(ms_per_sample: float) -> DeviceTrace:
    """A trace built without the loader, so no range check has run."""
    one = np.ones(1)
    clients = (ClientTrace("a", "", 1.0, one, one * 1000, one * 1000, ALWAYS_ONLINE),
               ClientTrace("b", "", ms_per_sample, one, one * 1000, one * 1000, ALWAYS_ONLINE))
    return DeviceTrace(clients, 1, "", {}, "<memory>")


def test_latency_formulas_by_hand(write_trace):
    # reference model 1e6 MACs; trained model 5e5 MACs -> half the reference time per sample
    path = write_trace([base_client(0, train_ms_per_sample=10.0, upload_kbps=[1000.0, 500.0],
                                    download_kbps=[4000.0, 2000.0])])
    replay = TraceReplay(load_trace(path), 1, np.random.default_rng(0), model_macs=500_000, model_bits=2_000_000)
    compute = replay.compute_s(np.array([0]), np.array([100]), 0)
    assert compute.dtype == np.float64 and compute == pytest.approx([0.5])  # 5 ms x 100 / 1000
    up, _ = replay.bandwidth_kbps(0)
    other_up, _ = replay.bandwidth_kbps(1)
    assert {float(up[0]), float(other_up[0])} == {1000.0, 500.0}  # the series is replayed cyclically
    assert replay.transfer_s(np.array([1000.0])) == pytest.approx([2.0])  # 2e6 bits / 1e6 bit/s
    assert replay.bandwidth_kbps(0)[0][0] == replay.bandwidth_kbps(2)[0][0]


def test_reference_round_latency_by_hand(write_trace):
    # model: 5e5 MACs (half the 1e6 reference), 2e6 bits, 100 samples; median bandwidth, factor 1
    path = write_trace([
        base_client(0, train_ms_per_sample=10.0, upload_kbps=[1000.0, 3000.0, 2000.0], download_kbps=[4000.0],
                    compute_factor=[2.0]),  # 0.5 s down + 0.5 s compute + 1 s up = 2 s
        base_client(1, train_ms_per_sample=20.0, upload_kbps=[1000.0], download_kbps=[2000.0]),  # 1 + 1 + 2 = 4 s
        base_client(2, train_ms_per_sample=2.0, upload_kbps=[4000.0], download_kbps=[8000.0]),  # .25 + .1 + .5
    ])
    latency = reference_round_latency_s(load_trace(path), model_macs=500_000, model_bits=2_000_000, samples=100)
    assert isinstance(latency, float) and latency == pytest.approx(2.0)


@pytest.mark.parametrize("name,value", [("model_macs", 0), ("model_bits", float("nan")), ("samples", -1.0),
                                        ("samples", float("inf")), ("model_macs", 10**400)])
def test_reference_round_latency_refuses_bad_arguments(name, value):
    arguments = {"model_macs": 1, "model_bits": 1, "samples": 1} | {name: value}
    with pytest.raises(ValueError, match=f"{name} must be a finite number > 0"):
        reference_round_latency_s(unchecked_trace(1.0), **arguments)


def test_a_latency_that_overflows_is_a_value_error_naming_the_client():
    trace = unchecked_trace(1e306)  # passes no loader: 1e306 ms x 1e10 MACs overflows float64
    with pytest.raises(ValueError, match=r"round latency of client 'b' \(trace position 1\) is not finite"):
        reference_round_latency_s(trace, model_macs=10**10, model_bits=1, samples=1)
    with pytest.raises(ValueError, match=r"compute time per sample of client 'b' \(trace position 1\) is not finite"):
        TraceReplay(trace, 2, np.random.default_rng(0), model_macs=10**10, model_bits=1)
    with pytest.raises(ValueError, match="model_bits must be a finite number > 0, got nan"):
        TraceReplay(unchecked_trace(1.0), 2, np.random.default_rng(0), model_macs=1, model_bits=float("nan"))
    replay = TraceReplay(unchecked_trace(1.0), 2, np.random.default_rng(0), model_macs=1, model_bits=1)
    position_of_b = list(replay.assignment).index(1)
    samples = np.ones(2)
    samples[position_of_b] = np.inf
    with pytest.raises(ValueError, match=r"compute time of client 'b' \(trace position 1\) is not finite \(inf s\)"):
        replay.compute_s(np.arange(2), samples, 0)
    with pytest.raises(ValueError, match=r"transfer time of link 1 \(0.0 kbit/s\) is not finite"):
        replay.transfer_s(np.array([1000.0, 0.0]))


def availability_trace(write_trace, windows):
    clients = [base_client(i, availability={"period_s": 1000.0, "online": w}) for i, w in enumerate(windows)]
    return write_trace(clients)


def test_offline_clients_are_never_candidates_and_fewer_online_are_used(write_trace):
    trace = availability_trace(write_trace, [[[0, 1000]], [[0, 1000]], [], [[0, 1000]]])
    env = fedenv.parallel_env(num_clients=4, clients_per_round=4, num_rounds=4, trace=trace)
    for seed in range(3):
        observations, infos = env.reset(seed=seed)
        never = env.possible_agents[list(env.simulator.replay.assignment).index(2)]
        while env.agents:
            assert observations[never]["action_mask"].tolist() == [1, 0] and not infos[never]["online"]
            assert sum(i["candidate"] for i in infos.values()) == 3  # fewer online than requested: all 3
            observations, _, _, _, infos = env.step({a: 1 for a in env.agents})
        assert infos[never]["selected"] is False


def test_round_with_nobody_online_only_advances_the_clock(write_trace):
    trace = availability_trace(write_trace, [[[400, 500]], [[400, 500]]])
    env = fedenv.parallel_env(num_clients=2, clients_per_round=2, num_rounds=3, trace=trace)
    for seed in range(20):
        observations, infos = env.reset(seed=seed)
        if not infos["client_0"]["online"]:
            break
    else:
        pytest.fail("no seed started outside the window")
    start_accuracy = infos["client_0"]["validation_accuracy"], infos["client_0"]["test_accuracy"]
    wait = env.simulator.replay.wait_s(0.0)
    assert all(o["action_mask"].tolist() == [1, 0] for o in observations.values())
    _, rewards, _, _, infos = env.step({"client_0": 1})
    assert infos["client_0"]["idle"] is True and infos["client_0"]["round_latency_s"] == pytest.approx(wait)
    assert (infos["client_0"]["validation_accuracy"], infos["client_0"]["test_accuracy"]) == start_accuracy
    assert infos["client_0"]["upload_mb"] == infos["client_0"]["download_mb"] == 0.0  # nobody was a candidate
    assert rewards["client_0"] == pytest.approx(-env.config.latency_weight * wait)
    assert all(i["online"] and i["candidate"] for i in infos.values())  # the next round starts in the window


def test_deadline_drops_stragglers_caps_latency_and_aggregates_the_rest(write_trace):
    fast = {"train_ms_per_sample": 0.01, "upload_kbps": [100_000.0], "download_kbps": [100_000.0]}
    slow = {"train_ms_per_sample": 0.01, "upload_kbps": [200.0], "download_kbps": [100_000.0]}  # 25 s to upload
    trace = write_trace([base_client(0, **fast), base_client(1, **fast), base_client(2, **slow)],
                        macs=784 * 200 + 200 * 10)
    config = {"num_clients": 3, "clients_per_round": 3, "num_rounds": 1, "trace": trace}
    with_deadline = fedenv.parallel_env(**config, round_deadline_s=5.0)
    without = fedenv.parallel_env(**config)
    with_deadline.reset(seed=4)
    without.reset(seed=4)
    slow_agent = with_deadline.possible_agents[list(with_deadline.simulator.replay.assignment).index(2)]
    _, _, _, _, infos = with_deadline.step({a: 1 for a in with_deadline.possible_agents})
    _, _, _, _, reference = without.step({a: 1 for a in without.possible_agents if a != slow_agent})
    assert infos[slow_agent]["dropped"] and infos[slow_agent]["selected"]
    assert not any(infos[a]["dropped"] for a in infos if a != slow_agent)
    assert infos[slow_agent]["round_latency_s"] == 5.0
    assert infos[slow_agent]["upload_mb"] == pytest.approx(2 * with_deadline.simulator.model_size_mb)
    assert infos[slow_agent]["download_mb"] == pytest.approx(3 * with_deadline.simulator.model_size_mb)  # 3 probed
    for name, tensor in with_deadline.simulator.federation.global_params.items():
        assert torch.allclose(tensor, without.simulator.federation.global_params[name]), name
    assert reference[slow_agent]["round_latency_s"] < 5.0


def test_static_mode_uses_median_bandwidth_every_round(write_trace):
    trace = write_trace([base_client(0, upload_kbps=[100.0, 300.0, 200.0], compute_factor=[1.0, 2.0])])
    replay_env = fedenv.parallel_env(num_clients=1, clients_per_round=1, num_rounds=1, trace=trace)
    static_env = fedenv.parallel_env(num_clients=1, clients_per_round=1, num_rounds=1, trace=trace, trace_mode="static")
    replay_env.reset(seed=0)
    static_env.reset(seed=0)
    assert {float(replay_env.simulator.replay.bandwidth_kbps(r)[0][0]) for r in range(3)} == {100.0, 200.0, 300.0}
    assert {float(static_env.simulator.replay.bandwidth_kbps(r)[0][0]) for r in range(3)} == {200.0}
    factors = {float(replay_env.simulator.replay.compute_s(np.array([0]), np.array([1000]), r)[0]) for r in range(2)}
    assert len(factors) == 2 and max(factors) == pytest.approx(2 * min(factors))


def test_profile_round_time_by_hand_and_its_shape_check(write_trace):
    # reference 1e6 MACs, model 5e5 MACs, 2e6 bits: median bandwidths, compute factor 1 whatever the series
    path = write_trace([base_client(0, train_ms_per_sample=10.0, upload_kbps=[1000.0, 3000.0, 2000.0],
                                    download_kbps=[4000.0], compute_factor=[3.0]),
                        base_client(1, train_ms_per_sample=20.0, upload_kbps=[500.0], download_kbps=[1000.0, 3000.0])])
    replay = TraceReplay(load_trace(path), 2, np.random.default_rng(0), model_macs=500_000, model_bits=2_000_000)
    by_trace_client = {0: 0.5 + 5.0 * 100 / 1000 + 1.0, 1: 1.0 + 10.0 * 100 / 1000 + 4.0}  # down + compute + up, s
    expected = [by_trace_client[int(t)] for t in replay.assignment]
    assert replay.profile_round_s(np.array([100, 100])) == pytest.approx(expected)
    with pytest.raises(ValueError, match=r"samples has shape \(3,\); one count per client, \(2,\)"):
        replay.profile_round_s(np.array([1, 2, 3]))
