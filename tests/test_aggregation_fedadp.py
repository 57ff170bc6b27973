import math

import numpy as np
import pytest
import torch

from fedenv.aggregation import FedAdp, Uploads, fedadp_weights
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv


def uploads(clients, updates, sizes):
    """Uploads whose models are ``w_global + update`` (the global model is zero)."""
    updates = torch.tensor(updates, dtype=torch.float64)
    return Uploads(np.array(clients), {"w": updates}, {}, {"w": torch.zeros(updates.shape[1], dtype=torch.float64)},
                   np.array(sizes, dtype=np.float64), 100.0, 3, lambda: torch.zeros(0), torch.zeros(0))


def test_fedadp_smooths_each_clients_angle_over_the_rounds_it_is_aggregated_in():
    config = EnvConfig(aggregation="fedadp", aggregation_options={"fedadp": {"alpha": 5.0}})
    rule = FedAdp(np.array([1.0, 1.0, 2.0]), config)
    kept, first = rule.weights(uploads([0, 1], [[1.0, 0.0], [0.0, 1.0]], [1.0, 1.0]))
    assert kept.tolist() == [0, 1]
    assert first == pytest.approx([0.5, 0.5])  # both at pi/4 from the mean update [0.5, 0.5]
    assert rule.smoothed_angle.tolist() == pytest.approx([math.pi / 4, math.pi / 4, 0.0])
    assert rule.participations.tolist() == [1, 1, 0]
    _, second = rule.weights(uploads([1, 2], [[0.0, 1.0], [1.0, 1.0]], [1.0, 2.0]))
    expected, smoothed = fedadp_weights(np.array([[0.0, 1.0], [1.0, 1.0]]), [1.0, 2.0],
                                        np.array([math.pi / 4, 0.0]), np.array([1, 0]), 5.0)
    assert second == pytest.approx(expected)
    assert rule.smoothed_angle.tolist() == pytest.approx([math.pi / 4, *smoothed])
    assert rule.participations.tolist() == [1, 2, 1]


def test_each_federation_has_its_own_fedadp_state():
    config = EnvConfig(aggregation="fedadp", num_clients=3, clients_per_round=3, num_rounds=3, device="cpu",
                       test_samples=100)
    first, second = ClientSelectionEnv(config), ClientSelectionEnv(config)
    first.reset(seed=3)
    _, _, _, _, round_one = first.step({a: 1 for a in first.agents})
    first.step({a: 1 for a in first.agents})
    second.reset(seed=3)
    _, _, _, _, alone = second.step({a: 1 for a in second.agents})
    assert first.simulator.federation.rule is not second.simulator.federation.rule
    assert first.simulator.federation.rule.participations.tolist() == [2, 2, 2]
    assert second.simulator.federation.rule.participations.tolist() == [1, 1, 1]
    assert [alone[a]["aggregation_weight"] for a in alone] == [round_one[a]["aggregation_weight"] for a in round_one]
    first.reset(seed=3)  # a new episode starts from fresh state
    assert first.simulator.federation.rule.participations.tolist() == [0, 0, 0]
