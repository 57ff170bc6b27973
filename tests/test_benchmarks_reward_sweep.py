"""benchmarks/reward_sweep.py: scaled weights, and the --quick sweep's table recomputed from its episodes."""

import csv
import json
import math

import pytest

from benchmarks import reward_sweep
from benchmarks.common import scaled_weights
from fedenv.config import EnvConfig


def mean(values):
    return sum(values) / len(values)


def test_scaled_weights_multiplies_latency_and_upload_weights_only():
    config = EnvConfig(latency_weight=0.2, comm_weight=0.1, accuracy_weight=1.0)
    scaled = scaled_weights(config, 2.5)
    assert (scaled.latency_weight, scaled.comm_weight, scaled.accuracy_weight) == (0.5, 0.25, 1.0)
    with pytest.raises(ValueError, match="scale"):
        scaled_weights(config, 0.0)


@pytest.mark.slow
def test_quick_sweep_has_every_scale_a_plot_and_ratios_that_follow_from_the_episodes(tmp_path):
    assert reward_sweep.main(["--quick", "--scales", "0.5,4", "--out", str(tmp_path)]) == 0
    rows = list(csv.DictReader((tmp_path / "table.csv").open()))
    episodes = json.loads((tmp_path / "episodes.json").read_text())
    assert [row["setting"] for row in rows] == ["x0.5", "x4"]
    default = EnvConfig()
    assert float(rows[1]["latency_weight"]) == pytest.approx(4 * default.latency_weight)
    assert float(rows[1]["comm_weight"]) == pytest.approx(4 * default.comm_weight)
    assert (tmp_path / "reward_sweep.png").stat().st_size > 0
    for row in rows:
        per_policy = episodes[row["setting"]]
        returns = {name: mean([e["team_return"] for e in eps]) for name, eps in per_policy.items()}
        best = max((name for name in returns if name != "vdn"), key=returns.get)
        assert row["best_fixed"] == best
        assert float(row["learned_total_latency_s"]) == pytest.approx(
            mean([e["total_latency_s"] for e in per_policy["vdn"]]))
        expected = returns["vdn"] / returns[best] if returns[best] > 0 else math.nan
        assert float(row["ratio"]) == pytest.approx(expected, nan_ok=True)
    # FedAvg's choices do not depend on the weights: same latency, lower return under heavier weights
    assert float(rows[0]["fedavg_total_latency_s"]) == pytest.approx(float(rows[1]["fedavg_total_latency_s"]))
    assert float(rows[1]["fedavg_team_return"]) < float(rows[0]["fedavg_team_return"])
