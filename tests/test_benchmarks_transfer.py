"""benchmarks/transfer.py: the device split, and the --quick study's table recomputed from its episodes."""

import csv
import json
import math

import pytest

from benchmarks import transfer
from benchmarks.common import return_ratio
from fedenv.traces import load_trace


@pytest.fixture(scope="module")
def quick_study(tmp_path_factory):
    """Run the --quick study once; its table rows and per-episode results."""
    out = tmp_path_factory.mktemp("transfer")
    assert transfer.main(["--quick", "--out", str(out)]) == 0
    rows = list(csv.DictReader((out / "table.csv").open()))
    return out, rows, json.loads((out / "episodes.json").read_text())


def mean(values):
    return sum(values) / len(values)


def test_split_devices_alternates_ranks_of_training_time_and_drops_unseen_devices():
    devices = [{"device": name, "train_ms_per_sample": ms, "population_weight": w}
               for name, ms, w in [("a", 5.0, 1.0), ("b", 1.0, 2.0), ("c", 3.0, 0.0), ("d", 2.0, 1.0), ("e", 9.0, 4.0)]]
    train, held_out = transfer.split_devices(devices)
    assert [d["device"] for d in train] == ["b", "a"]      # ranks 0 and 2 of b(1) d(2) a(5) e(9)
    assert [d["device"] for d in held_out] == ["d", "e"]
    with pytest.raises(ValueError, match="device types"):
        transfer.split_devices(devices[:1])


def test_return_ratio_is_nan_unless_the_reference_is_positive():
    assert return_ratio(3.0, 2.0) == 1.5
    assert math.isnan(return_ratio(3.0, 0.0)) and math.isnan(return_ratio(3.0, -1.0))


@pytest.mark.slow
def test_quick_study_has_every_row_and_its_ratios_follow_from_the_episodes(quick_study):
    _, rows, episodes = quick_study
    assert [row["setting"] for row in rows] == [
        "trained setting", "clients x4", "clients x8", "local epochs 1", "held-out devices",
        "lenet5/mnist5k zero-shot", "lenet5/mnist5k fine-tuned 1 episodes", "lenet5/mnist5k from scratch"]
    assert [int(row["num_clients"]) for row in rows[:3]] == [3, 12, 24]
    assert set(episodes) == {row["setting"] for row in rows}
    for row in rows:
        per_policy = episodes[row["setting"]]
        assert set(per_policy) == {"vdn", "fedavg", "random", "fastest"}
        returns = {name: mean([e["team_return"] for e in eps]) for name, eps in per_policy.items()}
        best = max((name for name in returns if name != "vdn"), key=returns.get)
        assert row["best_fixed"] == best
        assert float(row["learned_team_return"]) == pytest.approx(returns["vdn"])
        assert float(row["fedavg_final_accuracy"]) == pytest.approx(
            mean([e["final_accuracy"] for e in per_policy["fedavg"]]))
        expected = returns["vdn"] / returns[best] if returns[best] > 0 else math.nan
        assert float(row["ratio"]) == pytest.approx(expected, nan_ok=True)
    scratch = mean([e["team_return"] for e in episodes["lenet5/mnist5k from scratch"]["vdn"]])
    zero_shot = float(rows[5]["learned_team_return"])
    assert float(rows[5]["vs_scratch"]) == pytest.approx(zero_shot / scratch if scratch > 0 else math.nan, nan_ok=True)


@pytest.mark.slow
def test_quick_study_traces_hold_disjoint_device_types(quick_study):
    out, _, _ = quick_study
    train = load_trace(str(out / "traces" / "devices_train.json"))
    held_out = load_trace(str(out / "traces" / "devices_held_out.json"))
    assert len(train.clients) == len(held_out.clients) == 24
    assert not {c.device for c in train.clients} & {c.device for c in held_out.clients}


def test_scaled_clients_keeps_the_candidates_and_each_clients_data_size():
    from fedenv.config import EnvConfig

    base = EnvConfig(num_clients=10, clients_per_round=10, train_samples=4500)
    scaled = transfer.scaled_clients(base, 8)
    assert (scaled.num_clients, scaled.clients_per_round, scaled.train_samples) == (80, 10, 36000)
    assert transfer.scaled_clients(EnvConfig(train_samples=None), 4).train_samples is None


@pytest.mark.slow
def test_cross_task_rows_alone_equal_the_full_studys_last_three_rows(quick_study, tmp_path):
    _, rows, episodes = quick_study
    assert transfer.main(["--quick", "--rows", "cross-task", "--out", str(tmp_path)]) == 0
    cross_rows = list(csv.DictReader((tmp_path / "table.csv").open()))
    assert cross_rows == rows[-3:]
    assert json.loads((tmp_path / "episodes.json").read_text()) == {row["setting"]: episodes[row["setting"]]
                                                                    for row in rows[-3:]}
