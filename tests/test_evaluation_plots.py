"""The plots: the Pareto front by hand, distinct styles for ten policies, and both figures written."""

from fedenv.evaluation import EpisodeRecord, pareto_front, plot_results
from fedenv.evaluation.plots import policy_styles

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


def test_plot_results_writes_the_summary_and_the_learning_curves(tmp_path):
    records = {name: [EpisodeRecord(name, seed, [0.1, 0.5, 0.6 + 0.01 * i], [0.1, 0.4, 0.5], [0.0, 2.0 + i, 4.0 + i],
                                    [2.0 + i, 2.0], [6.0, 6.0] if i < 4 else [1.0, 2.0 + i], [9.0, 9.0 + i],
                                    [0.1, 0.2], [3, 3])
                       for seed in (1, 2)] for i, name in enumerate(TEN)}
    paths = plot_results(records, tmp_path)
    assert set(paths) == {"summary", "learning_curves"}
    for path in paths.values():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
