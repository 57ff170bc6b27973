"""Aggregation weights and FedCA's subset search of fedenv.aggregators, worked by hand."""

import math

import numpy as np
import pytest
import torch

from fedenv.aggregation import fedadp_weights, fedca_subset, fedpdp_weights, gompertz


def test_fedadp_weights_for_three_clients_by_hand():
    updates = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    sizes = np.array([1.0, 1.0, 2.0])  # data-weighted mean update: [0.75, 0.75]
    previous = np.array([0.5, 1.0, 0.2])
    participations = np.array([1, 3, 0])
    weights, smoothed = fedadp_weights(updates, sizes, previous, participations, alpha=5.0)
    # angles to [0.75, 0.75]: pi/4, pi/4, 0; smoothing with t = 2, 4, 1
    expected_smoothed = [0.5 / 2 + (math.pi / 4) / 2, 3 / 4 * 1.0 + (math.pi / 4) / 4, 0.0]
    assert smoothed == pytest.approx(expected_smoothed)
    f = [5 * (1 - math.exp(-math.exp(-5 * (theta - 1)))) for theta in expected_smoothed]
    assert f == pytest.approx([4.98721, 3.64775, 5.0], abs=1e-4)
    scores = [1 * math.exp(f[0]), 1 * math.exp(f[1]), 2 * math.exp(f[2])]
    assert weights == pytest.approx([s / sum(scores) for s in scores])
    assert gompertz(np.array([1.0]), 5.0)[0] == pytest.approx(5 * (1 - math.exp(-1)))


def test_fedpdp_weights_by_hand():
    assert fedpdp_weights([10, 30], total_samples=100, num_clients=4) == pytest.approx([0.2, 0.6])


def biased_case():
    labels = torch.tensor([0, 1, 2, 3])
    eye = torch.eye(4)
    good_a = eye * 2.0
    good_a[3] = torch.tensor([0.0, 0.0, 1.0, 0.9])  # wrong on sample 3, narrowly
    good_b = eye * 2.0
    good_b[0] = torch.tensor([0.9, 0.0, 0.0, 1.0])  # wrong on sample 0, narrowly
    biased = torch.zeros(4, 4)
    biased[:, 0] = 10.0  # always predicts class 0
    return torch.stack([good_a, good_b, biased]), labels


@pytest.mark.parametrize("score", ["acc", "ce"])
def test_fedca_filters_the_biased_model(score):
    logits, labels = biased_case()
    assert fedca_subset(logits, labels, score).tolist() == [0, 1]  # together both good models are right 4/4


def test_fedca_greedy_search_above_ten_uploads_leaves_the_biased_model_out():
    logits, labels = biased_case()
    many = torch.cat([logits[:2].repeat(6, 1, 1), logits[2:]])  # 12 uploads, the biased one last
    chosen = fedca_subset(many, labels, "ce")
    assert 11 not in chosen.tolist() and len(chosen) >= 2
