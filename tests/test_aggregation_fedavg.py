import numpy as np
import torch

from fedenv.aggregation import FedAvg, Uploads, fedavg_weights
from fedenv.config import EnvConfig


def test_fedavg_weights_by_hand():
    assert fedavg_weights([10.0, 30.0]).tolist() == [0.25, 0.75]


def test_fedavg_keeps_every_upload_weighted_by_its_share_of_the_uploaded_samples():
    rule = FedAvg(np.array([10.0, 30.0, 60.0]), EnvConfig())
    uploads = Uploads(np.array([2, 0]), {"w": torch.zeros(2, 1)}, {}, {"w": torch.zeros(1)}, np.array([60.0, 10.0]),
                      100.0, 3, lambda: torch.zeros(0), torch.zeros(0, dtype=torch.int64))
    kept, weights = rule.weights(uploads)
    assert kept.tolist() == [0, 1]
    assert weights.tolist() == [60 / 70, 10 / 70]
