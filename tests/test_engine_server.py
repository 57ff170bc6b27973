import numpy as np
import pytest
import torch

from fedenv.aggregation import AggregationRule, FedCA
from fedenv.config import EnvConfig
from fedenv.engine import Federation
from fedenv.models import build_model
from tests.test_engine_local_sgd import CONFIGS, generators, mnist5k, round_inputs


class Recorder(AggregationRule):
    """Keeps the second upload only, with weight 1, and records what it saw."""

    def weights(self, uploads):
        self.seen = uploads
        return np.array([1]), np.array([1.0])


def test_federation_round_aggregates_selected_clients_only():
    fed, _, _, _ = round_inputs("mlp", CONFIGS[0])
    before = {k: v.clone() for k, v in fed.global_params.items()}
    clients = np.array([1, 3])
    result = fed.local_train(clients, 1, generators(2))
    fed.aggregate(clients, result)
    sizes = torch.tensor([len(fed.client_indices[c]) for c in clients], dtype=torch.float64)
    expected = (result.params["net.1.bias"] * (sizes / sizes.sum()).float()[:, None]).sum(0)
    assert torch.allclose(fed.global_params["net.1.bias"], expected)
    fed.aggregate(np.array([], dtype=int), result.rows([]))  # nobody: unchanged
    assert torch.allclose(fed.global_params["net.1.bias"], expected)
    assert not torch.equal(before["net.1.bias"], expected)


def test_the_rule_sees_the_finite_uploads_and_its_weights_are_applied_as_given():
    data = mnist5k()
    shards = [np.arange(0, 40), np.arange(40, 100), np.arange(100, 130), np.arange(130, 150)]
    rule = Recorder([40, 60, 30, 20], EnvConfig())
    fed = Federation(build_model("mlp", (1, 28, 28), 10, seed=0), data, shards, CONFIGS[0], torch.device("cpu"),
                     rule, validation_indices=np.arange(200, 210))
    clients = np.array([3, 0, 2])
    result = fed.local_train(clients, 1, generators(3))
    result.params["net.1.bias"][1, 0] = float("nan")  # client 0 diverged
    outcome = fed.aggregate(clients, result)
    seen = rule.seen
    assert seen.clients.tolist() == [3, 2] and seen.data_sizes.tolist() == [20.0, 30.0]
    assert (seen.total_samples, seen.num_clients) == (150.0, 4)
    assert torch.equal(seen.params["net.1.bias"], result.params["net.1.bias"][[0, 2]])
    assert seen.validation_logits().shape == (2, 10, 10) and seen.validation_labels.shape == (10,)
    assert outcome.usable_rows.tolist() == [0, 2] and outcome.kept_rows.tolist() == [2]
    for name, p in fed.global_params.items():
        assert torch.equal(p, result.params[name][2]), name


def test_a_rule_that_needs_validation_refuses_a_federation_without_a_validation_split():
    data = mnist5k()
    shards = [np.arange(0, 40), np.arange(40, 100)]
    with pytest.raises(ValueError, match="FedCA needs a server validation split: set val_fraction > 0"):
        Federation(build_model("mlp", (1, 28, 28), 10, seed=0), data, shards, CONFIGS[0], torch.device("cpu"),
                   FedCA([40, 60], EnvConfig(aggregation="fedca")))
