"""benchmarks/agent_study.py: the bars read from hand-made rows, the all-policies table from hand-made episodes,
the rows recomputed by hand from the episodes the --quick run wrote, and the errors for bad --runs."""

import json
import shutil

import numpy as np
import pytest

from benchmarks import agent_study
from benchmarks.common import QUICK_FIXED
from fedenv.config import EnvConfig


def row(minus_fixed, low, run_std, ratio=None, ratio_low=None, minus_schedule_low=0.01):
    out = {"best_fixed": "oort", "minus_fixed": minus_fixed, "minus_fixed_low": low, "run_std": run_std,
           "best_schedule": "schedule 1:3", "minus_schedule": 0.02, "minus_schedule_low": minus_schedule_low}
    if ratio is not None:
        out.update(ratio=ratio, ratio_low=ratio_low)
    return out


def test_the_bars_are_read_from_the_intervals_the_spread_and_the_ratio():
    rows = {"trained": {"v": row(0.06, 0.02, 0.03)}, "4x": {"v": row(0.1, 0.0, 0.0, ratio=1.25, ratio_low=1.01)},
            "8x": {"v": row(0.1, 0.0, 0.0, ratio=1.3, ratio_low=0.99)}}
    assert [met for _, met in agent_study.bars(rows, "v")] == [True, True, True, True, False]
    rows["trained"]["v"] = row(0.06, 0.02, 0.031, minus_schedule_low=-0.001)  # spread above half the margin
    assert [met for _, met in agent_study.bars(rows, "v")][:3] == [True, False, False]
    rows["trained"]["v"] = row(0.06, -0.001, 0.0)
    assert agent_study.bars(rows, "v")[0][1] is False


def test_the_quick_rows_are_the_paired_means_of_the_episodes_written(tmp_path):
    assert agent_study.main(["--quick", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "rows.json").read_text())["rows"]
    for setting in ("trained", "4x"):
        episodes = {}
        for group in ("fixed", "schedules", "main-job"):
            episodes.update(json.loads((tmp_path / setting / f"{group}.json").read_text())["per_episode"])
        mean = {name: np.mean([e["team_return"] for e in eps]) for name, eps in episodes.items()}
        fixed = [name for name in ("fedavg", "random", "fastest")]
        best = max(fixed, key=mean.get)
        r = rows[setting]["main-job"]
        assert r["best_fixed"] == best and r["best_schedule"] == "schedule 1:1"
        assert r["minus_fixed"] == pytest.approx(mean["main-job"] - mean[best])
        assert r["ratio"] == pytest.approx(mean["main-job"] / mean[best])
        assert r["minus_schedule"] == pytest.approx(mean["main-job"] - mean["schedule 1:1"])
        assert r["runs"] == 2 and r["seeds"] == 2
        assert {e["checkpoint"] for e in episodes["main-job"]} == {
            str(tmp_path / "quick_runs" / f"seed_{s}" / "checkpoint.pt") for s in (0, 1)}
        assert all(e["probing"] is False for e in episodes["schedule 1:1"])
    cached = (tmp_path / "trained" / "fixed.json").read_text()
    assert agent_study.main(["--quick", "--out", str(tmp_path), "--settings", "trained"]) == 0
    assert (tmp_path / "trained" / "fixed.json").read_text() == cached  # reused, not evaluated again
    page, readme = tmp_path / "page.md", tmp_path / "README.md"
    page.write_text(f"{agent_study.START}\nold\n{agent_study.END}\n")
    readme.write_text("no markers\n")
    write = ["--quick", "--out", str(tmp_path), "--settings", "trained", "--write", "--page", str(page),
             "--readme", str(readme)]
    with pytest.raises(SystemExit):
        agent_study.main(write)
    assert page.read_text() == f"{agent_study.START}\nold\n{agent_study.END}\n"  # neither file written
    readme.write_text(f"intro\n{agent_study.START}\n{agent_study.END}\n")
    assert agent_study.main(write) == 0
    assert "| main-job | " in readme.read_text() and "| trained | main-job | 2 x 2 |" in page.read_text()
    # the all-policies table, from the same episodes: every policy's plain mean per metric; with 2 seeds
    # (and at most 2 runs) each single value is a resample of probability >= 1/16 > 2.5 %, so the 95 %
    # percentile interval runs from the smallest value to the largest
    episodes = {}
    for group in ("fixed", "schedules", "main-job"):
        episodes.update(json.loads((tmp_path / "trained" / f"{group}.json").read_text())["per_episode"])
    policies = json.loads((tmp_path / "rows.json").read_text())["policies"]
    assert list(policies) == ["trained"]
    assert [(r["policy"], r["kind"]) for r in policies["trained"]] == [
        ("main-job", "learned"), *((name, "fixed") for name in QUICK_FIXED), ("schedule 1:1", "schedule")]
    for r in policies["trained"]:
        eps = episodes[r["policy"]]
        assert r["probing"] == ("probing" if eps[0]["probing"] else "no probing")
        assert (r["runs"], r["seeds"]) == ((2, 2) if r["kind"] == "learned" else (1, 2))
        for metric in ("team_return", "final_accuracy", "total_latency_s", "total_upload_mb", "total_download_mb"):
            values = [e[metric] for e in eps]
            assert (r[metric], r[f"{metric}_low"], r[f"{metric}_high"]) == pytest.approx(
                (np.mean(values), min(values), max(values)))
    text = page.read_text()
    assert text.index("| trained | main-job | 2 x 2 |") < text.index("**All policies, setting `trained`**")
    main_job = policies["trained"][0]
    assert (f"| main-job | learned | {main_job['probing']} | 2 x 2 | {main_job['team_return']:.3f} "
            f"[{main_job['team_return_low']:.3f}, {main_job['team_return_high']:.3f}] | ") in text
    with pytest.raises(SystemExit):  # a transfer variant that is not a variant of the study
        agent_study.main(["--quick", "--out", str(tmp_path), "--transfer-variants", "no-such-variant"])
    shutil.rmtree(tmp_path / "4x")
    assert agent_study.main(["--quick", "--out", str(tmp_path), "--transfer-variants"]) == 0
    assert list(json.loads((tmp_path / "rows.json").read_text())["rows"]) == ["trained"]
    assert not (tmp_path / "4x").exists()  # no variant to transfer: the transfer settings are not evaluated


@pytest.mark.parametrize("items,message", [
    (["no-equals-sign"], "is not NAME=GLOB"),
    (["a=/nonexistent/*.pt"], "matches no file"),
])
def test_bad_runs_are_refused_naming_the_item(items, message):
    with pytest.raises(ValueError, match=message):
        agent_study.parse_runs(items)


def test_variants_trained_in_different_federations_are_refused_but_learner_levers_may_differ():
    class Run:
        def __init__(self, **fields):
            self.env_config = EnvConfig(**fields)

    federation = agent_study.shared_federation({"a": [Run(probing=True)], "b": [Run(probing=False,
                                                                                     observation_context=True)]})
    assert federation == EnvConfig()
    with pytest.raises(ValueError, match="fields num_clients"):
        agent_study.shared_federation({"a": [Run()], "b": [Run(num_clients=20, clients_per_round=10)]})


def test_a_variant_against_another_resamples_both_sides_runs():
    def runs(returns_by_run):
        return [{"seed": seed, "checkpoint": f"run{r}", "team_return": value}
                for r, values in enumerate(returns_by_run) for seed, value in zip((1, 2, 3), values)]

    per_episode = {"short": runs([[2.0, 4.0, 6.0]]), "long": runs([[1.0, 3.0, 5.0], [3.0, 5.0, 7.0]])}
    [d] = agent_study.variant_differences(per_episode, [("short", "long")], [1, 2, 3])
    assert (d["difference"], d["low"], d["high"], d["label"]) == pytest.approx((0.0, -1.0, 1.0, "level"))
    with pytest.raises(ValueError, match="'short:lng' is not A:B with variants of --runs"):
        agent_study.parse_pairs(["short:lng"], ["short", "long"])



def test_the_all_policies_table_holds_every_policy_with_the_mean_and_interval_of_each_metric():
    def runs(by_run, probing):  # by_run: per run, per seed, (team return, final accuracy, latency s, upload MB)
        return [{"seed": seed, "checkpoint": None if len(by_run) == 1 else f"run{r}", "probing": probing,
                 "team_return": ret, "final_accuracy": acc, "total_latency_s": lat, "total_upload_mb": up,
                 "total_download_mb": 2 * up} for r, per_seed in enumerate(by_run)
                for seed, (ret, acc, lat, up) in zip((1, 2), per_seed)]

    per_episode = {  # not in the table's order
        "schedule 1:1": runs([[(0.5, 0.9, 7.0, 3.0), (0.5, 0.9, 7.0, 3.0)]], probing=False),
        "fedavg": runs([[(0.0, 0.8, 10.0, 4.0), (0.4, 0.9, 30.0, 4.0)]], probing=False),
        "vdn": runs([[(0.1, 0.7, 10.0, 1.0), (0.1, 0.7, 10.0, 1.0)], [(0.3, 0.7, 30.0, 1.0), (0.3, 0.7, 30.0, 1.0)]],
                    probing=True),
    }
    rows = agent_study.policy_rows(per_episode, {"learned": ["vdn"], "fixed": ["fedavg"],
                                                 "schedule": ["schedule 1:1"]}, [1, 2])
    assert [(r["policy"], r["kind"], r["probing"], r["runs"], r["seeds"]) for r in rows] == [
        ("vdn", "learned", "probing", 2, 2), ("fedavg", "fixed", "no probing", 1, 2),
        ("schedule 1:1", "schedule", "no probing", 1, 2)]
    vdn, fedavg, schedule = rows

    def interval(r, metric):
        return r[metric], r[f"{metric}_low"], r[f"{metric}_high"]

    # vdn: two runs, each constant over the seeds, at 0.1 and 0.3: resampling the runs gives 0.1 (1/4),
    # 0.2 (1/2) or 0.3 (1/4); the same for latency at 10 and 30 s; accuracy and traffic are constant
    assert interval(vdn, "team_return") == pytest.approx((0.2, 0.1, 0.3))
    assert interval(vdn, "total_latency_s") == pytest.approx((20.0, 10.0, 30.0))
    assert interval(vdn, "final_accuracy") == pytest.approx((0.7, 0.7, 0.7))
    assert interval(vdn, "total_download_mb") == pytest.approx((2.0, 2.0, 2.0))
    # fedavg: one run, 0.0 and 0.4 on the two seeds: resampling the seeds gives 0.0, 0.2 or 0.4
    assert interval(fedavg, "team_return") == pytest.approx((0.2, 0.0, 0.4))
    assert interval(fedavg, "final_accuracy") == pytest.approx((0.85, 0.8, 0.9))
    assert interval(fedavg, "total_upload_mb") == pytest.approx((4.0, 4.0, 4.0))
    assert interval(schedule, "team_return") == pytest.approx((0.5, 0.5, 0.5))
    lines = agent_study.policy_table("4x", rows)
    assert lines[0] == "**All policies, setting `4x`** (4x the training federation's clients):"
    assert lines[2] == ("| policy | kind | probing | runs x seeds | team return | final accuracy | latency (s) | "
                        "upload (MB) | download (MB) |")
    assert lines[4] == ("| vdn | learned | probing | 2 x 2 | 0.200 [0.100, 0.300] | 0.700 [0.700, 0.700] | "
                        "20.0 [10.0, 30.0] | 1.0 [1.0, 1.0] | 2.0 [2.0, 2.0] |")
    assert len(lines) == 4 + 3
    with pytest.raises(ValueError, match="policy 'oort' did not run"):
        agent_study.policy_rows(per_episode, {"fixed": ["oort"]}, [1, 2])


def test_the_probing_mode_of_a_policy_is_read_from_its_episodes():
    assert agent_study.probing_mode([{"probing": True}, {"probing": True}]) == "probing"
    assert agent_study.probing_mode([{"probing": False}]) == "no probing"
    assert agent_study.probing_mode([{"probing": True}, {"probing": False}]) == "mixed"
    assert agent_study.probing_mode([{"probing": True}, {}]) == "not recorded"


def test_a_section_has_its_own_markers():
    assert agent_study.markers(None) == ("<!-- learned-agent:start -->", "<!-- learned-agent:end -->")
    assert agent_study.markers("task100") == ("<!-- learned-agent-task100:start -->",
                                              "<!-- learned-agent-task100:end -->")
