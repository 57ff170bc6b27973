import numpy as np
import pytest
import torch

from fedenv.aggregation import weighted_average, weighted_sum


def test_weighted_average_by_hand():
    stacked = {"w": torch.tensor([[1.0, 2.0], [5.0, 6.0]]), "steps": torch.tensor([4, 8])}
    averaged = weighted_average(stacked, [1.0, 3.0])
    assert averaged["w"].tolist() == [4.0, 5.0]  # 0.25 * 1 + 0.75 * 5, 0.25 * 2 + 0.75 * 6
    assert averaged["steps"].dtype == torch.int64 and int(averaged["steps"]) == 7
    with pytest.raises(ValueError, match="not all 0"):
        weighted_average(stacked, torch.zeros(2))


def test_weighted_sum_applies_the_weights_as_given():
    stacked = {"w": torch.tensor([[1.0, 2.0], [5.0, 6.0]])}
    assert weighted_sum(stacked, np.array([0.5, 1.0]))["w"].tolist() == [5.5, 7.0]
    with pytest.raises(ValueError, match="need 2 aggregation weights, got shape"):
        weighted_sum(stacked, [1.0])
    with pytest.raises(ValueError, match="finite and >= 0"):
        weighted_sum(stacked, [1.0, -0.5])
