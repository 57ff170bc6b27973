import pickle
import re

import pytest

import fedenv
from fedenv.traces import load_trace
from fedenv.traces.__main__ import main as traces_main
from fedenv.traces.importers import import_csv, import_fedscale, safe_unpickle

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
    with pytest.raises(ValueError, match=r"refused to load tests\.test_traces_importers\.record_call"):
        safe_unpickle(pickle.dumps(Payload()))
    eval_payload = b"cbuiltins\neval\n(S'__import__(\"os\").getpid()'\ntR."
    with pytest.raises(ValueError, match=r"refused to load builtins\.eval"):
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
    with pytest.raises(ValueError, match=r"client 'a' \(clients\[0\]\): upload_kbps\[0\] must be a number "
                                         r"in \[1, 1e\+07\]"):
        import_csv(bad)
    bad.write_text("client,device,ms_per_sample,upload_kbps,download_kbps\na,phone,fast,1,2\n")
    with pytest.raises(ValueError, match="line 2, column ms_per_sample: not a number"):
        import_csv(bad)


CSV_HEADER = "client,device,ms_per_sample,upload_kbps,download_kbps\n"


def test_csv_listing_a_client_twice_is_refused_naming_the_id_and_lines(tmp_path):
    path = tmp_path / "twice.csv"
    path.write_text(CSV_HEADER + "0,phone,1.5,500,2000\n1,tablet,3,800,900\n0,phone,2,600,2100\n")
    with pytest.raises(ValueError, match=re.escape("client ids must be unique, found client '0' at line 2, line 4")):
        import_csv(path)


def test_csv_saved_with_a_byte_order_mark_imports(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_text(CSV_HEADER + "a,phone,1.5,500,2000\n", encoding="utf-8-sig")
    assert path.read_bytes()[:3] == b"\xef\xbb\xbf"
    [entry] = import_csv(path)["clients"]
    assert entry == {"client": "a", "device": "phone", "train_ms_per_sample": 1.5, "upload_kbps": [500.0],
                     "download_kbps": [2000.0]}


def test_fedscale_keys_that_name_the_same_client_are_refused(tmp_path):
    capacity = write_pickle(tmp_path / "capacity.pkl", {7: {"computation": 2.0, "communication": 4000.0},
                                                         "7": {"computation": 1.0, "communication": 900.0}})
    with pytest.raises(ValueError, match=re.escape("client ids must be unique, found client '7' at key 7, key '7'")):
        import_fedscale(capacity)


def test_fedscale_value_outside_the_physical_range_names_the_client(tmp_path):
    capacity = write_pickle(tmp_path / "capacity.pkl", {3: {"computation": 1e306, "communication": 4000.0}})
    with pytest.raises(ValueError, match=r"client 3 \(clients\[0\]\): train_ms_per_sample must be a number in"):
        import_fedscale(capacity)
