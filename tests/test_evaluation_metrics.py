"""Per-episode metrics and their summary, on hand-made episode records."""

import math

import pytest

from fedenv.evaluation import EpisodeRecord, per_episode_metrics, summarise, summarise_by_checkpoint


def record(policy, seed, accuracy, latency=(1.0, 2.0), reward=(0.5, -0.25)):
    return EpisodeRecord(policy, seed, list(accuracy), [0.0, 0.0, 0.0], [0.0, latency[0], sum(latency)],
                         list(latency), [3.0, 4.0], [5.0, 1.5], list(reward), [2, 2])


RECORDS = {
    "fedavg": [record("fedavg", 1, [0.1, 0.5, 0.6]), record("fedavg", 2, [0.1, 0.4, 0.7])],
    "other": [record("other", 1, [0.1, 0.6, 0.62], latency=(4.0, 4.0)), record("other", 2, [0.1, 0.3, 0.5])],
}


def test_rounds_to_fedavg_is_the_first_round_reaching_fedavgs_final_accuracy_on_the_same_seed():
    rows = per_episode_metrics(RECORDS)
    assert [r["rounds_to_fedavg"] for r in rows["fedavg"]] == [2.0, 2.0]
    assert rows["other"][0]["rounds_to_fedavg"] == 1.0  # 0.6 >= 0.6 on seed 1
    assert math.isnan(rows["other"][1]["rounds_to_fedavg"])  # never 0.7 on seed 2
    assert rows["other"][0]["total_latency_s"] == 8.0 and rows["other"][0]["total_upload_mb"] == 7.0
    assert rows["other"][0]["total_download_mb"] == 6.5 and rows["other"][0]["total_traffic_mb"] == 13.5
    assert rows["other"][0]["team_return"] == 0.25 and rows["other"][0]["final_accuracy"] == 0.62


def test_summary_leaves_unreached_episodes_out_of_the_mean_and_counts_them():
    summary = {row["policy"]: row for row in summarise(per_episode_metrics(RECORDS))}
    other = summary["other"]
    assert other["episodes"] == 2 and other["reached"] == 1
    assert other["rounds_to_fedavg_mean"] == 1.0 and other["rounds_to_fedavg_std"] == 0.0
    assert other["final_accuracy_mean"] == pytest.approx(0.56) and other["final_accuracy_std"] == pytest.approx(0.06)
    assert summary["fedavg"]["reached"] == 2


def test_without_the_reference_policy_no_episode_reaches_it():
    rows = per_episode_metrics({"other": RECORDS["other"]})
    assert all(math.isnan(r["rounds_to_fedavg"]) for r in rows["other"])
    assert math.isnan(summarise(rows)[0]["rounds_to_fedavg_mean"])


def test_a_policy_from_several_checkpoints_reports_the_spread_over_runs_and_over_seeds():
    # runs a, b on seeds 1, 2: final accuracies a: 0.6, 0.8; b: 0.7, 0.9
    runs = {"vdn": [EpisodeRecord("vdn", seed, [0.1, 0.2, acc], [0.0] * 3, [0.0, 1.0, 2.0], [1.0, 1.0], [1.0, 1.0],
                                  [2.0, 2.0], [0.0, 0.0], [1, 1], checkpoint=run)
                    for run, accs in (("a", (0.6, 0.8)), ("b", (0.7, 0.9))) for seed, acc in zip((1, 2), accs)]}
    row = summarise(per_episode_metrics(runs))[0]
    assert row["checkpoints"] == 2 and row["final_accuracy_mean"] == pytest.approx(0.75)
    assert row["final_accuracy_std"] == pytest.approx(0.1)  # seed means 0.65, 0.85
    assert row["final_accuracy_runs_std"] == pytest.approx(0.05)  # run means 0.7, 0.8
    by_run = summarise_by_checkpoint(per_episode_metrics(runs))
    assert [(r["checkpoint"], round(r["final_accuracy_mean"], 6)) for r in by_run] == [("a", 0.7), ("b", 0.8)]
    assert "final_accuracy_runs_std" not in summarise(per_episode_metrics(RECORDS))[0]
