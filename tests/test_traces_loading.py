import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedenv.traces import PHYSICAL_RANGES, TraceReplay, load_trace, parse_trace, reference_round_latency_s
from tests.helpers import trace_document


def client(i=0, ms=10.0, up=(1000.0,), down=(2000.0,), **fields):
    return {"client": i, "device": f"d{i}", "train_ms_per_sample": ms, "upload_kbps": list(up),
            "download_kbps": list(down), **fields}


def range_message(where: str, field: str, text_range: str, value) -> str:
    return re.escape(f"{where}: {field} must be a number in {text_range}, got {value!r}")


@pytest.mark.parametrize("field,value", [
    ("upload_kbps", 0.0), ("upload_kbps", -5.0), ("upload_kbps", float("nan")), ("upload_kbps", 0.5),
    ("upload_kbps", 1e-306), ("upload_kbps", 2e7), ("download_kbps", 0.0), ("download_kbps", float("nan")),
    ("download_kbps", float("inf")), ("download_kbps", 5e-324),
])
def test_bandwidth_outside_1_kbps_to_10_gbps_names_client_position_field_and_range(write_trace, field, value):
    bad = client(7)
    bad[field] = [100.0, value]
    path = write_trace([client(0), bad])
    with pytest.raises(ValueError,
                       match=range_message("client 7 (clients[1])", f"{field}[1]", "[1, 1e+07] kbit/s", value)):
        load_trace(path)


@pytest.mark.parametrize("value", [0.0, -1.0, float("nan"), None, "fast", True, 1e306, 1e7, 5e-7])
def test_training_time_outside_1e_6_to_1e6_ms_is_refused(write_trace, value):
    path = write_trace([client(0), client(7, ms=value)])
    with pytest.raises(ValueError, match=range_message("client 7 (clients[1])", "train_ms_per_sample",
                                                       "[1e-06, 1e+06] ms", value)):
        load_trace(path)


@pytest.mark.parametrize("fields,message", [
    ({"compute_factor": [1.0, 0.0]}, r"compute_factor\[1\] must be a number in \[0.01, 100\], got 0.0"),
    ({"compute_factor": [float("nan")]}, r"compute_factor\[0\] must be a number in \[0.01, 100\], got nan"),
    ({"compute_factor": [1e3]}, r"compute_factor\[0\] must be a number in \[0.01, 100\], got 1000.0"),
    ({"availability": {"period_s": 0, "online": []}}, r"availability.period_s must be a number in \[1, 1e\+08\] s"),
    ({"availability": {"period_s": 1e300, "online": []}}, r"availability.period_s must be a number in \[1, 1e\+08\]"),
    ({"availability": {"period_s": 10, "online": [[5, 2]]}}, r"availability.online\[0\] must be"),
    ({"availability": {"period_s": 10, "online": [[0, float("inf")]]}}, r"availability.online\[0\]"),
    ({"availability": {"period_s": 10, "online": [[-1, 2]]}}, r"availability.online\[0\]"),
    ({"availability": {"period_s": 10, "online": [[0, 11]]}}, r"availability.online\[0\]"),
    ({"upload_kbps": []}, "upload_kbps must be a non-empty list of numbers in"),
])
def test_every_field_is_validated_and_the_client_is_named(write_trace, fields, message):
    path = write_trace([client(0), client(1, **fields)])
    with pytest.raises(ValueError, match=r"client 1 \(clients\[1\]\): " + message):
        load_trace(path)


@pytest.mark.parametrize("macs", [0, -3, 1.5, True, 10**16, None])
def test_reference_macs_must_be_an_integer_in_range(write_trace, macs):
    with pytest.raises(ValueError, match=r"reference_model.macs_per_sample must be an integer in \[1, 1e\+15\]"):
        load_trace(write_trace([client(0)], macs=macs))


def test_duplicate_client_ids_in_a_trace_document_are_refused():
    document = trace_document([client(0), client(1), client("0")])
    with pytest.raises(ValueError,
                       match=re.escape("client ids must be unique, found client '0' at clients[0], clients[2]")):
        parse_trace(document)
    assert [c.client for c in parse_trace(trace_document([client(0), client("00")])).clients] == ["0", "00"]


def test_range_boundaries_are_accepted_and_give_finite_latencies_at_the_largest_model():
    lowest = client(0, ms=1e-6, up=(1.0,), down=(1.0,), compute_factor=[0.01, 100.0],
                    availability={"period_s": 1e8, "online": [[0.0, 1e8]]})
    highest = client(1, ms=1e6, up=(1e7,), down=(1e7,), compute_factor=[100.0],
                     availability={"period_s": 1.0, "online": [[0.5, 1.0]]})
    trace = parse_trace(trace_document([lowest, highest], macs=1))
    replay = TraceReplay(trace, 2, np.random.default_rng(0), model_macs=10**10, model_bits=10**10)
    slowest = replay.compute_s(np.array([0, 1]), np.array([1e6, 1e6]), 0)
    assert np.all(np.isfinite(slowest)) and slowest.max() == pytest.approx(1e6 * 100 * 1e10 * 1e6 / 1000)
    assert replay.transfer_s(np.array([1.0]))[0] == pytest.approx(1e7)  # 1e10 bits over 1 kbit/s


def test_the_physical_ranges_cover_the_shipped_trace():
    trace = load_trace()
    low, high, _ = PHYSICAL_RANGES["download_kbps"]
    assert len(trace.clients) == 100
    for c in trace.clients:
        assert np.all(c.download_kbps >= c.upload_kbps) and low <= c.upload_kbps.min() and c.download_kbps.max() <= high


SPECIAL = [0.0, -0.0, -1.0, 5e-324, 1e-306, 1e-6, 0.01, 1.0, 100.0, 1e6, 1e7, 1e8, 1e306, math.nan, math.inf, -math.inf]
ANY_NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True), st.sampled_from(SPECIAL),
                       st.integers(min_value=-10, max_value=10**9))


def in_range(field: str):
    low, high, _ = PHYSICAL_RANGES[field]
    return st.floats(min_value=low, max_value=high)


@st.composite
def fuzzed_client(draw, client_id: int) -> dict:
    """A valid client entry, then (half the time) one value replaced by any number at all."""
    entry = {"client": client_id, "train_ms_per_sample": draw(in_range("train_ms_per_sample"))}
    for field in ("upload_kbps", "download_kbps", "compute_factor"):
        entry[field] = draw(st.lists(in_range(field), min_size=1, max_size=3))
    if draw(st.booleans()):
        period = draw(in_range("availability.period_s"))
        bounds = draw(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=2))
        entry["availability"] = {"period_s": period, "online": [sorted(b * period for b in bounds)]}
    if draw(st.booleans()):
        target = draw(st.sampled_from(["train_ms_per_sample", "upload_kbps", "download_kbps", "compute_factor"]
                                      + ["availability"] * ("availability" in entry)))
        if target == "train_ms_per_sample":
            entry[target] = draw(ANY_NUMBER)
        elif target == "availability" and draw(st.booleans()):
            entry[target]["period_s"] = draw(ANY_NUMBER)
        elif target == "availability":
            entry[target]["online"][0][draw(st.integers(0, 1))] = draw(ANY_NUMBER)
        else:
            entry[target][draw(st.integers(0, len(entry[target]) - 1))] = draw(ANY_NUMBER)
    return entry


FUZZED_CLIENTS = st.integers(1, 3).flatmap(lambda n: st.tuples(*[fuzzed_client(i) for i in range(n)]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clients=FUZZED_CLIENTS, reference_macs=st.one_of(st.integers(1, 10**15), st.integers(-2, 10**16)),
       model_macs=st.integers(1, 10**10), model_bits=st.integers(1, 10**10), samples=st.floats(1.0, 1e6),
       round_index=st.integers(0, 10))
def test_fuzz_the_loader_refuses_or_yields_finite_latencies(clients, reference_macs, model_macs, model_bits, samples,
                                                             round_index):
    try:
        trace = parse_trace(trace_document(list(clients), reference_macs))
    except ValueError:
        return
    replay = TraceReplay(trace, len(trace.clients), np.random.default_rng(0), model_macs, model_bits)
    everyone = np.arange(len(trace.clients))
    upload, download = replay.bandwidth_kbps(round_index)
    latency = (replay.transfer_s(download) + replay.compute_s(everyone, np.full(len(everyone), samples), round_index)
               + replay.transfer_s(upload))
    assert np.all(np.isfinite(latency)) and np.all(latency > 0)
    reference = reference_round_latency_s(trace, model_macs, model_bits, samples)
    assert math.isfinite(reference) and reference > 0
    assert not math.isnan(replay.wait_s(float(round_index)))
