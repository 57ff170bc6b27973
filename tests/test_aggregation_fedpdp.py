import numpy as np
import pytest
import torch

from fedenv.aggregation import FedAvg, FedPdp, Uploads
from fedenv.config import EnvConfig


def uploads_of(clients, sizes, total, num_clients):
    k = len(clients)
    return Uploads(np.array(clients), {"w": torch.zeros(k, 1)}, {}, {"w": torch.zeros(1)}, np.array(sizes, float),
                   total, num_clients, lambda: torch.zeros(0), torch.zeros(0, dtype=torch.int64))


def test_the_literal_form_is_the_global_data_shares_scaled_by_all_over_uploading_clients():
    config = EnvConfig(aggregation="fedpdp", aggregation_options={"fedpdp": {"unnormalised": True}})
    rule = FedPdp(np.array([10.0, 30.0, 20.0, 40.0]), config)
    kept, weights = rule.weights(uploads_of([1, 3], [30.0, 40.0], 100.0, 4))
    assert kept.tolist() == [0, 1]
    # p_k |S| / |S_t| = (30 / 100) * 4 / 2, (40 / 100) * 4 / 2: not renormalised (sum 1.4)
    assert weights == pytest.approx([0.6, 0.8])


def test_by_default_the_weights_are_renormalised_to_sum_to_one():
    rule = FedPdp(np.array([10.0, 30.0, 20.0, 40.0]), EnvConfig(aggregation="fedpdp"))
    _, weights = rule.weights(uploads_of([1, 3], [30.0, 40.0], 100.0, 4))
    assert weights == pytest.approx([0.6 / 1.4, 0.8 / 1.4])


@pytest.mark.parametrize("sizes", [[50.0] * 6, [10.0, 30.0, 20.0, 40.0, 5.0, 95.0]])
def test_renormalised_fedpdp_equals_fedavg(sizes):
    sizes = np.array(sizes)
    uploads = uploads_of([0, 2, 5], sizes[[0, 2, 5]], sizes.sum(), len(sizes))
    pdp_kept, pdp = FedPdp(sizes, EnvConfig(aggregation="fedpdp")).weights(uploads)
    avg_kept, avg = FedAvg(sizes, EnvConfig()).weights(uploads)
    assert pdp_kept.tolist() == avg_kept.tolist()
    np.testing.assert_allclose(pdp, avg, rtol=1e-12)
    if len(set(sizes.tolist())) == 1:  # balanced clients: each of the 3 uploads weighs 1/3
        np.testing.assert_allclose(pdp, np.full(3, 1 / 3), rtol=1e-12)
