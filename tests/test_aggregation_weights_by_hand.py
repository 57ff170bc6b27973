"""Weighted averaging of stacked models (fedenv.aggregation.weights) on real BatchNorm state dicts."""

import torch
from torch import nn

from fedenv.aggregation.weights import weighted_average


def test_fedavg_of_batchnorm_models_averages_statistics_and_keeps_integer_counters():
    def small_cnn(seed):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU())
        model(torch.randn(4, 1, 6, 6))  # training mode: updates the running statistics
        return model.state_dict()

    states = [small_cnn(0), small_cnn(1)]
    stacked = {name: torch.stack([s[name] for s in states]) for name in states[0]}
    averaged = weighted_average(stacked, torch.tensor([0.25, 0.75]))
    for name in ("1.running_mean", "1.running_var", "0.weight"):
        assert torch.allclose(averaged[name], 0.25 * states[0][name] + 0.75 * states[1][name])
    assert averaged["1.num_batches_tracked"].dtype == torch.int64
    assert int(averaged["1.num_batches_tracked"]) == 1  # both models ran one batch
