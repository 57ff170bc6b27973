"""Paired differences to a reference with bootstrap intervals (fedenv.evaluation.paired) on hand-made data."""

import math

import numpy as np
import pytest
from scipy import stats

from fedenv.evaluation.paired import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CONFIDENCE_LEVEL,
    compare_to_references,
    interval_label,
    mean_interval,
    paired_differences,
    paired_interval,
    reference_policies,
)
from fedenv.evaluation.tables import format_paired_table


def episodes(returns, accuracies=None, checkpoint=None, seeds=None):
    seeds = seeds or list(range(len(returns)))
    accuracies = accuracies or [0.5] * len(returns)
    return [{"seed": s, "checkpoint": checkpoint, "team_return": r, "final_accuracy": a}
            for s, r, a in zip(seeds, returns, accuracies)]


def test_a_constant_difference_has_a_zero_width_interval_at_that_value_however_much_the_seeds_differ():
    reference = np.array([0.0, 10.0, 20.0, 30.0, -5.0])  # the seeds differ far more than the policies
    difference, low, high = paired_interval(reference + 0.25, reference)
    assert difference == pytest.approx(0.25)
    assert low == pytest.approx(0.25, abs=1e-12) and high == pytest.approx(0.25, abs=1e-12)  # pairs kept
    assert interval_label(low, high) == "better"


def test_unpaired_seeds_would_be_wide_so_the_pairs_must_be_resampled_together():
    # the same values with the reference's seeds shuffled: the per-seed differences now vary widely
    reference = np.array([0.0, 10.0, 20.0, 30.0, -5.0])
    _, low, high = paired_interval(reference + 0.25, reference[[1, 2, 3, 4, 0]])
    assert high - low > 10


@pytest.mark.parametrize("differences,label", [([0.5, 1.0, 1.5, 2.0], "better"), ([-0.5, -1.0, -0.2, -3.0], "worse"),
                                               ([-1.0, 1.0, -1.0, 1.0], "level")])
def test_the_label_is_read_from_the_interval(differences, label):
    reference = np.array([1.0, 2.0, 3.0, 4.0])
    difference, low, high = paired_interval(reference + differences, reference)
    assert difference == pytest.approx(np.mean(differences))
    assert min(differences) <= low <= difference <= high <= max(differences)  # a mean of resampled pairs
    assert interval_label(low, high) == label


def test_training_runs_are_resampled_as_whole_runs():
    # two runs, constant over seeds: 0 and 2 above the reference; resampling the 2 runs gives a mean
    # of 0 (1/4), 1 (1/2) or 2 (1/4), so the 95 % percentile interval is [0, 2]: level, not "better"
    values = np.array([[0.0, 0.0, 0.0], [2.0, 2.0, 2.0]]) + np.array([3.0, 7.0, 1.0])
    difference, low, high = paired_interval(values, np.array([3.0, 7.0, 1.0]))
    assert (difference, low, high) == pytest.approx((1.0, 0.0, 2.0))
    assert interval_label(low, high) == "level"


def test_the_bootstrap_is_seeded():
    rng = np.random.default_rng(5)
    values, reference = rng.normal(0.1, 1.0, (3, 8)), rng.normal(0.0, 1.0, 8)
    assert paired_interval(values, reference, seed=1) == paired_interval(values, reference, seed=1)
    assert paired_interval(values, reference, seed=1) != paired_interval(values, reference, seed=2)


def test_fewer_than_two_seeds_give_no_interval_and_no_label():
    difference, low, high = paired_interval(np.array([2.0]), np.array([1.0]))
    assert difference == 1.0 and math.isnan(low) and math.isnan(high) and interval_label(low, high) is None


def test_shapes_that_do_not_pair_are_refused():
    with pytest.raises(ValueError, match=r"values of shape \(1, 3\) and reference of shape \(2,\) do not pair"):
        paired_interval(np.zeros(3), np.zeros(2))


def test_references_are_fedavg_and_the_fixed_policy_of_highest_mean_return():
    per_episode = {"fedavg": episodes([0.1, 0.2]), "oort": episodes([0.5, 0.4]), "random": episodes([0.3, 0.3]),
                   "vdn": episodes([0.9, 0.9], checkpoint="run0")}
    assert reference_policies(per_episode, ["fedavg", "oort", "random"]) == {"fedavg": "fedavg", "best_fixed": "oort"}
    assert compare_to_references(per_episode)[0] == {"fedavg": "fedavg", "best_fixed": "oort"}  # vdn is learned


def test_only_a_compared_baseline_is_the_yardstick_also_with_options_and_references_are_still_compared():
    from fedenv.baselines import compared_policies
    from fedenv.registry import POLICIES

    outside = [name for name in POLICIES if name not in compared_policies()]
    assert outside  # the registry holds references of ours (stale-fastest, late-rounds, ...)
    per_episode = {"fedavg": episodes([0.1, 0.2]), "oort": episodes([0.3, 0.3]),
                   "oort:select_fraction=0.5": episodes([0.4, 0.4]),
                   **{f"{name}:k=2" if i % 2 else name: episodes([0.9, 0.9]) for i, name in enumerate(outside)}}
    references, rows = compare_to_references(per_episode)
    assert references == {"fedavg": "fedavg", "best_fixed": "oort:select_fraction=0.5"}
    compared = {row["policy"] for row in rows if row["role"] == "best_fixed"}
    assert compared == set(per_episode) - {"oort:select_fraction=0.5"}


def test_paired_differences_pool_a_learned_policys_runs_and_keep_its_seeds_paired():
    per_episode = {"fedavg": episodes([1.0, 5.0, 9.0]),
                   "vdn": episodes([2.0, 6.0, 10.0], checkpoint="run0") + episodes([3.0, 7.0, 11.0], checkpoint="run1")}
    rows = paired_differences(per_episode, {"fedavg": "fedavg"}, metrics=("team_return",))
    (row,) = rows
    # per seed the runs are 1 and 2 above FedAvg: mean 1.5; resampling runs gives 1, 1.5 or 2
    assert (row["policy"], row["reference"], row["runs"], row["seeds"]) == ("vdn", "fedavg", 2, 3)
    assert (row["difference"], row["ci_low"], row["ci_high"]) == pytest.approx((1.5, 1.0, 2.0))
    assert row["label"] == "better"
    table = format_paired_table(rows)
    assert "paired difference to fedavg (FedAvg)" in table and "vdn: 2 runs" in table
    assert "+1.5000 [+1.0000, +2.0000] better" in table


def test_a_policy_on_other_seeds_than_the_reference_is_refused():
    per_episode = {"fedavg": episodes([1.0, 2.0]), "random": episodes([1.0, 2.0], seeds=[0, 7])}
    with pytest.raises(ValueError, match=r"ran seeds \[0, 7\], not the reference's \[0, 1\]"):
        paired_differences(per_episode, {"fedavg": "fedavg"})


def test_a_ratio_of_means_worked_by_hand_with_runs_resampled_as_whole_runs():
    # reference mean 2; two runs at 1x and 2x the reference on every seed: the ratio of the means is 1.5,
    # and resampling the 2 runs gives 1 (1/4), 1.5 (1/2) or 2 (1/4), so the 95 % interval is [1, 2]
    reference = np.array([1.0, 2.0, 3.0])
    values = np.array([reference, 2 * reference])
    assert paired_interval(values, reference, statistic="ratio") == pytest.approx((1.5, 1.0, 2.0))
    # one run at 1.2x on every seed: every resample of the pairs gives 1.2 exactly
    assert paired_interval(1.2 * reference, reference, statistic="ratio") == pytest.approx((1.2, 1.2, 1.2))


def test_a_ratio_is_of_the_means_not_the_mean_of_the_per_seed_ratios():
    # reference 1 and 4, policy 2 and 4: the means 3 and 2.5 give 1.2 (the per-seed ratios 2 and 1 average 1.5)
    assert paired_interval(np.array([2.0, 4.0]), np.array([1.0, 4.0]), statistic="ratio")[0] == pytest.approx(1.2)


def test_a_ratio_to_a_reference_whose_mean_is_not_positive_has_no_value_or_no_interval():
    # 1.2x a negative return is a worse return: no ratio and no interval
    reference = np.array([-0.5, -0.4, -0.6])
    assert all(math.isnan(x) for x in paired_interval(1.2 * reference, reference, statistic="ratio"))
    # a positive mean (0.05) whose resamples reach 0 and below: the ratio 0.5 / 0.05, but no interval
    ratio, low, high = paired_interval(np.full(4, 0.5), np.array([-1.0, 1.0, 0.1, 0.1]), statistic="ratio")
    assert ratio == pytest.approx(10.0) and math.isnan(low) and math.isnan(high)


def test_the_interval_of_one_run_is_scipys_bootstrap_of_the_per_seed_differences_on_the_same_seed():
    # one run on each side: the resampled pairs are scipy's resamples of the differences themselves (the same
    # generator draws the same indices), so a level or resample count other than the defaults would show
    rng = np.random.default_rng(3)
    values, reference = rng.normal(0.1, 1.0, 12), rng.normal(0.0, 1.0, 12)
    direct = stats.bootstrap((values - reference,), np.mean, n_resamples=BOOTSTRAP_RESAMPLES,
                             confidence_level=CONFIDENCE_LEVEL, method="percentile",
                             rng=np.random.default_rng(BOOTSTRAP_SEED))
    difference, low, high = paired_interval(values, reference)
    assert difference == pytest.approx(np.mean(values - reference), abs=1e-12)
    assert (low, high) == pytest.approx((direct.confidence_interval.low, direct.confidence_interval.high), rel=1e-12)
    assert CONFIDENCE_LEVEL == 0.95


def test_a_missing_or_repeated_seed_and_a_reference_of_several_runs_are_refused():
    with pytest.raises(ValueError, match=r"ran seeds \[0, 1\], not the reference's \[0, 1, 2\]"):
        paired_differences({"fedavg": episodes([1.0, 2.0, 3.0]), "random": episodes([1.0, 2.0])}, {"fedavg": "fedavg"})
    with pytest.raises(ValueError, match="checkpoint None has seed 0 twice"):
        paired_differences({"fedavg": episodes([1.0, 2.0]), "random": episodes([1.0, 2.0], seeds=[0, 0])},
                           {"fedavg": "fedavg"})
    two_runs = episodes([1.0, 2.0], checkpoint="a") + episodes([1.0, 2.0], checkpoint="b")
    with pytest.raises(ValueError, match="reference 'fedavg' ran from 2 checkpoints"):
        paired_differences({"fedavg": two_runs, "random": episodes([1.0, 2.0])}, {"fedavg": "fedavg"})


def test_of_fixed_policies_with_equal_mean_returns_the_first_in_the_comparison_is_the_best():
    per_episode = {"random": episodes([0.25, 0.25]), "oort": episodes([0.0, 0.5])}  # both means 0.25 exactly
    assert reference_policies(per_episode, ["oort", "random"])["best_fixed"] == "random"
    assert reference_policies(dict(reversed(per_episode.items())), ["oort", "random"])["best_fixed"] == "oort"


def test_an_unknown_statistic_is_refused_naming_the_allowed_ones():
    with pytest.raises(ValueError, match="statistic='quotient' is not known; allowed: difference, ratio"):
        paired_interval(np.ones(3), np.ones(3), statistic="quotient")


def test_a_reference_from_several_runs_has_its_runs_resampled_too():
    # the policy: one run, 1 above the seeds' baseline; the reference: two runs, 0 and 2 above it. The
    # difference of the means is 0; resampling the reference's 2 runs gives 1 - 0 (1/4), 1 - 1 (1/2) or
    # 1 - 2 (1/4), so the 95 % interval is [-1, 1]
    seeds = np.array([3.0, 7.0, 1.0])
    difference, low, high = paired_interval(seeds + 1.0, np.array([seeds, seeds + 2.0]))
    assert (difference, low, high) == pytest.approx((0.0, -1.0, 1.0))
    # one run on each side: the pairs alone, a zero-width interval at the constant difference
    assert paired_interval(seeds + 1.0, np.array([seeds])) == pytest.approx((1.0, 1.0, 1.0))


def test_the_mean_of_constant_values_has_a_zero_width_interval_at_that_value():
    assert mean_interval(np.full((3, 4), 0.7)) == pytest.approx((0.7, 0.7, 0.7), abs=1e-12)


def test_the_mean_of_one_run_is_the_plain_seed_bootstrap_of_scipy_on_the_same_seed():
    # one run: only the seeds are resampled, so the interval is scipy's percentile bootstrap of the mean of
    # the values themselves, drawn from the same generator (the same indices, hence the same resamples)
    values = np.array([0.3, 1.2, -0.4, 2.5, 0.9, 0.1])
    direct = stats.bootstrap((values,), np.mean, n_resamples=BOOTSTRAP_RESAMPLES, confidence_level=CONFIDENCE_LEVEL,
                             method="percentile", rng=np.random.default_rng(BOOTSTRAP_SEED))
    mean, low, high = mean_interval(values[None, :])
    assert mean == pytest.approx(0.7667, abs=1e-4)  # 4.6 / 6
    assert (low, high) == pytest.approx((direct.confidence_interval.low, direct.confidence_interval.high), rel=1e-12)
    assert low < mean < high


def test_two_seeds_resampled_give_the_mean_of_either_seed_or_of_both():
    # seeds 1 and 3: a resample draws seed values (1, 1), (1, 3), (3, 1) or (3, 3), means 1 (1/4), 2 (1/2)
    # or 3 (1/4), so the 95 % percentile interval is [1, 3]
    assert mean_interval(np.array([1.0, 3.0])) == pytest.approx((2.0, 1.0, 3.0))


def test_runs_that_differ_widen_the_interval_where_resampling_seeds_alone_would_not():
    # two runs, constant over seeds, at 1 and 3: on every seed the mean over runs is 2, so resampling the
    # seeds alone always gives 2 (zero width); resampling the 2 runs as wholes gives 1 (1/4), 2 (1/2) or
    # 3 (1/4), so the 95 % interval is [1, 3]
    values = np.array([[1.0, 1.0, 1.0], [3.0, 3.0, 3.0]])
    assert mean_interval(values) == pytest.approx((2.0, 1.0, 3.0))
    assert mean_interval(values.mean(axis=0)) == pytest.approx((2.0, 2.0, 2.0))  # the seeds-only resampling


def test_a_mean_without_an_interval_and_bad_values_refused():
    mean, low, high = mean_interval(np.array([[2.0], [4.0]]))  # one seed: no interval
    assert mean == 3.0 and math.isnan(low) and math.isnan(high)
    mean, low, high = mean_interval(np.array([1.0, math.nan, 2.0]))
    assert math.isnan(mean) and math.isnan(low) and math.isnan(high)
    with pytest.raises(ValueError, match=r"values of shape \(2, 2, 2\): give \(runs, seeds\) or \(seeds,\)"):
        mean_interval(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match=r"values of shape \(1, 0\)"):
        mean_interval(np.array([]))
    with pytest.raises(ValueError, match=r"confidence_level=1\.0 must be in"):
        mean_interval(np.ones(3), confidence_level=1.0)
