import numpy as np
import pytest
import torch

from fedenv.aggregation import FedPdp, Uploads
from fedenv.config import EnvConfig


def test_fedpdp_weights_are_the_global_data_shares_scaled_by_all_over_uploading_clients():
    rule = FedPdp(np.array([10.0, 30.0, 20.0, 40.0]), EnvConfig(aggregation="fedpdp"))
    uploads = Uploads(np.array([1, 3]), {"w": torch.zeros(2, 1)}, {}, {"w": torch.zeros(1)}, np.array([30.0, 40.0]),
                      100.0, 4, lambda: torch.zeros(0), torch.zeros(0, dtype=torch.int64))
    kept, weights = rule.weights(uploads)
    assert kept.tolist() == [0, 1]
    # p_k |S| / |S_t| = (30 / 100) * 4 / 2, (40 / 100) * 4 / 2: not renormalised (sum 1.4)
    assert weights == pytest.approx([0.6, 0.8])
