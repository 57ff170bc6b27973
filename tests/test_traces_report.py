from fedenv.traces import load_trace
from fedenv.traces.report import client_rows, plot_trace, summary_text


def test_summary_counts_every_client_once_per_device_and_per_client():
    trace = load_trace()
    text = summary_text(trace)
    device_part = text[text.index("per device"):text.index("per client")]
    counts = [int(line.split()[-5]) for line in device_part.splitlines()[3:] if line.strip()]
    assert sum(counts) == len(trace.clients) == 100
    assert len(text[text.index("per client"):].splitlines()) == 3 + 100


def test_client_rows_hold_the_medians_of_the_series(write_trace):
    path = write_trace([{"client": 4, "device": "p", "train_ms_per_sample": 2.0, "upload_kbps": [10.0, 30.0, 20.0],
                         "download_kbps": [100.0, 400.0], "availability": {"period_s": 10.0, "online": [[0, 4]]}}])
    assert client_rows(load_trace(path)) == [["4", "p", 2.0, 20.0, 250.0, 0.4]]


def test_plot_writes_a_png(tmp_path):
    plot_trace(load_trace(), tmp_path / "t.png")
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
