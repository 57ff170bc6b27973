"""benchmarks/learners.py: the --quick comparison's table recomputed from its episodes; failures reported."""

import csv
import json
import math

import pytest

from benchmarks import learners
from fedenv.config import EnvConfig


def mean(values):
    return sum(values) / len(values)


def read_study(out):
    rows = list(csv.DictReader((out / "table.csv").open()))
    return rows, json.loads((out / "episodes.json").read_text())


def test_unknown_learner_is_refused_with_the_allowed_names(tmp_path):
    with pytest.raises(ValueError, match="allowed: vdn, sb3-ppo"):
        learners.train_learner("dqn", EnvConfig(), 1, 0, tmp_path)
    with pytest.raises(SystemExit):
        learners.main(["--quick", "--learners", "vdn,dqn", "--out", str(tmp_path)])


def test_benchmarl_budget_is_the_frames_of_the_episodes(tmp_path):
    pytest.importorskip("benchmarl")
    config = learners.benchmarl_experiment_config(frames=60, num_rounds=20, run_dir=tmp_path)
    assert config.max_n_frames == 60
    assert config.off_policy_collected_frames_per_batch == 60     # 3 episodes < 5
    assert config.exploration_anneal_frames == 30 and config.gamma == 1.0


def test_a_learner_that_fails_gets_a_row_naming_the_error(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("no discrete action spec\nsecond line")

    monkeypatch.setattr(learners, "train_sb3_ppo", broken)
    assert learners.main(["--quick", "--learners", "sb3-ppo", "--fixed", "fedavg", "--out", str(tmp_path)]) == 0
    rows, episodes = read_study(tmp_path)
    assert rows[0]["learner"] == "sb3-ppo"
    assert rows[0]["status"] == "failed: RuntimeError: no discrete action spec"
    assert episodes == {}


@pytest.mark.slow
def test_quick_comparison_has_every_learner_and_ratios_that_follow_from_the_episodes(tmp_path):
    pytest.importorskip("benchmarl")
    pytest.importorskip("stable_baselines3")
    assert learners.main(["--quick", "--out", str(tmp_path)]) == 0
    rows, episodes = read_study(tmp_path)
    assert [row["learner"] for row in rows] == list(learners.DEFAULT_LEARNERS)
    for row in rows:
        assert row["status"] == "ok", row["status"]
        assert float(row["train_s"]) > 0 and int(row["frames"]) == 2       # 1 episode of 2 rounds
        per_policy = episodes[row["learner"]]
        assert set(per_policy) == {row["learner"], "fedavg", "random", "fastest"}
        assert [e["seed"] for e in per_policy[row["learner"]]] == [e["seed"] for e in per_policy["fedavg"]]
        returns = {name: mean([e["team_return"] for e in eps]) for name, eps in per_policy.items()}
        best = max((name for name in returns if name != row["learner"]), key=returns.get)
        assert row["best_fixed"] == best
        assert float(row["learned_final_accuracy"]) == pytest.approx(
            mean([e["final_accuracy"] for e in per_policy[row["learner"]]]))
        expected = returns[row["learner"]] / returns[best] if returns[best] > 0 else math.nan
        assert float(row["ratio"]) == pytest.approx(expected, nan_ok=True)
