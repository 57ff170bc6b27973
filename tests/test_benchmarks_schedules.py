"""benchmarks/schedules.py: the late-rounds schedule's choices, the grid parser, the rows' ratios, the --quick run."""

import csv
import json

import numpy as np
import pytest

from benchmarks import schedules
from fedenv.baselines import LateRoundsPolicy
from fedenv.config import EnvConfig


def observations(candidate_flags):
    return {f"client_{i}": {"observation": np.zeros(3, dtype=np.float32),
                            "action_mask": np.array([1, flag], dtype=np.int8)}
            for i, flag in enumerate(candidate_flags)}


def play(schedule, seed, rounds, flags=(1, 1, 0, 1)):
    schedule.reset(seed)
    return [schedule.act(observations(flags), {}) for _ in range(rounds)]


def test_k_random_candidates_then_every_candidate_in_the_last_rounds():
    actions = play(LateRoundsPolicy(k=1, last_rounds=2, num_rounds=5), seed=3, rounds=5)
    for t, round_actions in enumerate(actions, start=1):
        assert set(round_actions) == {"client_0", "client_1", "client_3"}  # candidates only
        assert sum(round_actions.values()) == (3 if t > 3 else 1)
    assert play(LateRoundsPolicy(1, 2, 5), 3, 5) == actions  # seeded per episode
    picks = {tuple(sorted(a for a, v in play(LateRoundsPolicy(1, 0, 5), s, 1)[0].items() if v))
             for s in range(20)}
    assert len(picks) == 3  # every candidate gets drawn over seeds


def test_bad_schedules_and_grids_are_refused_by_name():
    with pytest.raises(ValueError, match="last_rounds=6"):
        LateRoundsPolicy(1, 6, 5)
    with pytest.raises(ValueError, match="'2-3' is not k:L"):
        schedules.parse_grid("1:3,2-3")
    assert schedules.parse_grid(" 1:3, 2:5") == [(1, 3), (2, 5)]


def test_rows_hold_means_and_fedavgs_costs_over_the_schedules():
    def episode(ret, acc, lat, mb):
        return {"team_return": ret, "final_accuracy": acc, "total_latency_s": lat, "total_upload_mb": mb,
                "total_download_mb": 2 * mb, "total_traffic_mb": 3 * mb}

    per_episode = {"fedavg": [episode(0.2, 0.9, 600.0, 120.0), episode(0.4, 0.8, 400.0, 120.0)],
                   "s": [episode(0.5, 0.85, 200.0, 30.0), episode(0.3, 0.8, 300.0, 50.0)]}
    fedavg, s = schedules.schedule_rows(per_episode)
    assert (fedavg["latency_gain"], fedavg["upload_gain"]) == (1.0, 1.0)
    assert s["team_return"] == pytest.approx(0.4) and s["final_accuracy"] == pytest.approx(0.825)
    assert s["latency_gain"] == pytest.approx(500 / 250) and s["upload_gain"] == pytest.approx(120 / 40)
    assert s["total_download_mb"] == pytest.approx(80.0) and s["total_traffic_mb"] == pytest.approx(120.0)


def test_quick_run_writes_a_row_per_policy_from_its_episodes(tmp_path):
    assert schedules.main(["--quick", "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader((tmp_path / "table.csv").open()))
    episodes = json.loads((tmp_path / "episodes.json").read_text())
    assert [row["policy"] for row in rows] == ["fedavg", "1 random, all last 1"]
    for row in rows:
        uploads = [e["total_upload_mb"] for e in episodes[row["policy"]]]
        assert float(row["total_upload_mb"]) == pytest.approx(np.mean(uploads))
    assert float(rows[1]["total_upload_mb"]) < float(rows[0]["total_upload_mb"])  # 1 of 3 in round 1, all in round 2


def test_weight_scale_charges_each_episode_that_share_of_its_latency_and_upload(tmp_path):
    assert schedules.main(["--quick", "--out", str(tmp_path / "x1")]) == 0
    assert schedules.main(["--quick", "--weight-scale", "0.5", "--out", str(tmp_path / "x05")]) == 0
    full = json.loads((tmp_path / "x1" / "episodes.json").read_text())
    half = json.loads((tmp_path / "x05" / "episodes.json").read_text())
    w2, w3 = EnvConfig().latency_weight, EnvConfig().comm_weight
    for policy, episodes in full.items():
        for at_x1, at_half in zip(episodes, half[policy], strict=True):
            assert at_half["final_accuracy"] == at_x1["final_accuracy"]
            cost = w2 * at_x1["total_latency_s"] + w3 * at_x1["total_upload_mb"]  # the default upload-only term
            assert at_half["team_return"] == pytest.approx(at_x1["team_return"] + cost / 2, abs=1e-9)
    with pytest.raises(SystemExit):
        schedules.main(["--quick", "--weight-scale", "0", "--out", str(tmp_path / "x0")])


def test_probing_charges_the_probing_epoch_and_trains_the_same_models(tmp_path):
    assert schedules.main(["--quick", "--out", str(tmp_path / "off")]) == 0
    assert schedules.main(["--quick", "--probing", "--out", str(tmp_path / "on")]) == 0
    off = json.loads((tmp_path / "off" / "episodes.json").read_text())
    on = json.loads((tmp_path / "on" / "episodes.json").read_text())
    for policy, episodes in off.items():
        for without, with_probing in zip(episodes, on[policy], strict=True):
            assert with_probing["probing"] and not without["probing"]
            assert with_probing["final_accuracy"] == without["final_accuracy"]
            assert with_probing["total_upload_mb"] == without["total_upload_mb"]
            if policy == "fedavg":  # every candidate trains: the probing epoch is its first local epoch
                assert with_probing["total_latency_s"] == pytest.approx(without["total_latency_s"])
                assert with_probing["total_download_mb"] == pytest.approx(without["total_download_mb"])
            else:  # round 1: the two candidates left out still download and train one epoch
                assert with_probing["total_latency_s"] > without["total_latency_s"]
                assert with_probing["total_download_mb"] > without["total_download_mb"]
                assert with_probing["team_return"] < without["team_return"]
