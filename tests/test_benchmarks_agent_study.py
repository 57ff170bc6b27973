"""benchmarks/agent_study.py and its modules (agent_study_rows, agent_study_page, agent_study_groups,
agent_study_settings): each setting's federation against the training federation, the bars
read from hand-made rows (the fine-tuning bar too), the all-policies and fine-tuning tables from hand-made
episodes and rows, the rows recomputed by hand from the episodes the --quick run wrote (its fine-tuned runs
against fine-tuning by hand), and the errors for bad --runs and --scratch."""

import dataclasses
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from agents.config import VDNConfig
from benchmarks import agent_study, agent_study_groups, agent_study_page, agent_study_rows, agent_study_settings, common
from benchmarks.agent_study_settings import SETTINGS, TRANSFER_SETTINGS, Setting, setting_config
from benchmarks.common import QUICK_FEDERATION, QUICK_FIXED
from fedenv.config import EnvConfig
from fedenv.evaluation import evaluate_policies, per_episode_metrics
from fedenv.evaluation.transfer import config_differences


def row(minus_fixed, low, run_std, ratio=None, ratio_low=None, minus_schedule_low=0.01):
    out = {"best_fixed": "oort", "minus_fixed": minus_fixed, "minus_fixed_low": low, "run_std": run_std,
           "best_schedule": "schedule 1:3", "minus_schedule": 0.02, "minus_schedule_low": minus_schedule_low}
    if ratio is not None:
        out.update(ratio=ratio, ratio_low=ratio_low)
    return out


def test_the_bars_are_read_from_the_intervals_the_spread_and_the_ratio():
    rows = {"trained": {"v": row(0.06, 0.02, 0.03)}, "4x": {"v": row(0.1, 0.0, 0.0, ratio=1.25, ratio_low=1.01)},
            "8x": {"v": row(0.1, 0.0, 0.0, ratio=1.3, ratio_low=0.99)}}
    assert [met for _, met in agent_study_rows.bars(rows, "v")] == [True, True, True, True, False]
    rows["trained"]["v"] = row(0.06, 0.02, 0.031, minus_schedule_low=-0.001)  # spread above half the margin
    assert [met for _, met in agent_study_rows.bars(rows, "v")][:3] == [True, False, False]
    rows["trained"]["v"] = row(0.06, -0.001, 0.0)
    assert agent_study_rows.bars(rows, "v")[0][1] is False


def test_the_quick_rows_are_the_paired_means_of_the_episodes_written(tmp_path, monkeypatch, capsys):
    calls = []

    def spy(checkpoint, config, episodes, seed, initial_eps=None, head_only=False):
        calls.append((checkpoint, config, episodes, seed, initial_eps))
        return common.fine_tune(checkpoint, config, episodes, seed)

    monkeypatch.setattr(agent_study_groups, "fine_tune", spy)
    assert agent_study.main(["--quick", "--out", str(tmp_path)]) == 0
    checkpoints = [str(tmp_path / "quick_runs" / f"seed_{s}" / "checkpoint.pt") for s in (0, 1)]
    first = capsys.readouterr()  # each group named before it is evaluated, its progress on stderr (no terminal)
    assert "evaluating trained/fixed\n" in first.out and "evaluating 4x/main-job +ft1\n" in first.out
    assert f"fine-tuning run 2/2 ({checkpoints[1]}) for 1 episode\n" in first.out
    assert re.search(r"^evaluate: 6/6 episodes", first.err, re.MULTILINE)  # 3 fixed policies x 2 seeds
    four_x = dataclasses.replace(EnvConfig(**QUICK_FEDERATION), num_clients=12)  # 4 x 3 clients
    # --quick fine-tunes each run of the transfer variant for 1 episode at 4x, run i with seed i
    assert calls == [(Path(checkpoints[0]), four_x, 1, 0, None), (Path(checkpoints[1]), four_x, 1, 1, None)]
    document = json.loads((tmp_path / "rows.json").read_text())
    rows = document["rows"]
    for setting in ("trained", "4x"):
        episodes = {}
        groups = ("fixed", "schedules", "main-job", *(["main-job +ft1"] if setting == "4x" else []))
        for group in groups:
            episodes.update(json.loads((tmp_path / setting / f"{group}.json").read_text())["per_episode"])
        mean = {name: np.mean([e["team_return"] for e in eps]) for name, eps in episodes.items()}
        fixed = [name for name in ("fedavg", "random", "fastest")]
        best = max(fixed, key=mean.get)
        learned = ["main-job", *(["main-job +ft1"] if setting == "4x" else [])]
        assert list(rows[setting]) == learned
        for name in learned:
            r = rows[setting][name]
            assert r["best_fixed"] == best and r["best_schedule"] == "schedule 1:1"
            assert r["minus_fixed"] == pytest.approx(mean[name] - mean[best])
            assert r["ratio"] == pytest.approx(mean[name] / mean[best])
            assert r["minus_schedule"] == pytest.approx(mean[name] - mean["schedule 1:1"])
            assert r["runs"] == 2 and r["seeds"] == 2
            assert {e["checkpoint"] for e in episodes[name]} == set(checkpoints)
        assert all(e["probing"] is False for e in episodes["schedule 1:1"])
        # the all-policies rows: every policy's ratio to the best fixed policy; a variant's is its row's, runs and all
        policies = {p["policy"]: p for p in document["policies"][setting]}
        for name in learned:
            assert policies[name]["best_fixed"] == best
            assert [policies[name][k] for k in ("ratio", "ratio_low", "ratio_high")] == pytest.approx(
                [rows[setting][name][k] for k in ("ratio", "ratio_low", "ratio_high")])
        for name in [*fixed, "schedule 1:1"]:
            assert policies[name]["ratio"] == pytest.approx(mean[name] / mean[best])
    tuned = rows["4x"]["main-job"]["ft_minus_zero_shot"]
    assert (tuned["variant"], tuned["reference"], tuned["episodes"]) == ("main-job +ft1", "main-job", 1)
    assert tuned["difference"] == pytest.approx(mean["main-job +ft1"] - mean["main-job"])
    assert "zero_shot_minus_scratch" not in rows["4x"]["main-job"]
    # the fine-tuned runs' episodes are those of fine-tuning by hand (a second run: deterministic) and evaluating
    by_hand = []
    for seed, checkpoint in enumerate(checkpoints):
        policy = common.fine_tune(Path(checkpoint), four_x, 1, seed)
        policy.name = "main-job +ft1"
        by_hand.append(policy)
    expected = per_episode_metrics(evaluate_policies(four_x, by_hand, [1000, 1001], progress=False,
                                                     checkpoints=checkpoints))["main-job +ft1"]
    compared = ("seed", "checkpoint", "probing", "team_return", "final_accuracy", "total_latency_s", "total_upload_mb")
    assert [{k: e[k] for k in compared} for e in episodes["main-job +ft1"]] == [
        {k: e[k] for k in compared} for e in expected]
    cached = (tmp_path / "trained" / "fixed.json").read_text()
    assert agent_study.main(["--quick", "--out", str(tmp_path), "--settings", "trained"]) == 0
    assert (tmp_path / "trained" / "fixed.json").read_text() == cached  # reused, not evaluated again
    assert "evaluating trained/fixed" not in capsys.readouterr().out
    calls.clear()
    capsys.readouterr()
    assert agent_study.main(["--quick", "--out", str(tmp_path), "--settings", "4x"]) == 0
    assert calls == []  # the fine-tuned runs' episodes are reused: no fine-tuning again
    printed = capsys.readouterr().out
    assert "**Fine-tuned minus zero-shot, setting `4x`**" in printed
    assert (f"| main-job +ft1 | main-job | {tuned['difference']:+.3f} [{tuned['low']:+.3f}, {tuned['high']:+.3f}] "
            f"{tuned['label']} | not measured |") in printed
    assert "No agent trained from scratch at `4x`" in printed
    # a scratch variant of 4x: evaluated there only, the zero-shot variant's difference to it in its row
    scratch_dir = tmp_path / "scratch_4x"
    common.train_agent(four_x, agent_study.QUICK_EPISODES, 0, scratch_dir, VDNConfig(**agent_study.QUICK_VDN))
    scratch = str(common.checkpoint_path(scratch_dir))
    with pytest.raises(SystemExit):  # a run of the training federation is no scratch agent of 4x
        agent_study.main(["--quick", "--out", str(tmp_path), "--scratch", f"4x:wrong={checkpoints[0]}"])
    assert "num_clients=3 (setting 4x: 12)" in capsys.readouterr().err
    assert agent_study.main(["--quick", "--out", str(tmp_path), "--scratch", f"4x:scratch={scratch}"]) == 0
    assert calls == []
    assert not (tmp_path / "trained" / "scratch.json").exists()
    scratch_episodes = json.loads((tmp_path / "4x" / "scratch.json").read_text())["per_episode"]["scratch"]
    assert {e["checkpoint"] for e in scratch_episodes} == {scratch} and len(scratch_episodes) == 2
    by_variant = json.loads((tmp_path / "rows.json").read_text())["rows"]["4x"]
    assert list(by_variant) == ["main-job", "main-job +ft1", "scratch"]
    versus = by_variant["main-job"]["zero_shot_minus_scratch"]
    assert (versus["variant"], versus["reference"]) == ("main-job", "scratch")
    assert versus["difference"] == pytest.approx(mean["main-job"] - np.mean([e["team_return"]
                                                                             for e in scratch_episodes]))
    assert "No agent trained from scratch at `4x`" not in capsys.readouterr().out
    page, readme = tmp_path / "page.md", tmp_path / "README.md"
    page.write_text(f"{agent_study_page.START}\nold\n{agent_study_page.END}\n")
    readme.write_text("no markers\n")
    write = ["--quick", "--out", str(tmp_path), "--settings", "trained", "--write", "--page", str(page),
             "--readme", str(readme)]
    with pytest.raises(SystemExit):
        agent_study.main(write)
    assert page.read_text() == f"{agent_study_page.START}\nold\n{agent_study_page.END}\n"  # neither file written
    readme.write_text(f"intro\n{agent_study_page.START}\n{agent_study_page.END}\n")
    assert agent_study.main(write) == 0
    assert "| main-job | " in readme.read_text() and "| trained | main-job | 2 x 2 |" in page.read_text()
    readme.write_text("no markers\n")  # --no-readme: the page alone, README neither needed nor touched
    page.write_text(f"{agent_study_page.START}\nold\n{agent_study_page.END}\n")
    assert agent_study.main([*write, "--no-readme"]) == 0
    assert readme.read_text() == "no markers\n" and "| trained | main-job | 2 x 2 |" in page.read_text()
    with pytest.raises(SystemExit):  # README's variants without README
        agent_study.main([*write, "--no-readme", "--readme-variants", "main-job"])
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
    with pytest.raises(SystemExit):  # nor a variant of README's short table
        agent_study.main(["--quick", "--out", str(tmp_path), "--readme-variants", "no-such-variant"])
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

    federation = agent_study_groups.shared_federation({"a": [Run(probing=True)], "b": [Run(probing=False,
                                                                                     observation_context=True)]})
    assert federation == EnvConfig()
    with pytest.raises(ValueError, match="fields num_clients"):
        agent_study_groups.shared_federation({"a": [Run()], "b": [Run(num_clients=20, clients_per_round=10)]})


def test_a_variant_against_another_resamples_both_sides_runs():
    def runs(returns_by_run):
        return [{"seed": seed, "checkpoint": f"run{r}", "team_return": value}
                for r, values in enumerate(returns_by_run) for seed, value in zip((1, 2, 3), values)]

    # short is 1.5 above the seeds' baseline, long's two runs 0 and 2 above it: short minus long is 1.5 - 1 =
    # +0.5, and resampling long's runs gives 1.5 - 0 (1/4), 1.5 - 1 (1/2) or 1.5 - 2 (1/4): [-0.5, +1.5]
    per_episode = {"short": runs([[2.5, 4.5, 6.5]]), "long": runs([[1.0, 3.0, 5.0], [3.0, 5.0, 7.0]])}
    [d] = agent_study_rows.variant_differences(per_episode, [("short", "long")], [1, 2, 3])
    assert (d["difference"], d["low"], d["high"], d["label"]) == pytest.approx((0.5, -0.5, 1.5, "level"))
    # per setting: a pair is compared where both variants were evaluated (a transfer setting holds only the
    # transfer variants), each difference tagged with its setting
    [d4] = agent_study_rows.setting_differences("4x", per_episode, [("short", "long")], [1, 2, 3])
    assert d4 == {"setting": "4x", **d}
    assert agent_study_rows.setting_differences("8x", {"short": per_episode["short"]}, [("short", "long")],
                                                [1, 2, 3]) == []
    block = agent_study_page.markdown({}, "cmd", "abc", [{"setting": "trained", **d}, d4], {})
    assert "| trained | short | long | +0.500 [-0.500, +1.500] level |" in block
    assert "| 4x | short | long | +0.500 [-0.500, +1.500] level |" in block
    with pytest.raises(ValueError, match="'short:lng' is not A:B with variants of --runs"):
        agent_study.parse_pairs(["short:lng"], ["short", "long"])



def test_a_variant_rows_ratio_is_of_the_means_with_its_own_interval_and_none_to_a_negative_return():
    def episodes(returns, checkpoint=None):
        return [{"seed": seed, "checkpoint": checkpoint, "team_return": value}
                for seed, value in zip((1, 2, 3), returns)]

    # two runs at 1x and 2x the fixed policy on every seed: the difference of the means is 3 - 2 = +1, the
    # ratio 1.5, and resampling the runs gives 1 (1/4), 1.5 (1/2) or 2 (1/4): [1, 2]
    per_episode = {"fixed": episodes([1.0, 2.0, 3.0]),
                   "v": episodes([1.0, 2.0, 3.0], "a") + episodes([2.0, 4.0, 6.0], "b")}
    r = agent_study_rows.variant_row(per_episode, "v", ["fixed"], [], [1, 2, 3])
    assert (r["best_fixed_return"], r["minus_fixed"]) == pytest.approx((2.0, 1.0))
    assert (r["ratio"], r["ratio_low"], r["ratio_high"]) == pytest.approx((1.5, 1.0, 2.0))
    assert agent_study_rows.ratio_text(r) == "1.50x [1.00, 2.00]"
    # 1.2x a negative return is a worse return, not a transfer bar met: no ratio
    per_episode = {"fixed": episodes([-0.5, -0.4, -0.6]), "v": episodes([-0.6, -0.48, -0.72], "a")}
    r = agent_study_rows.variant_row(per_episode, "v", ["fixed"], [], [1, 2, 3])
    assert r["minus_fixed"] == pytest.approx(-0.1) and r["minus_fixed_label"] == "worse"
    assert math.isnan(r["ratio"]) and math.isnan(r["ratio_low"])
    assert dict(agent_study_rows.bars({"4x": {"v": r}}, "v")) == {
        "at 4x the clients: return at least 1.2x the best fixed policy's, interval above 1": False}
    assert agent_study_rows.ratio_text(r) == "no ratio (fixed's return -0.500 is not positive)"


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
    rows = agent_study_rows.policy_rows(per_episode, {"learned": ["vdn"], "fixed": ["fedavg"],
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
    lines = agent_study_page.policy_table("4x", rows)
    assert lines[0] == "**All policies, setting `4x`** (4x the training federation's clients):"
    assert lines[2] == ("| policy | kind | probing | runs x seeds | team return | final accuracy | latency (s) | "
                        "upload (MB) | download (MB) |")
    assert lines[4] == ("| vdn | learned | probing | 2 x 2 | 0.200 [0.100, 0.300] | 0.700 [0.700, 0.700] | "
                        "20.0 [10.0, 30.0] | 1.0 [1.0, 1.0] | 2.0 [2.0, 2.0] |")
    assert len(lines) == 4 + 3
    with pytest.raises(ValueError, match="policy 'oort' did not run"):
        agent_study_rows.policy_rows(per_episode, {"fixed": ["oort"]}, [1, 2])


def test_the_all_policies_table_gives_every_policy_its_ratio_to_the_best_fixed_policy():
    def episodes(returns, checkpoint=None):
        return [{"seed": seed, "checkpoint": checkpoint, "probing": False, "team_return": ret, "final_accuracy": 0.9,
                 "total_latency_s": 1.0, "total_upload_mb": 1.0, "total_download_mb": 1.0}
                for seed, ret in zip((1, 2), returns)]

    per_episode = {"a": episodes([0.2, 0.4]), "c": episodes([0.1, 0.1]), "rule": episodes([0.3, 0.6])}
    rows = agent_study_rows.policy_rows(per_episode, {"fixed": ["a", "c"], "reference": ["rule"]}, [1, 2],
                                        best_fixed="a")
    a, c, rule = ({k: r[k] for k in ("ratio", "ratio_low", "ratio_high")} for r in rows)
    assert tuple(a.values()) == pytest.approx((1.0, 1.0, 1.0))
    # the rule returns 1.5x a's on each seed, so in every resample
    assert tuple(rule.values()) == pytest.approx((1.5, 1.5, 1.5))
    # c's 0.1 over a's mean on the resampled seeds: 0.2 (1/4), 0.3 (1/2), 0.4 (1/4) -> 0.5, 1/3, 0.25
    assert tuple(c.values()) == pytest.approx((1 / 3, 0.25, 0.5))
    assert rows[0]["best_fixed_return"] == pytest.approx(0.3)
    lines = agent_study_page.policy_table("8x", rows)
    assert lines[2] == ("| policy | kind | probing | runs x seeds | team return | ratio to best fixed (a) | "
                        "final accuracy | latency (s) | upload (MB) | download (MB) |")
    assert lines[3] == "|---|---|---|---|---|---|---|---|---|---|"
    assert lines[-1].startswith("| rule | reference | no probing | 1 x 2 | 0.450 [0.300, 0.600] | 1.50x [1.50, 1.50] |")
    with pytest.raises(ValueError, match="policy 'oort' did not run"):
        agent_study_rows.policy_rows(per_episode, {"fixed": ["a"]}, [1, 2], best_fixed="oort")


def test_the_ratio_column_says_no_ratio_where_the_best_fixed_policy_returns_nothing_positive():
    def episodes(returns, checkpoint=None):
        return [{"seed": seed, "checkpoint": checkpoint, "probing": False, "team_return": ret, "final_accuracy": 0.9,
                 "total_latency_s": 1.0, "total_upload_mb": 1.0, "total_download_mb": 1.0}
                for seed, ret in zip((1, 2), returns)]

    # the learned row comes first, so the heading must name the best fixed policy, not the first row's policy
    per_episode = {"v": episodes([0.3, 0.5], "run0"), "a": episodes([-0.1, -0.3]), "b": episodes([-0.4, -0.4])}
    rows = agent_study_rows.policy_rows(per_episode, {"learned": ["v"], "fixed": ["a", "b"]}, [1, 2],
                                        best_fixed="a")
    lines = agent_study_page.policy_table("trained", rows)
    assert "| ratio to best fixed (a) |" in lines[2]
    # a's mean return is -0.2: no policy's ratio to it means anything, the learned one's included
    for line, policy in zip(lines[4:], ("v", "a", "b")):
        assert line.startswith(f"| {policy} |")
        assert line.split(" | ")[5] == "no ratio (a's return -0.200 is not positive)"


def test_the_probing_mode_of_a_policy_is_read_from_its_episodes():
    assert agent_study_rows.probing_mode([{"probing": True}, {"probing": True}]) == "probing"
    assert agent_study_rows.probing_mode([{"probing": False}]) == "no probing"
    assert agent_study_rows.probing_mode([{"probing": True}, {"probing": False}]) == "mixed"
    assert agent_study_rows.probing_mode([{"probing": True}, {}]) == "not recorded"


def test_a_section_has_its_own_markers():
    assert agent_study_page.markers(None) == ("<!-- learned-agent:start -->", "<!-- learned-agent:end -->")
    assert agent_study_page.markers("task100") == ("<!-- learned-agent-task100:start -->",
                                              "<!-- learned-agent-task100:end -->")


def difference(variant, reference, value, low, high, label):
    return {"variant": variant, "reference": reference, "difference": value, "low": low, "high": high, "label": label}


def test_the_fine_tuning_bar_is_not_worse_and_better_where_zero_shot_trails_scratch():
    level = difference("v +ft10", "v", -0.01, -0.03, 0.0, "level")  # upper bound exactly 0: not worse
    worse = difference("v +ft10", "v", -0.02, -0.04, -0.001, "worse")
    better = difference("v +ft10", "v", 0.03, 0.01, 0.05, "better")
    above_zero_barely = difference("v +ft10", "v", 0.02, 0.0, 0.04, "level")  # lower bound 0: not above 0
    trails = difference("v", "s", -0.05, -0.08, -0.02, "worse")
    keeps_up = difference("v", "s", 0.01, -0.02, 0.04, "level")

    def states(tuned, scratch):
        return [met for _, met in agent_study_rows.fine_tune_bars("4x", "v", tuned, scratch)]

    assert states(level, None) == [True, None]
    assert states(worse, None) == [False, None]
    assert states(better, trails) == [True, True]
    assert states(above_zero_barely, trails) == [True, False]
    assert states(level, trails) == [True, False]
    assert states(worse, keeps_up) == [False, True]  # no gap to close: the second half holds
    assert states(level, {**trails, "low": float("nan"), "high": float("nan"), "label": None}) == [True, None]
    # without a scratch agent, fine-tuning that is better than none holds whether zero-shot trails or not
    assert states(better, None) == [True, True]
    assert states(above_zero_barely, None) == [True, None]
    assert states(better, {**trails, "low": float("nan"), "high": float("nan"), "label": None}) == [True, True]
    [(first, _), (second, _)] = agent_study_rows.fine_tune_bars("8x", "v", level, None)
    assert first == "at 8x the clients: v +ft10 minus v not worse (interval's upper bound >= 0)"
    assert second.endswith("not measured (no --scratch 8x:NAME=GLOB)")
    [_, (second, _)] = agent_study_rows.fine_tune_bars("8x", "v", better, None)
    assert second == ("at 8x the clients: v +ft10 better than v (+0.030 [+0.010, +0.050]), so better wherever v "
                      "trails an agent trained there from scratch (no --scratch 8x:NAME=GLOB)")
    [_, (second, _)] = agent_study_rows.fine_tune_bars("4x", "v", better, trails)
    assert "v trails s (trained there from scratch; -0.050 [-0.080, -0.020] worse)" in second


def test_the_fine_tuning_bars_follow_each_settings_ratio_and_unmeasured_bars_are_not_counted():
    trained = {"best_fixed": "oort", "minus_fixed": 0.06, "minus_fixed_low": 0.02, "minus_fixed_high": 0.1,
               "minus_fixed_label": "better", "run_std": 0.03, "best_schedule": "schedule 1:3", "minus_schedule": 0.02,
               "minus_schedule_low": 0.01, "minus_schedule_high": 0.03, "minus_schedule_label": "better"}
    rows = {"trained": {"v": trained},
            "4x": {"v": {"ratio": 1.25, "ratio_low": 1.01, "ratio_high": 1.5,
                         "ft_minus_zero_shot": {**difference("v +ft10", "v", 0.0, -0.01, 0.01, "level"),
                                                "episodes": 10}},
                   "v +ft10": {"ratio": 1.1, "ratio_low": 0.9, "ratio_high": 1.3}},
            "8x": {"v": {"ratio": 1.3, "ratio_low": 0.99, "ratio_high": 1.6,
                         "ft_minus_zero_shot": {**difference("v +ft10", "v", -0.05, -0.09, -0.01, "worse"),
                                                "episodes": 10},
                         "zero_shot_minus_scratch": difference("v", "s", -0.1, -0.2, -0.05, "worse")}}}
    assert [met for _, met in agent_study_rows.bars(rows, "v")] == [True, True, True,  # margins and spread
                                                                True, True, None,  # 4x: ratio, ft not worse, no scratch
                                                                False, False, False]  # 8x: ratio, ft worse, gap open
    assert [met for _, met in agent_study_rows.bars(rows, "v +ft10")] == [False]  # its own ratio at 4x
    table = agent_study_page.readme_table(rows).splitlines()
    assert table[2].endswith("| 5 of 8 |")  # 9 bars, one not measured
    assert [line.split(" | ")[0] for line in table[2:]] == ["| v", "| v +ft10"]
    only = agent_study_page.readme_table(rows, ["v +ft10"]).splitlines()
    assert only[:2] == table[:2] and only[2:] == [table[3]]  # README's subset: that variant's row alone
    assert agent_study_page.BAR_STATES[None] == "not measured"


def test_the_fine_tuning_table_gives_each_difference_and_says_when_scratch_is_not_measured():
    by_variant = {"a": {"ft_minus_zero_shot": {**difference("a +ft10", "a", 0.012, -0.004, 0.03, "level"),
                                               "episodes": 10}},
                  "a +ft10": {}, "b": {}}
    lines = agent_study_page.fine_tune_table("8x", by_variant)
    assert lines[0].startswith("**Fine-tuned minus zero-shot, setting `8x`** (8x the training federation's clients; "
                               "each run fine-tuned there for 10 episodes;")
    assert lines[2:] == ["| fine-tuned | zero-shot | fine-tuned minus zero-shot | zero-shot minus scratch |",
                         "|---|---|---|---|", "| a +ft10 | a | +0.012 [-0.004, +0.030] level | not measured |", "",
                         "No agent trained from scratch at `8x` (`--scratch 8x:NAME=GLOB`): the bar's second half "
                         "(fine-tuned better than zero-shot where zero-shot trails scratch) is not measured."]
    by_variant["b"] = {"ft_minus_zero_shot": {**difference("b +ft10", "b", 0.02, 0.001, 0.04, "better"),
                                              "episodes": 10}}
    assert agent_study_page.fine_tune_table("8x", by_variant)[-1] == (
        "No agent trained from scratch at `8x` (`--scratch 8x:NAME=GLOB`): the bar's second half (fine-tuned better "
        "than zero-shot where zero-shot trails scratch) is not measured, except for b +ft10: better than zero-shot, "
        "it meets that half whether or not zero-shot trails scratch.")
    del by_variant["b"]["ft_minus_zero_shot"]
    by_variant["a"]["zero_shot_minus_scratch"] = difference("a", "s", -0.1, -0.2, -0.05, "worse")
    lines = agent_study_page.fine_tune_table("8x", by_variant)
    assert lines[4:] == ["| a +ft10 | a | +0.012 [-0.004, +0.030] level | -0.100 [-0.200, -0.050] worse (s) |"]
    assert agent_study_page.fine_tune_table("8x", {"b": {}}) == []


def test_the_fine_tuning_runs_play_no_held_out_or_validation_seed_and_no_two_runs_share_one():
    from agents.rollout import training_seed
    played = [{training_seed(agent_study_groups.fine_tune_seed(index), episode) for episode in range(1000)}
              for index in range(5)]
    for index, seeds in enumerate(played):
        assert not seeds & set(range(0, 10_000))  # held-out seeds from 1000, validation seeds from 500
        assert all(not seeds & other for other in played[index + 1:])


def test_a_fine_tuned_variant_is_named_by_every_option_set():
    tuning = agent_study_groups.FineTuning
    assert tuning(10).name("no-probing") == "no-probing +ft10"
    assert tuning(10, initial_eps=0.5).name("v") == "v +ft10-eps0.5"
    assert tuning(10, val_seeds=[500], initial_eps=1.0, head_only=True).name("v") == "v +ft10-eps1-head-val"
    assert tuning(3, head_only=True).record() == {"episodes": 3, "head_only": True}
    assert tuning(3, val_seeds=[500, 501], initial_eps=0.5).record() == {"episodes": 3, "val_seeds": [500, 501],
                                                                         "initial_eps": 0.5}


@pytest.mark.parametrize("item,message", [
    ("a=b", f"is not SETTING:NAME=GLOB with SETTING one of {', '.join(TRANSFER_SETTINGS)}$"),
    ("trained:a={file}", "is not SETTING:NAME=GLOB"),
    ("4x:a=/nonexistent/*.pt", "matches no file"),
])
def test_bad_scratch_items_are_refused_naming_the_item(tmp_path, item, message):
    (tmp_path / "c.pt").write_text("")
    with pytest.raises(ValueError, match=message):
        agent_study.parse_scratch([item.format(file=tmp_path / "c.pt")])


def test_a_scratch_variant_is_one_per_setting_and_trained_in_that_settings_federation(tmp_path):
    (tmp_path / "c.pt").write_text("")
    assert agent_study.parse_scratch([f"8x:s={tmp_path}/*.pt"]) == {"8x": ("s", [str(tmp_path / "c.pt")])}
    with pytest.raises(ValueError, match="names setting 4x twice"):
        agent_study.parse_scratch([f"4x:s={tmp_path}/*.pt", f"4x:t={tmp_path}/*.pt"])

    class Run:
        def __init__(self, **fields):
            self.env_config = EnvConfig(**fields)

    federation = EnvConfig()  # 10 clients, 10 candidates per round
    agent_study_groups.check_scratch(federation, "4x", "s", [Run(num_clients=40, probing=False, device="cpu")])
    with pytest.raises(ValueError, match=r"--scratch 8x:s: .* num_clients=40 \(setting 8x: 80\)"):
        agent_study_groups.check_scratch(federation, "8x", "s", [Run(num_clients=80), Run(num_clients=40)])
    with pytest.raises(ValueError, match=r"num_rounds=10 \(setting 4x: 20\)"):
        agent_study_groups.check_scratch(federation, "4x", "s", [Run(num_clients=40, num_rounds=10)])


def test_fine_tuned_runs_are_reused_only_for_the_same_episodes_checkpoints_and_seeds(tmp_path, monkeypatch):
    from fedenv.baselines import make_policy

    calls = []

    def fake_fine_tune(checkpoint, config, episodes, seed, initial_eps=None, head_only=False):  # a fixed policy
        calls.append((str(checkpoint), episodes, seed) + (() if initial_eps is None else (initial_eps,)))
        return make_policy("fastest")

    def fake_fine_tune_validated(checkpoint, config, episodes, seed, val_seeds, initial_eps=None, head_only=False):
        calls.append((str(checkpoint), episodes, seed, val_seeds) + (() if initial_eps is None else (initial_eps,)))
        return make_policy("fastest"), checkpoint.name == "a.pt"  # a.pt keeps its fine-tuned weights

    monkeypatch.setattr(agent_study_groups, "fine_tune", fake_fine_tune)
    monkeypatch.setattr(agent_study_groups, "fine_tune_validated", fake_fine_tune_validated)
    config, path = EnvConfig(**QUICK_FEDERATION), tmp_path / "4x" / "v +ft1.json"

    def group(checkpoints, episodes, seeds=(1000, 1001), val_seeds=None, initial_eps=None):
        calls.clear()
        tuning = agent_study_groups.FineTuning(episodes, val_seeds, initial_eps)
        per_episode = agent_study_groups.fine_tuned_group(path, config, "v +ft1", checkpoints, tuning, list(seeds))
        return calls[:], per_episode

    made, per_episode = group(["a.pt", "b.pt"], 1)
    assert made == [("a.pt", 1, 0), ("b.pt", 1, 1)]
    assert [(e["checkpoint"], e["seed"]) for e in per_episode["v +ft1"]] == [
        ("a.pt", 1000), ("a.pt", 1001), ("b.pt", 1000), ("b.pt", 1001)]
    made, again = group(["a.pt", "b.pt"], 1)  # the same key: read back, nothing fine-tuned
    assert made == [] and [e["team_return"] for e in again["v +ft1"]] == [e["team_return"]
                                                                          for e in per_episode["v +ft1"]]
    assert group(["a.pt", "b.pt"], 2)[0] == [("a.pt", 2, 0), ("b.pt", 2, 1)]  # other episodes
    assert group(["a.pt", "c.pt"], 2)[0] == [("a.pt", 2, 0), ("c.pt", 2, 1)]  # other checkpoints
    assert group(["a.pt", "c.pt"], 2, seeds=(1000, 1002))[0] == [("a.pt", 2, 0), ("c.pt", 2, 1)]  # other seeds
    assert group(["a.pt", "c.pt"], 2, seeds=(1000, 1002))[0] == []
    assert group(["a.pt", "c.pt"], 2, seeds=(1000, 1002), initial_eps=0.5)[0] == [("a.pt", 2, 0, 0.5),
                                                                                  ("c.pt", 2, 1, 0.5)]  # re-annealed
    assert group(["a.pt", "c.pt"], 2, seeds=(1000, 1002), initial_eps=0.5)[0] == []
    assert group(["a.pt", "c.pt"], 2, seeds=(1000, 1002), val_seeds=[500], initial_eps=0.5)[0] == [
        ("a.pt", 2, 0, [500], 0.5), ("c.pt", 2, 1, [500], 0.5)]  # both: validated and re-annealed
    made, validated = group(["a.pt", "c.pt"], 2, seeds=(1000, 1002), val_seeds=[500])  # kept where validation says
    assert made == [("a.pt", 2, 0, [500]), ("c.pt", 2, 1, [500])]
    assert [(e["checkpoint"], e["kept_fine_tuned"]) for e in validated["v +ft1"]] == [
        ("a.pt", True), ("a.pt", True), ("c.pt", False), ("c.pt", False)]
    assert agent_study_groups.kept_runs(validated["v +ft1"]) == {"kept_runs": 1, "runs": 2}
    assert agent_study_groups.kept_runs(per_episode["v +ft1"]) == {}
    assert group(["a.pt", "c.pt"], 2, seeds=(1000, 1002), val_seeds=[500])[0] == []


def test_a_group_read_back_from_the_cache_equals_the_group_evaluated_fresh(tmp_path, monkeypatch):
    # a schedule's group: FedAvg, the reference of rounds_to_fedavg, is not in it, so that metric is not a number
    config, path = EnvConfig(**QUICK_FEDERATION), tmp_path / "trained" / "schedules.json"
    fresh = agent_study_groups.evaluate_group(path, config, agent_study_groups.schedules("1:1", config.num_rounds),
                                              [1000, 1001], probing=False)
    assert len(fresh["schedule 1:1"]) == 2
    assert all(e["rounds_to_fedavg"] is None or math.isnan(e["rounds_to_fedavg"]) for e in fresh["schedule 1:1"])

    def no_evaluation(*args, **kwargs):
        raise AssertionError("a cached group was evaluated again")

    monkeypatch.setattr(agent_study_groups, "evaluate_policies", no_evaluation)
    cached = agent_study_groups.evaluate_group(path, config, agent_study_groups.schedules("1:1", config.num_rounds),
                                               [1000, 1001], probing=False)
    assert cached == fresh


def test_a_scratch_variant_of_a_setting_not_evaluated_is_refused_naming_the_item_and_why(tmp_path, capsys):
    (tmp_path / "c.pt").write_text("")  # refused before it is loaded
    for options, setting, why in [
        (["--settings", "trained"], "4x", "not in --settings trained"),
        (["--transfer-variants"], "4x", "no variant transfers: --transfer-variants without names"),
        ([], "8x", "--quick evaluates trained and 4x only"),
    ]:
        item = f"{setting}:s={tmp_path / 'c.pt'}"
        with pytest.raises(SystemExit):
            agent_study.main(["--quick", "--out", str(tmp_path), *options, "--scratch", item])
        assert f"--scratch {item!r}: setting {setting} is not evaluated ({why})" in capsys.readouterr().err
    assert not (tmp_path / "trained").exists()  # refused before anything is evaluated


def test_each_setting_changes_the_training_federation_only_in_the_fields_it_names():
    # mnist5k: 5,000 digits less 100 test digits per class = 4,000 training samples; 100 clients need a larger
    # trace at 4x and 8x (the default trace holds 100)
    for federation in (EnvConfig(), EnvConfig(num_clients=100)):
        for name, setting in SETTINGS.items():
            config = setting_config(federation, name, data_root="/data")
            changed = set(config_differences(federation, config, ignore=())["trained_on"])
            assert changed <= set(setting.fields) and bool(changed) == (name != "trained"), name
            assert setting.description and setting.at
    assert "trained" in SETTINGS and "trained" not in TRANSFER_SETTINGS
    assert set(TRANSFER_SETTINGS) == set(SETTINGS) - {"trained"}


def test_the_settings_configurations_worked_by_hand():
    federation = EnvConfig(num_clients=6, clients_per_round=3, local_epochs=2)
    assert (setting_config(federation, "4x").num_clients, setting_config(federation, "4x").clients_per_round) == (24, 3)
    assert setting_config(federation, "8x").num_clients == 48
    assert setting_config(federation, "epochs-1").local_epochs == 1
    assert setting_config(federation, "epochs-5").local_epochs == 5
    fmnist = setting_config(federation, "fmnist", data_root="/data")
    assert (fmnist.dataset, fmnist.data_root, fmnist.train_samples, fmnist.model) == ("fashion-mnist", "/data", 4000,
                                                                                       "mlp")
    # a federation that partitioned a subset keeps its size; --data-root replaces where the data is
    subset = dataclasses.replace(federation, dataset="mnist", data_root="/mnist", train_samples=1500)
    assert setting_config(subset, "fmnist", data_root="/fashion").train_samples == 1500
    assert setting_config(subset, "4x").data_root == "/mnist"  # the other settings keep the federation's
    assert setting_config(federation, "devices").trace == "held-out-devices"
    # the default trace holds 100 clients: 24 and 48 draw from it, 400 and 800 from the trace of 800 clients that
    # extends it; another trace is kept (and, too small, refused when the episode is built)
    assert (setting_config(federation, "4x").trace, setting_config(federation, "8x").trace) == ("default", "default")
    task100 = EnvConfig(num_clients=100, clients_per_round=10)
    assert [(c.num_clients, c.clients_per_round, c.trace) for c in
            (setting_config(task100, s) for s in ("4x", "8x"))] == [(400, 10, "default-800"), (800, 10, "default-800")]
    assert setting_config(EnvConfig(num_clients=100, trace="held-out-devices"), "4x").trace == "held-out-devices"
    assert setting_config(federation, "lenet5").model == "lenet5"


def test_the_held_out_and_model_settings_refuse_a_federation_they_would_not_change_or_not_hold_out():
    with pytest.raises(ValueError, match=r"setting devices: .*trace='other.json'.* must replay trace='default'"):
        setting_config(EnvConfig(trace="other.json"), "devices")
    with pytest.raises(ValueError, match=r"setting lenet5: .*model='lenet5' is the training federation's own"):
        setting_config(EnvConfig(model="lenet5"), "lenet5")


def test_a_setting_that_cannot_be_built_is_refused_naming_it(monkeypatch):
    federation = EnvConfig()
    with pytest.raises(ValueError, match=r"unknown setting '16x'; allowed: trained, "):
        setting_config(federation, "16x")
    with pytest.raises(ValueError, match=r"setting fmnist .* needs --data-root DIR"):
        setting_config(federation, "fmnist")
    longer = Setting(lambda c: dataclasses.replace(c, history_length=c.history_length + 1), ("history_length",),
                     "a longer history", "with a longer history")
    monkeypatch.setitem(agent_study_settings.SETTINGS, "longer-history", longer)
    with pytest.raises(ValueError, match="setting longer-history: its observation layout differs"):
        setting_config(federation, "longer-history")
    no_epochs = Setting(lambda c: dataclasses.replace(c, local_epochs=0), ("local_epochs",), "none", "at none")
    monkeypatch.setitem(agent_study_settings.SETTINGS, "epochs-0", no_epochs)
    with pytest.raises(ValueError, match="setting epochs-0: cannot build its configuration: local_epochs=0"):
        setting_config(federation, "epochs-0")


def test_fmnist_is_in_the_default_settings_only_with_a_data_root_and_refused_without(tmp_path, capsys):
    assert "fmnist" not in agent_study.default_settings(None)
    assert agent_study.default_settings("/data") == list(SETTINGS)
    with pytest.raises(SystemExit):
        agent_study.main(["--quick", "--out", str(tmp_path), "--settings", "trained", "fmnist"])
    assert "--settings fmnist: needs --data-root DIR" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        agent_study.main(["--quick", "--out", str(tmp_path), "--settings", "16x"])
    assert "invalid choice: '16x'" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # refused before anything is trained or evaluated


def test_the_bars_and_headings_of_a_new_transfer_setting_use_its_registry_entry():
    rows = {"epochs-5": {"v": {"ratio": 1.2, "ratio_low": 1.01, "ratio_high": 1.4,
                               "ft_minus_zero_shot": {"variant": "v +ft10", "difference": -0.01, "low": -0.03,
                                                      "high": -0.001}}},
            "fmnist": {"v": {"ratio": 1.5, "ratio_low": 0.95, "ratio_high": 2.0}}}
    assert agent_study_rows.bars(rows, "v") == [
        ("at 5 local epochs: return at least 1.2x the best fixed policy's, interval above 1", True),
        ("at 5 local epochs: v +ft10 minus v not worse (interval's upper bound >= 0)", False),
        ("at 5 local epochs: v +ft10 better than v where v trails an agent trained there from scratch: not "
         "measured (no --scratch epochs-5:NAME=GLOB)", None),
        ("on Fashion-MNIST: return at least 1.2x the best fixed policy's, interval above 1", False)]
    assert agent_study_page.policy_table("epochs-1", [])[0] == (
        "**All policies, setting `epochs-1`** (the training federation with 1 local epoch per round (the probing "
        "epoch only)):")


def test_the_generated_command_names_settings_other_than_the_default_also_under_quick():
    parser = agent_study.build_parser()
    base = ["--runs", "v=runs/v/seed_*/best.pt", "--out", "results/x"]
    default = parser.parse_args(base)
    default.settings = agent_study.default_settings(None)
    assert agent_study.command_line(default) == ("python -m benchmarks.agent_study --runs v=runs/v/seed_*/best.pt "
                                                "--out results/x")
    chosen = parser.parse_args([*base, "--settings", "trained", "8x"])
    assert agent_study.command_line(chosen) == ("python -m benchmarks.agent_study --runs v=runs/v/seed_*/best.pt "
                                               "--settings trained 8x --out results/x")
    # the held-out seeds and the schedules' grid change every number: named where they are not the default
    grid = parser.parse_args([*base, "--settings", "trained", "--episodes", "12", "--grid", "1:3,2:3"])
    assert agent_study.command_line(grid) == ("python -m benchmarks.agent_study --runs v=runs/v/seed_*/best.pt "
                                             "--settings trained --episodes 12 --grid 1:3,2:3 --out results/x")
    quick = parser.parse_args(["--quick", "--settings", "trained", "--transfer-variants", "--section", "s",
                               "--no-readme", "--out", "results/q"])
    assert agent_study.command_line(quick) == ("python -m benchmarks.agent_study --quick --transfer-variants "
                                               "--settings trained --section s --no-readme --out results/q")
    # the data folder is the reader's: the command names it DIR, not the folder of the machine that wrote the page
    with_data = parser.parse_args([*base, "--settings", "fmnist", "--data-root", "/home/me/data"])
    assert agent_study.command_line(with_data) == ("python -m benchmarks.agent_study --runs v=runs/v/seed_*/best.pt "
                                                   "--settings fmnist --data-root DIR --out results/x")


def q_weights(policy):
    return [t.clone() for t in policy.q.state_dict().values()]


def same_weights(a, b):
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


@pytest.mark.parametrize("zero_shot_score, tuned_score, keeps", [(0.5, 0.4, "zero-shot"), (0.5, 0.5, "zero-shot"),
                                                                 (0.4, 0.5, "fine-tuned")])
def test_validated_fine_tuning_keeps_the_weights_that_score_higher_on_the_validation_seeds(
        tmp_path, monkeypatch, zero_shot_score, tuned_score, keeps):
    from agents.policy import GreedyPolicy
    from agents.validation import Validation

    run_dir = tmp_path / "run"
    common.train_agent(EnvConfig(**QUICK_FEDERATION), agent_study.QUICK_EPISODES, 0, run_dir,
                       VDNConfig(**agent_study.QUICK_VDN))
    checkpoint = common.checkpoint_path(run_dir)
    four_x = dataclasses.replace(EnvConfig(**QUICK_FEDERATION), num_clients=12)
    start = q_weights(GreedyPolicy.from_checkpoint(checkpoint))
    plain = q_weights(common.fine_tune(checkpoint, four_x, 2, 0))
    assert same_weights(q_weights(common.fine_tune(checkpoint, four_x, 2, 0)), plain)  # deterministic
    assert not same_weights(plain, start)  # fine-tuning moved the weights, so the choice below is visible
    scored = []

    def fake_validate(policy, env, seeds):  # the zero-shot weights (the checkpoint's) score zero_shot_score
        assert env.config == four_x and seeds == [500, 501]
        is_start = same_weights(q_weights(policy), start)
        scored.append(is_start)
        return Validation(zero_shot_score if is_start else tuned_score, 0.0)

    monkeypatch.setattr(common, "validate", fake_validate)
    chosen, kept = common.fine_tune_validated(checkpoint, four_x, 2, 0, [500, 501])
    assert sorted(scored) == [False, True]  # both policies were validated, once each
    assert same_weights(q_weights(chosen), start if keeps == "zero-shot" else plain)
    assert kept is (keeps == "fine-tuned")
    with pytest.raises(ValueError, match=r"validation seeds \[10000\]"):
        common.fine_tune_validated(checkpoint, four_x, 2, 0, [10000])


def test_fine_tuning_a_run_whose_margin_weight_faded_keeps_the_final_weight(tmp_path, monkeypatch):
    from agents.vdn import VDNLearner

    run_dir = tmp_path / "run"
    fading = dataclasses.replace(VDNConfig(**agent_study.QUICK_VDN), demonstrator="fastest", demonstration_weight=10.0,
                                 demonstration_final_weight=0.5)
    common.train_agent(EnvConfig(**QUICK_FEDERATION), agent_study.QUICK_EPISODES, 0, run_dir, fading)
    passed = []
    update = VDNLearner.update
    monkeypatch.setattr(VDNLearner, "update", lambda self, data, margin_weight=None: passed.append(margin_weight)
                        or update(self, data, margin_weight))
    common.fine_tune(common.checkpoint_path(run_dir), EnvConfig(**QUICK_FEDERATION), 2, 0)
    assert passed and set(passed) == {0.5}  # the run's final weight, not its initial 10


def test_re_annealed_fine_tuning_starts_at_the_given_epsilon_and_falls_to_the_final_one(tmp_path, monkeypatch):
    import agents.trainer

    run_dir = tmp_path / "run"
    common.train_agent(EnvConfig(**QUICK_FEDERATION), agent_study.QUICK_EPISODES, 0, run_dir,
                       VDNConfig(**agent_study.QUICK_VDN))
    played = []
    epsilon = agents.trainer.exploration_epsilon
    monkeypatch.setattr(agents.trainer, "exploration_epsilon",
                        lambda r, episodes, config: played.append(epsilon(r, episodes, config)) or played[-1])
    common.fine_tune(common.checkpoint_path(run_dir), EnvConfig(**QUICK_FEDERATION), 2, 0)
    assert played == pytest.approx([0.05] * 4)  # 2 episodes x 2 rounds at the run's final epsilon
    played.clear()
    common.fine_tune(common.checkpoint_path(run_dir), EnvConfig(**QUICK_FEDERATION), 2, 0, initial_eps=0.5)
    # by hand: from 0.5 to 0.05 over half (exploration_fraction) of the 4 steps, then 0.05
    assert played == pytest.approx([0.5, 0.275, 0.05, 0.05])
    with pytest.raises(ValueError, match=r"initial_eps=0.01 must lie in \[0.05, 1\]"):
        common.fine_tune(common.checkpoint_path(run_dir), EnvConfig(**QUICK_FEDERATION), 2, 0, initial_eps=0.01)


def test_head_only_fine_tuning_moves_the_output_layer_alone(tmp_path):
    from agents.networks import output_layer
    from agents.policy import GreedyPolicy

    run_dir = tmp_path / "run"
    common.train_agent(EnvConfig(**QUICK_FEDERATION), agent_study.QUICK_EPISODES, 0, run_dir,
                       VDNConfig(**agent_study.QUICK_VDN))
    checkpoint, four_x = common.checkpoint_path(run_dir), dataclasses.replace(EnvConfig(**QUICK_FEDERATION),
                                                                              num_clients=12)
    start = GreedyPolicy.from_checkpoint(checkpoint).q
    head = {id(p) for p in output_layer(start).parameters()}
    names = {name for name, p in start.named_parameters() if id(p) in head}
    assert names == {"net.4.weight", "net.4.bias"}  # Linear, ReLU, Linear, ReLU, Linear: hidden (64, 64)
    for head_only, moved in ((True, names), (False, {name for name, _ in start.named_parameters()})):
        tuned = dict(common.fine_tune(checkpoint, four_x, 3, 0, head_only=head_only).q.named_parameters())
        changed = {name for name, p in start.named_parameters() if not torch.equal(p, tuned[name])}
        assert changed == moved, head_only


def test_the_quick_study_re_anneals_fine_tuning_into_a_variant_of_its_own(tmp_path, monkeypatch, capsys):
    seen = []

    def spy(checkpoint, config, episodes, seed, initial_eps=None, head_only=False):
        seen.append(initial_eps)
        return common.fine_tune(checkpoint, config, episodes, seed, initial_eps=initial_eps)

    monkeypatch.setattr(agent_study_groups, "fine_tune", spy)
    assert agent_study.main(["--quick", "--fine-tune-initial-eps", "0.5", "--settings", "4x",
                             "--out", str(tmp_path)]) == 0
    assert seen == [0.5, 0.5]  # each of the two runs
    rows = json.loads((tmp_path / "rows.json").read_text())["rows"]["4x"]
    assert list(rows) == ["main-job", "main-job +ft1-eps0.5"]
    assert json.loads((tmp_path / "4x" / "main-job +ft1-eps0.5.json").read_text())["key"]["fine_tune"][
        "initial_eps"] == 0.5
    assert "exploration re-annealed from epsilon 0.5" in agent_study_page.fine_tune_table("4x", rows)[0]
    assert "--fine-tune-initial-eps 0.5" in capsys.readouterr().out  # in the command the page names
    assert agent_study.main(["--quick", "--fine-tune-head-only", "--settings", "4x", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "rows.json").read_text())["rows"]["4x"]
    assert list(rows) == ["main-job", "main-job +ft1-head"]
    assert json.loads((tmp_path / "4x" / "main-job +ft1-head.json").read_text())["key"]["fine_tune"]["head_only"]
    assert "only the Q-network's output layer trained" in agent_study_page.fine_tune_table("4x", rows)[0]
    assert "--fine-tune-head-only" in capsys.readouterr().out
    for argv, message in [(["--runs", "v=missing.pt", "--fine-tune-episodes", "10", "--settings", "trained"],
                           r"--fine-tune-episodes=10: no transfer setting is evaluated \(--settings trained\)"),
                          (["--runs", "v=missing.pt", "--fine-tune-episodes", "10", "--transfer-variants"],
                           r"--fine-tune-episodes=10: no transfer setting is evaluated \(--transfer-variants without"),
                          (["--runs", "v=missing.pt", "--fine-tune-head-only"],
                           r"--fine-tune-head-only without fine-tuning \(--fine-tune-episodes N, N > 0\)"),
                          (["--runs", "v=missing.pt", "--fine-tune-initial-eps", "0.5"],
                           r"--fine-tune-initial-eps without fine-tuning \(--fine-tune-episodes N, N > 0\)"),
                          (["--quick", "--fine-tune-initial-eps", "0.123456789"],
                           r"--fine-tune-initial-eps=0.123456789: give at most 6 significant digits .* 0.123457\)"),
                          (["--quick", "--fine-tune-initial-eps", "0.05"],
                           r"--fine-tune-initial-eps=0.05 is every run's final epsilon"),
                          (["--quick", "--fine-tune-initial-eps", "1.5"],
                           r"--fine-tune-initial-eps=1.5 must lie in \(0, 1\]"),
                          (["--quick", "--fine-tune-initial-eps", "0.01"],
                           r"--fine-tune-initial-eps=0.01 is below the final epsilon 0.05 of main-job's run .*seed_0")]:
        with pytest.raises(SystemExit):
            agent_study.main([*argv, "--out", str(tmp_path)])
        assert re.search(message, capsys.readouterr().err)


def test_fine_tune_validation_seeds_are_refused_without_fine_tuning_or_on_held_out_seeds(tmp_path, capsys):
    with pytest.raises(SystemExit):
        agent_study.main(["--runs", "v=missing.pt", "--fine-tune-val-seeds", "500", "--out", str(tmp_path)])
    assert "--fine-tune-val-seeds without --fine-tune-episodes" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        agent_study.main(["--quick", "--fine-tune-val-seeds", "500", "1001", "--out", str(tmp_path)])
    assert "--fine-tune-val-seeds 1001: held-out seeds" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        agent_study.main(["--quick", "--fine-tune-val-seeds", "10000", "--out", str(tmp_path)])
    assert "validation seeds [10000] must be in [0, 10000)" in capsys.readouterr().err
    assert not (tmp_path / "quick_runs").exists()  # refused before anything was trained


def test_the_quick_study_fine_tunes_with_validation_into_a_variant_of_its_own(tmp_path, monkeypatch):
    seen = []

    def spy(checkpoint, config, episodes, seed, val_seeds, initial_eps=None, head_only=False):
        seen.append(val_seeds)
        return common.fine_tune_validated(checkpoint, config, episodes, seed, val_seeds)

    monkeypatch.setattr(agent_study_groups, "fine_tune_validated", spy)
    assert agent_study.main(["--quick", "--fine-tune-val-seeds", "500", "501", "--settings", "4x",
                             "--out", str(tmp_path)]) == 0
    assert seen == [[500, 501], [500, 501]]  # each of the two runs
    rows = json.loads((tmp_path / "rows.json").read_text())["rows"]["4x"]
    assert list(rows) == ["main-job", "main-job +ft1-val"]
    assert rows["main-job"]["ft_minus_zero_shot"]["variant"] == "main-job +ft1-val"
    document = json.loads((tmp_path / "4x" / "main-job +ft1-val.json").read_text())
    assert document["key"]["fine_tune"]["val_seeds"] == [500, 501]
    kept = {e["checkpoint"]: e["kept_fine_tuned"] for e in document["per_episode"]["main-job +ft1-val"]}
    tuned = rows["main-job"]["ft_minus_zero_shot"]
    assert (tuned["kept_runs"], tuned["runs"]) == (sum(kept.values()), 2)
    printed = agent_study_page.fine_tune_table("4x", rows)
    assert any(f"| main-job +ft1-val ({tuned['kept_runs']} of 2 runs kept their fine-tuned weights) | main-job |"
               in line for line in printed)
    assert "kept only where they beat its zero-shot weights" in printed[0]


def test_reference_policies_get_their_own_columns_and_rows_and_bad_ones_are_refused(tmp_path, capsys):
    references = ["stale-fastest:last_rounds=1", "late-rounds:k=2,last_rounds=0"]
    assert agent_study.main(["--quick", "--out", str(tmp_path), "--settings", "trained",
                             "--references", *references]) == 0
    printed = capsys.readouterr().out
    episodes = {}
    for group in ("main-job", "references"):
        episodes.update(json.loads((tmp_path / "trained" / f"{group}.json").read_text())["per_episode"])
    assert all(e["probing"] is False for name in references for e in episodes[name])  # their own mode: no probing
    mean = {name: np.mean([e["team_return"] for e in eps]) for name, eps in episodes.items()}
    best = max(references, key=mean.get)
    r = json.loads((tmp_path / "rows.json").read_text())["rows"]["trained"]["main-job"]
    assert r["best_reference"] == best and r["minus_reference"] == pytest.approx(mean["main-job"] - mean[best])
    assert "| best schedule | minus best schedule | best reference | minus best reference |" in printed
    assert f"{best} ({mean[best]:.3f}) | {r['minus_reference']:+.3f}" in printed
    assert all(f"| {name} | reference | no probing | 1 x 2 |" in printed for name in references)
    assert "--references stale-fastest:last_rounds=1 late-rounds:k=2,last_rounds=0" in printed  # the command
    assert not any(text.startswith("- ") and "reference" in text for text in printed.splitlines())  # no bar
    for item, message in (("fedavg", "fedavg is already a fixed policy of the bars"),
                          ("no-such-policy", "policy 'no-such-policy' is not known"),
                          ("stale-fastest", "last_rounds=3, drop=1: need .* num_rounds=2"),  # 2 quick rounds
                          ("stale-fastest:drop", "option 'drop' is not OPTION=VALUE")):
        with pytest.raises(SystemExit):
            agent_study.main(["--quick", "--out", str(tmp_path), "--settings", "trained", "--references", item])
        assert re.search(message, capsys.readouterr().err)
