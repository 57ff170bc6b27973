"""FedPdp's weights (fedenv.aggregation.fedpdp), worked by hand."""

import pytest

from fedenv.aggregation.fedpdp import fedpdp_weights


def test_fedpdp_weights_by_hand():
    # p_k = n_k / 100, scaled by |S| / |S_t| = 4 / 2: 10 / 100 * 2 and 30 / 100 * 2
    assert fedpdp_weights([10, 30], total_samples=100, num_clients=4) == pytest.approx([0.2, 0.6])
