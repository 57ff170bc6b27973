"""The plots: the Pareto front by hand, distinct styles for ten policies, and both figures written."""

import numpy as np
import pytest

from fedenv.evaluation import EpisodeRecord, pareto_front, plot_results
from fedenv.evaluation.plots import overlap_offsets, policy_styles, zoom_limits
from fedenv.registry import POLICIES

TEN = ["fedavg", "random", "fedprox", "fedca", "fedcm-ucb", "fedcm-ts", "fedadp", "oort", "fastest", "vdn"]


def test_pareto_front_keeps_the_points_no_other_is_both_cheaper_and_more_accurate():
    costs = [10.0, 5.0, 20.0, 5.0, 30.0]
    accuracies = [0.8, 0.7, 0.9, 0.6, 0.9]
    # 3 is dominated by 1 (same cost, less accurate), 4 by 2 (same accuracy, dearer)
    assert pareto_front(costs, accuracies) == [1, 0, 2]
    assert pareto_front([1.0, 1.0], [0.5, 0.5]) == [0, 1]  # ties dominate neither


def test_ten_policies_get_ten_colours_and_ten_markers():
    styles = policy_styles(TEN)
    assert len({s["color"] for s in styles.values()}) == 10 and len({s["marker"] for s in styles.values()}) == 10


@pytest.mark.parametrize("count", [len(POLICIES) + 1, 15, 30])
def test_every_policy_gets_its_own_colour_and_marker_pair(count):
    # every registered policy and the learned one, and federations of baselines beyond them
    styles = policy_styles([f"policy-{i}" for i in range(count)])
    assert len({(s["color"], s["marker"]) for s in styles.values()}) == count
    assert len({s["marker"] for s in styles.values()}) == min(count, 15)


def test_overlapping_markers_are_spread_symmetrically_and_others_stay():
    # spans: x 100 .. 300 (200), y 0.80 .. 0.90 (0.10); tolerance 3 % of each
    xs = [300.0, 300.0, 304.0, 100.0, 300.0]
    ys = [0.900, 0.899, 0.898, 0.800, 0.850]
    # 0, 1, 2 within 6 (x) and 0.003 (y) of point 0: one group of three; 3 and 4 alone (4 is 0.05 below)
    np.testing.assert_array_equal(overlap_offsets(xs, ys), [-1.0, 0.0, 1.0, 0.0, 0.0])
    # on a log axis 300 and 304 are still close, 100 is far: the same groups
    np.testing.assert_array_equal(overlap_offsets(xs, ys, log_x=True), [-1.0, 0.0, 1.0, 0.0, 0.0])
    np.testing.assert_array_equal(overlap_offsets([5.0, 5.0], [0.5, 0.5]), [-0.5, 0.5])  # no span: all overlap


def test_zoom_limits_cover_the_means_and_the_emphasised_bands_of_the_last_points():
    # (seeds, points): fedavg's mean over seeds is (0.1, 0.8, 0.9), std (0, 0, 0.02); oort's (0.1, 0.7, 0.75)
    y = {"fedavg": np.array([[0.1, 0.8, 0.88], [0.1, 0.8, 0.92]]),
         "oort": np.array([[0.1, 0.6, 0.70], [0.1, 0.8, 0.80]])}
    # from point 1: lowest oort's mean 0.7 (its band is not drawn), highest fedavg's 0.9 + 0.02; margin 10 %
    low, high = zoom_limits(y, first=1)
    assert low == pytest.approx(0.7 - 0.022) and high == pytest.approx(0.92 + 0.022)


def test_plot_results_writes_the_summary_and_the_learning_curves(tmp_path):
    records = {name: [EpisodeRecord(name, seed, [0.1, 0.5, 0.6 + 0.01 * i], [0.1, 0.4, 0.5], [0.0, 2.0 + i, 4.0 + i],
                                    [2.0 + i, 2.0], [6.0, 6.0] if i < 4 else [1.0, 2.0 + i], [9.0, 9.0 + i],
                                    [0.1, 0.2], [3, 3])
                       for seed in (1, 2)] for i, name in enumerate(TEN)}
    paths = plot_results(records, tmp_path)
    assert set(paths) == {"summary", "learning_curves"}
    for path in paths.values():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
