"""fedavg-eq3 (FedCM's Eq. 3, Kim et al., arXiv 2012.03270) worked by hand: the clients not sampled keep
the current global model, so their share p_k of all samples stays on it."""

import numpy as np
import pytest
import torch

from fedenv.aggregation import FedAvg, FedAvgEq3, Uploads
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from tests.helpers import capture_uploads

SIZES = np.array([100.0, 200.0, 300.0, 400.0])   # 1,000 samples over 4 clients


def uploads(clients, params, global_params, buffers=None):
    return Uploads(np.array(clients), params, buffers or {}, global_params, SIZES[clients], SIZES.sum(), 4,
                   lambda: None, torch.zeros(0, dtype=torch.int64))


def test_two_of_four_clients_upload():
    # p = (0.1, 0.2, 0.3, 0.4); clients 1 and 3 upload (0.2 + 0.4), clients 0 and 2 keep w_t (0.1 + 0.3):
    # 0.4 * (1, 0) + 0.2 * (2, 5) + 0.4 * (4, -5) = (0.4 + 0.4 + 1.6, 0 + 1 - 2) = (2.4, -1.0).
    global_params = {"w": torch.tensor([1.0, 0.0])}
    params = {"w": torch.tensor([[2.0, 5.0], [4.0, -5.0]])}
    result = FedAvgEq3(SIZES, EnvConfig()).aggregate(uploads([1, 3], params, global_params))
    assert torch.allclose(result.params["w"], torch.tensor([2.4, -1.0]))
    assert result.kept_rows.tolist() == [0, 1]
    assert result.weights == pytest.approx([0.2, 0.4])
    # Ours averages the uploads only: 1/3 * (2, 5) + 2/3 * (4, -5) = (10/3, -5/3).
    ours = FedAvg(SIZES, EnvConfig()).aggregate(uploads([1, 3], params, global_params))
    assert torch.allclose(ours.params["w"], torch.tensor([10 / 3, -5 / 3]))


def test_every_client_uploading_is_fedavg_and_buffers_are_averaged_over_the_uploads():
    # All four upload: nothing sits on w_t, so the weights are FedAvg's (0.1, 0.2, 0.3, 0.4):
    # 0.1 * 0 + 0.2 * 10 + 0.3 * 20 + 0.4 * 30 = 2 + 6 + 12 = 20.
    global_params = {"w": torch.tensor([-7.0])}
    params = {"w": torch.tensor([[0.0], [10.0], [20.0], [30.0]])}
    # Clients 0 and 1 upload: running means averaged with p normalised, 1/3 * 3 + 2/3 * 6 = 5.
    buffers = {"running_mean": torch.tensor([[3.0], [6.0]])}
    rule = FedAvgEq3(SIZES, EnvConfig())
    assert torch.allclose(rule.aggregate(uploads([0, 1, 2, 3], params, global_params)).params["w"],
                          torch.tensor([20.0]))
    two = rule.aggregate(uploads([0, 1], {"w": params["w"][:2]}, global_params, buffers))
    # 0.7 * (-7) + 0.1 * 0 + 0.2 * 10 = -4.9 + 2 = -2.9.
    assert torch.allclose(two.params["w"], torch.tensor([-2.9]))
    assert torch.allclose(two.buffers["running_mean"], torch.tensor([5.0]))


def test_an_episode_runs_the_rule_by_its_registered_name():
    # 4 clients, 2 per round: after one round w_1 = (1 - p_a - p_b) w_0 + p_a w_a + p_b w_b, with p_k the
    # uploading clients' shares of all samples.
    env = ClientSelectionEnv(EnvConfig(aggregation="fedavg-eq3", num_clients=4, clients_per_round=2,
                                       num_rounds=2, device="cpu", test_samples=100, partition="iid"))
    env.reset(seed=0)
    federation = env.simulator.federation
    before = {name: p.clone() for name, p in federation.global_params.items()}
    captured = capture_uploads(federation)
    env.step({a: 1 for a in env.agents})
    seen = captured["uploads"]
    shares = seen.data_sizes / seen.total_samples
    for name, p in federation.global_params.items():
        stacked = seen.params[name].double()
        expected = (1 - shares.sum()) * before[name].double() + sum(
            s * stacked[i] for i, s in enumerate(shares))
        assert torch.allclose(p.double(), expected, atol=1e-6), name
