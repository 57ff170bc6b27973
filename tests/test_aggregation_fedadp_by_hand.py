"""FedAdp's weights (fedenv.aggregation.fedadp) for three clients, worked by hand."""

import math

import numpy as np
import pytest

from fedenv.aggregation.fedadp import fedadp_weights, gompertz


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


def test_gompertz_at_angle_one_by_hand():
    # f(1) = alpha * (1 - exp(-exp(0))) = alpha * (1 - 1/e)
    assert gompertz(np.array([1.0]), 5.0)[0] == pytest.approx(5 * (1 - math.exp(-1)))
