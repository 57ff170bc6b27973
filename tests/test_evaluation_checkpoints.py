"""evaluate.py with several checkpoints (training runs pooled as one policy) and with flags that change
the training environment (transfer reporting)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import evaluate
from agents.checkpoint import save_checkpoint
from agents.config import VDNConfig
from agents.trainer import Trainer
from tests.helpers import tiny_config


def write_checkpoint(path, seed, **overrides):
    """An untrained checkpoint of run seed ``seed`` on the tiny federation (its Q-network differs by seed)."""
    save_checkpoint(path, Trainer(tiny_config(**overrides), VDNConfig(), episodes=1, seed=seed).checkpoint())
    return str(path)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("runs")
    return [write_checkpoint(folder / f"seed{seed}.pt", seed) for seed in (0, 1)]


def test_several_checkpoints_are_pooled_and_kept_per_checkpoint(runs, tmp_path, capsys):
    pattern = str(runs[0]).replace("seed0", "seed*")
    assert evaluate.main(["--checkpoint", pattern, "--policies", "fedavg,vdn", "--seeds", "3", "4",
                          "--no-progress", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "vdn: 2 checkpoints" in printed and "(runs +- " in printed
    assert "transfer: evaluated in the environment it was trained in" in printed
    document = json.loads((tmp_path / "results.json").read_text())
    vdn = next(row for row in document["summary"] if row["policy"] == "vdn")
    assert vdn["checkpoints"] == 2 and vdn["episodes"] == 4
    per_run = document["summary_per_checkpoint"]
    assert [row["checkpoint"] for row in per_run] == runs and all(row["episodes"] == 2 for row in per_run)
    means = [row["team_return_mean"] for row in per_run]
    assert vdn["team_return_mean"] == pytest.approx(sum(means) / 2)
    assert vdn["team_return_runs_std"] == pytest.approx(abs(means[0] - means[1]) / 2)
    assert document["transfer"] == {"trained_on": {}, "evaluated_on": {}}


def test_flags_that_change_the_training_environment_are_reported(runs, tmp_path, capsys):
    assert evaluate.main(["--checkpoint", runs[0], "--policies", "vdn", "--seeds", "3", "--num-rounds", "3",
                          "--no-progress", "--out", str(tmp_path)]) == 0
    assert "transfer: trained on num_rounds=2; evaluated on num_rounds=3" in capsys.readouterr().out
    document = json.loads((tmp_path / "results.json").read_text())
    assert document["transfer"] == {"trained_on": {"num_rounds": 2}, "evaluated_on": {"num_rounds": 3}}


def test_checkpoints_of_different_environments_are_a_usage_error(runs, tmp_path, capsys):
    other = write_checkpoint(tmp_path / "other.pt", 0, num_rounds=3)
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main(["--checkpoint", runs[0], other, "--no-progress", "--out", str(tmp_path)])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.splitlines()
    assert len(error) == 3 and "trained in different environments (num_rounds=2 vs 3)" in error[1]
    with pytest.raises(SystemExit):
        evaluate.main(["--checkpoint", str(tmp_path / "none*.pt")])
    assert "matches no file" in capsys.readouterr().err


def test_evaluate_prints_and_writes_the_paired_intervals_of_the_pooled_runs(runs, tmp_path, capsys):
    import csv

    assert evaluate.main(["--checkpoint", *runs, "--policies", "fedavg,random,vdn", "--seeds", "3", "4", "5",
                          "--no-progress", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "paired difference to fedavg (FedAvg)" in printed and "vdn: 2 runs" in printed
    document = json.loads((tmp_path / "results.json").read_text())
    references = document["references"]
    assert references["fedavg"] == "fedavg" and references["best_fixed"] in ("fedavg", "random")
    rows = {(r["role"], r["policy"], r["metric"]): r for r in document["paired_differences"]}
    vdn = rows[("fedavg", "vdn", "team_return")]
    assert (vdn["seeds"], vdn["runs"], vdn["confidence_level"]) == (3, 2, 0.95)
    with open(tmp_path / "results.csv") as handle:
        table = list(csv.DictReader(handle))
    fedavg = {row["seed"]: float(row["team_return"]) for row in table if row["policy"] == "fedavg"}
    learned = [row for row in table if row["policy"] == "vdn"]
    for row in learned:  # each episode's own difference to FedAvg on its seed, and the policy's interval
        assert float(row["team_return_minus_fedavg"]) == pytest.approx(float(row["team_return"]) - fedavg[row["seed"]])
        assert float(row["team_return_minus_fedavg_ci_low"]) == pytest.approx(vdn["ci_low"])
        assert float(row["team_return_minus_fedavg_ci_high"]) == pytest.approx(vdn["ci_high"])
        assert row["team_return_minus_fedavg_label"] == vdn["label"]
    assert vdn["difference"] == pytest.approx(np.mean([float(r["team_return_minus_fedavg"]) for r in learned]))
    low, high = vdn["ci_low"], vdn["ci_high"]
    assert vdn["label"] == ("better" if low > 0 else "worse" if high < 0 else "level")
    assert f"{vdn['difference']:+.4f} [{low:+.4f}, {high:+.4f}] {vdn['label']}" in printed
    assert all(row["team_return_minus_fedavg"] == "" for row in table if row["policy"] == "fedavg")


def test_evaluate_defaults_to_at_least_ten_held_out_seeds():
    assert evaluate.build_parser().parse_args([]).episodes >= 10
