import json

import pytest

from fedenv.traces import SHIPPED_TRACES_DIR, load_trace
from fedenv.traces import __main__ as traces_cli
from fedenv.traces.__main__ import main as traces_main
from fedenv.traces.generate import read_device_table


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


def test_generate_command_reproduces_the_shipped_trace_of_800_clients_whose_first_100_are_the_default_trace(
        tmp_path, monkeypatch):
    devices = str(SHIPPED_TRACES_DIR / "devices.csv")
    monkeypatch.setattr(traces_cli, "SHIPPED_TRACES_DIR", tmp_path)  # the default --out: beside, never over
    assert traces_main(["generate", "--extend-from", str(SHIPPED_TRACES_DIR / "default.json"), "--clients", "800",
                        "--seed", "2", "--devices", devices]) == 0
    assert [path.name for path in tmp_path.iterdir()] == ["default-800.json"]
    shipped = json.loads((SHIPPED_TRACES_DIR / "default-800.json").read_text())
    written = json.loads((tmp_path / "default-800.json").read_text())
    assert written["clients"] == shipped["clients"]  # the header names the path the test passed
    default = json.loads((SHIPPED_TRACES_DIR / "default.json").read_text())["clients"]
    assert shipped["clients"][:100] == default and [c["client"] for c in shipped["clients"]] == list(range(800))
    assert shipped["generator"]["command"] == ("python -m fedenv.traces generate --extend-from default "
                                               "--clients 800") and shipped["generator"]["seed"] == 2
    assert all(len(c["compute_factor"]) == 100 for c in shipped["clients"][100:])  # the default trace's rounds
    population = {row["device"] for row in read_device_table(devices) if row["population_weight"] > 0}
    assert {c.device for c in load_trace("default-800").clients} <= population


def test_extending_refuses_its_own_rounds_and_a_held_out_filter(capsys):
    for options in (["--rounds", "20"], ["--held-out-from", "default"]):
        with pytest.raises(SystemExit) as exit_:
            traces_main(["generate", "--extend-from", "default", "--clients", "800", *options])
        assert exit_.value.code == 2
    assert "--rounds 20 with --extend-from: the rounds are default's" in capsys.readouterr().err
    for options in (["--clients", "400"], ["--extend-from", "held-out-devices"]):  # never over the shipped trace
        with pytest.raises(SystemExit):
            traces_main(["generate", "--extend-from", "default", "--clients", "800", *options])
        assert "needs --out: the default, traces/default-800.json, is the default trace extended to 800" in (
            capsys.readouterr().err)
