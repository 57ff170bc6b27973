from fedenv.traces import SHIPPED_TRACES_DIR, load_trace
from fedenv.traces import __main__ as traces_cli
from fedenv.traces.__main__ import main as traces_main


def test_generate_command_reproduces_the_shipped_trace(tmp_path):
    out = tmp_path / "default.json"
    assert traces_main(["generate", "--out", str(out)]) == 0
    assert out.read_bytes() == (SHIPPED_TRACES_DIR / "default.json").read_bytes()


def test_generate_command_makes_a_trace_of_more_clients_than_shipped(tmp_path):
    out = tmp_path / "large.json"
    assert traces_main(["generate", "--clients", "130", "--rounds", "4", "--out", str(out)]) == 0
    trace = load_trace(str(out))
    assert len(trace.clients) == 130 and len({c.client for c in trace.clients}) == 130
    assert all(len(c.upload_kbps) == len(c.download_kbps) == len(c.compute_factor) == 4 for c in trace.clients)


def test_a_bad_trace_is_an_error_message_and_exit_status_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    try:
        traces_main(["inspect", str(bad)])
    except SystemExit as exit_:
        assert exit_.code == 2
    else:
        raise AssertionError("inspect of a bad file did not exit")
    assert "not a JSON trace file" in capsys.readouterr().err


def test_generate_command_reproduces_the_shipped_held_out_trace_whose_devices_no_default_client_has(tmp_path):
    out = tmp_path / "held-out-devices.json"
    assert traces_main(["generate", "--held-out-from", "default", "--seed", "1", "--out", str(out)]) == 0
    assert out.read_bytes() == (SHIPPED_TRACES_DIR / "held-out-devices.json").read_bytes()
    held_out, trained = ({c.device for c in load_trace(name).clients} for name in (str(out), "default"))
    assert len(held_out) > 1 and not held_out & trained


def test_a_held_out_trace_is_written_beside_the_default_trace_never_over_it(tmp_path, monkeypatch):
    devices = str(SHIPPED_TRACES_DIR / "devices.csv")
    monkeypatch.setattr(traces_cli, "SHIPPED_TRACES_DIR", tmp_path)
    assert traces_main(["generate", "--held-out-from", "default", "--seed", "1", "--devices", devices]) == 0
    assert [path.name for path in tmp_path.iterdir()] == ["held-out-devices.json"]
    shipped = SHIPPED_TRACES_DIR / "held-out-devices.json"
    assert (tmp_path / "held-out-devices.json").read_bytes() == shipped.read_bytes()
