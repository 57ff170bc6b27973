import json
import pickle

import numpy as np
import pytest
import torch

import fedenv
from fedenv.traces import SHIPPED_TRACES_DIR, load_trace
from fedenv.traces.__main__ import main as traces_main
from fedenv.traces.importers import safe_unpickle

CALLS = []


def record_call(*args):
    CALLS.append(args)
    return "called"


class Payload:
    def __reduce__(self):
        return (record_call, ("pwned",))


def write_pickle(path, obj):
    path.write_bytes(pickle.dumps(obj))
    return str(path)


@pytest.fixture
def fedscale_files(tmp_path):
    capacity = {1: {"computation": 2.0, "communication": 4000.0}, 2: {"computation": 0.5, "communication": 1000.0}}
    behave = {
        1: {"duration": 900, "inactive": [500], "finish_time": 1000, "active": [0], "model": "Pixel"},
        2: {"duration": 900, "inactive": [300, 900], "finish_time": 1000, "active": [100, 600], "model": "Nexus"},
    }
    return write_pickle(tmp_path / "capacity.pkl", capacity), write_pickle(tmp_path / "behave.pkl", behave)


def test_fedscale_import_latencies_equal_fedscale_formulas(tmp_path, fedscale_files):
    capacity, behave = fedscale_files
    out = tmp_path / "fedscale.json"
    assert traces_main(["import", "--fedscale", capacity, "--behave", behave, "--out", str(out)]) == 0
    trace = load_trace(str(out))
    assert [c.device for c in trace.clients] == ["Pixel", "Nexus"]
    assert trace.clients[1].availability.online.tolist() == [[100.0, 300.0], [600.0, 900.0]]
    env = fedenv.parallel_env(num_clients=2, clients_per_round=2, num_rounds=1, trace=str(out), local_epochs=2)
    env.reset(seed=0)
    trace_of = {env.possible_agents[i]: int(env.simulator.replay.assignment[i]) for i in range(2)}
    model_bits = 32 * (784 * 200 + 200 + 200 * 10 + 10)
    online = {a: env.simulator.replay.online(0.0)[i] for i, a in enumerate(env.possible_agents)}
    candidates = [a for a in env.possible_agents if online[a]]
    # FedScale: compute = 3 x computation (ms per sample) x samples / 1000; transfer = bits / bandwidth
    by_hand = {}
    for i, agent in enumerate(env.possible_agents):
        computation, kbps = [(2.0, 4000.0), (0.5, 1000.0)][trace_of[agent]]
        n = env.simulator.clients.data_size[i]
        by_hand[agent] = (model_bits / (kbps * 1000) + 3 * computation * n / 1000,  # probe: download + 1 epoch
                          3 * computation * n / 1000 + model_bits / (kbps * 1000))   # rest: 1 epoch + upload
    _, _, _, _, infos = env.step({a: 1 for a in candidates})
    expected = max(by_hand[a][0] for a in candidates) + max(by_hand[a][1] for a in candidates)
    assert infos["client_0"]["round_latency_s"] == pytest.approx(expected)
    assert expected > 0.5  # the hand-worked numbers are not trivially small


def test_pickle_that_would_call_a_function_is_rejected_and_nothing_is_called(tmp_path):
    CALLS.clear()
    evil = write_pickle(tmp_path / "evil.pkl", {1: {"computation": Payload(), "communication": 1.0}})
    with pytest.raises(SystemExit):
        traces_main(["import", "--fedscale", evil, "--out", str(tmp_path / "x.json")])
    with pytest.raises(ValueError, match="refused to load tests.test_trace_tools.record_call"):
        safe_unpickle(pickle.dumps(Payload()))
    eval_payload = b"cbuiltins\neval\n(S'__import__(\"os\").getpid()'\ntR."
    with pytest.raises(ValueError, match="refused to load builtins.eval"):
        safe_unpickle(eval_payload)
    assert CALLS == []
    assert not (tmp_path / "x.json").exists()
    assert pickle.loads(pickle.dumps(Payload())) == "called" and CALLS == [("pwned",)]  # the payload is real


def test_csv_import_and_its_errors(tmp_path):
    good = tmp_path / "good.csv"
    good.write_text("client,device,ms_per_sample,upload_kbps,download_kbps\na,phone,1.5,500,2000\nb,tablet,3,800,900\n")
    out = tmp_path / "csv.json"
    assert traces_main(["import", "--csv", str(good), "--out", str(out), "--reference-model", "lenet5"]) == 0
    trace = load_trace(str(out))
    assert [c.client for c in trace.clients] == ["a", "b"] and trace.reference_macs == 416_520
    assert trace.clients[1].upload_kbps.tolist() == [800.0]
    bad = tmp_path / "bad.csv"
    bad.write_text("client,device,ms_per_sample,upload_kbps,download_kbps\na,phone,1.5,nan,2000\n")
    with pytest.raises(ValueError, match=r"client a: upload_kbps\[0\] must be a finite number > 0"):
        from fedenv.traces.importers import import_csv
        import_csv(bad)
    bad.write_text("client,device,ms_per_sample,upload_kbps,download_kbps\na,phone,fast,1,2\n")
    with pytest.raises(ValueError, match="line 2, column ms_per_sample: not a number"):
        import_csv(bad)


def base_client(i, **fields):
    return {"client": i, "device": "d", "train_ms_per_sample": 1.0, "upload_kbps": [1000.0],
            "download_kbps": [1000.0], **fields}


@pytest.mark.parametrize("fields,message", [
    ({"compute_factor": [1.0, 0.0]}, r"client 1: compute_factor\[1\] must be a finite number > 0"),
    ({"compute_factor": [float("nan")]}, r"client 1: compute_factor\[0\] must be a finite number > 0"),
    ({"availability": {"period_s": 0, "online": []}}, "client 1: availability.period_s must be a finite number > 0"),
    ({"availability": {"period_s": 10, "online": [[5, 2]]}}, r"client 1: availability.online\[0\] must be"),
    ({"availability": {"period_s": 10, "online": [[0, float("inf")]]}}, r"client 1: availability.online\[0\]"),
    ({"availability": {"period_s": 10, "online": [[-1, 2]]}}, r"client 1: availability.online\[0\]"),
    ({"upload_kbps": []}, "client 1: upload_kbps must be a non-empty list"),
])
def test_c7_every_field_is_validated(write_trace, fields, message):
    path = write_trace([base_client(0), base_client(1, **fields)])
    with pytest.raises(ValueError, match=message):
        load_trace(path)


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
    start_accuracy = infos["client_0"]["accuracy"]
    wait = env.simulator.replay.wait_s(0.0)
    assert all(o["action_mask"].tolist() == [1, 0] for o in observations.values())
    _, rewards, _, _, infos = env.step({"client_0": 1})
    assert infos["client_0"]["idle"] is True and infos["client_0"]["round_latency_s"] == pytest.approx(wait)
    assert infos["client_0"]["accuracy"] == start_accuracy and infos["client_0"]["comm_mb"] == 0.0
    assert rewards["client_0"] == pytest.approx(-env.config.latency_weight * wait)
    assert all(i["online"] and i["candidate"] for i in infos.values())  # the next round starts in the window


def test_deadline_drops_stragglers_caps_latency_and_aggregates_the_rest(write_trace):
    fast = dict(train_ms_per_sample=0.01, upload_kbps=[100_000.0], download_kbps=[100_000.0])
    slow = dict(train_ms_per_sample=0.01, upload_kbps=[200.0], download_kbps=[100_000.0])  # 25 s to upload
    trace = write_trace([base_client(0, **fast), base_client(1, **fast), base_client(2, **slow)],
                        macs=784 * 200 + 200 * 10)
    config = dict(num_clients=3, clients_per_round=3, num_rounds=1, trace=trace)
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
    assert infos[slow_agent]["comm_mb"] == pytest.approx(2 * with_deadline.simulator.model_size_mb)
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


def test_generate_command_reproduces_the_shipped_trace(tmp_path):
    out = tmp_path / "default.json"
    assert traces_main(["generate", "--out", str(out)]) == 0
    assert out.read_bytes() == (SHIPPED_TRACES_DIR / "default.json").read_bytes()


def test_inspect_and_plot_on_the_shipped_trace(tmp_path, capsys):
    assert traces_main(["inspect"]) == 0
    text = capsys.readouterr().out
    device_part = text[text.index("per device"):text.index("per client")]
    counts = [int(line.split()[-5]) for line in device_part.splitlines()[3:] if line.strip()]
    assert sum(counts) == 100
    assert len(text[text.index("per client"):].splitlines()) == 3 + 100
    assert traces_main(["plot", "--out", str(tmp_path / "t.png")]) == 0
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
    json.loads((SHIPPED_TRACES_DIR / "default.json").read_text())
