import math

import numpy as np
import pytest

from fedenv.traces import SHIPPED_TRACES_DIR, TraceReplay, load_trace
from fedenv.traces.generate import dumps_trace, fit_power_law, generate_trace, read_device_table


def client(i=0, ms=10.0, up=(1000.0,), down=(2000.0,)):
    return {"client": i, "device": f"d{i}", "train_ms_per_sample": ms, "upload_kbps": list(up), "download_kbps": list(down)}


@pytest.mark.parametrize("field,value", [
    ("upload_kbps", 0.0), ("upload_kbps", -5.0), ("upload_kbps", float("nan")),
    ("download_kbps", 0.0), ("download_kbps", float("nan")), ("download_kbps", float("inf")),
])
def test_c7_bad_bandwidth_names_client_and_field(write_trace, field, value):
    bad = client(1)
    bad[field] = [100.0, value]
    path = write_trace([client(0), bad])
    with pytest.raises(ValueError, match=rf"client 1: {field}\[1\] must be a finite number > 0"):
        load_trace(path)


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), None, "fast"])
def test_c7_bad_compute_speed_names_client_and_field(write_trace, value):
    path = write_trace([client(0), client(7, ms=value)])
    with pytest.raises(ValueError, match="client 7: train_ms_per_sample must be a finite number > 0"):
        load_trace(path)


def test_latency_formulas_by_hand(write_trace):
    # reference model 1e6 MACs; trained model 5e5 MACs -> half the reference time per sample
    path = write_trace([client(0, ms=10.0, up=(1000.0, 500.0), down=(4000.0, 2000.0))])
    replay = TraceReplay(load_trace(path), 1, np.random.default_rng(0), model_macs=500_000, model_bits=2_000_000)
    assert replay.compute_s(np.array([0]), np.array([100]), 0) == pytest.approx([0.5])  # 5 ms x 100 / 1000
    up, down = replay.bandwidth_kbps(0)
    other_up, _ = replay.bandwidth_kbps(1)
    assert {float(up[0]), float(other_up[0])} == {1000.0, 500.0}  # the series is replayed cyclically
    assert replay.transfer_s(np.array([1000.0])) == pytest.approx([2.0])  # 2e6 bits / 1e6 bit/s
    assert replay.bandwidth_kbps(0)[0][0] == replay.bandwidth_kbps(2)[0][0]


def test_shipped_trace_is_reproduced_byte_for_byte():
    devices = read_device_table(SHIPPED_TRACES_DIR / "devices.csv")
    text = dumps_trace(generate_trace(devices, num_clients=100, num_rounds=100, seed=0))
    assert text == (SHIPPED_TRACES_DIR / "default.json").read_text()


def test_shipped_trace_loads_with_plausible_values():
    trace = load_trace()
    assert len(trace.clients) == 100
    for c in trace.clients:
        assert c.train_ms_per_sample > 0 and np.all(c.upload_kbps > 0) and np.all(c.download_kbps >= c.upload_kbps)


def test_power_law_fit_recovers_exponent():
    scores = np.array([100.0, 1000.0, 10000.0])
    a, b = fit_power_law(scores, 5000.0 * scores**-0.5)
    assert a == pytest.approx(5000.0) and b == pytest.approx(-0.5)
    assert math.isclose(a * 400.0**b, 250.0)
