import math

import numpy as np
import pytest

from fedenv.traces import SHIPPED_TRACES_DIR, generate, parse_trace
from fedenv.traces.generate import dumps_trace, fit_power_law, generate_trace, read_device_table


def test_shipped_trace_is_reproduced_byte_for_byte():
    devices = read_device_table(SHIPPED_TRACES_DIR / "devices.csv")
    text = dumps_trace(generate_trace(devices, num_clients=100, num_rounds=100, seed=0))
    assert text == (SHIPPED_TRACES_DIR / "default.json").read_text()


def test_power_law_fit_recovers_exponent():
    scores = np.array([100.0, 1000.0, 10000.0])
    a, b = fit_power_law(scores, 5000.0 * scores**-0.5)
    assert a == pytest.approx(5000.0) and b == pytest.approx(-0.5)
    assert math.isclose(a * 400.0**b, 250.0)


def test_generated_bandwidth_stays_in_the_physical_range_when_the_log_normal_overshoots(monkeypatch):
    # a median of 5 Gbit/s puts about half the draws above the 10 Gbit/s bound: they are clipped to it
    monkeypatch.setattr(generate, "DOWNLOAD_MEDIAN_KBPS", 5e6)
    devices = [{"device": "d", "train_ms_per_sample": 10.0, "time_cv": 0.05, "population_weight": 1.0}]
    trace = parse_trace(generate_trace(devices, num_clients=50, num_rounds=20, seed=1))
    download = np.concatenate([c.download_kbps for c in trace.clients])
    assert len(trace.clients) == 50 and download.min() >= 1.0 and download.max() == 1e7


@pytest.mark.parametrize("clients,rounds", [(0, 10), (5, 0)])
def test_generate_refuses_empty_traces(clients, rounds):
    devices = [{"device": "d", "train_ms_per_sample": 10.0, "time_cv": 0.05, "population_weight": 1.0}]
    with pytest.raises(ValueError, match=f"num_clients={clients} and num_rounds={rounds} must both be >= 1"):
        generate_trace(devices, clients, rounds)


def test_held_out_devices_are_the_table_rows_no_client_of_the_trace_has():
    table = [{"device": name, "train_ms_per_sample": 10.0, "time_cv": 0.05, "population_weight": weight}
             for name, weight in (("a", 1.0), ("b", 2.0), ("c", 0.0), ("d", 3.0))]
    trace = parse_trace(generate_trace(table[:2], num_clients=6, num_rounds=2, seed=0))
    assert {c.device for c in trace.clients} == {"a", "b"}  # both drawn (weights 1 : 2, six clients, seed 0)
    assert [row["device"] for row in generate.held_out_devices(table, trace)] == ["c", "d"]
    with pytest.raises(ValueError, match=r"every device of the table with population weight > 0 is in the trace "
                                         r"\(2 devices\)"):
        generate.held_out_devices(table[:3], trace)


def test_an_extended_trace_keeps_the_clients_it_extends_and_numbers_on_the_new_ones():
    table = [{"device": name, "train_ms_per_sample": 10.0, "time_cv": 0.05, "population_weight": 1.0}
             for name in ("a", "b")]
    base = generate_trace(table, num_clients=3, num_rounds=2, seed=0)
    extended = generate.extend_trace(base, table, num_clients=5, seed=1)
    drawn = generate_trace(table, num_clients=2, num_rounds=2, seed=1)["clients"]
    assert extended["clients"] == [*base["clients"], {**drawn[0], "client": 3}, {**drawn[1], "client": 4}]
    assert extended["generator"]["num_clients"] == 5 and len(parse_trace(extended).clients) == 5
    with pytest.raises(ValueError, match=r"num_clients=3: the trace to extend already holds 3 clients"):
        generate.extend_trace(base, table, num_clients=3, seed=1)
    with pytest.raises(ValueError, match=r"no generator header with num_rounds"):
        generate.extend_trace({k: v for k, v in base.items() if k != "generator"}, table, num_clients=5, seed=1)
