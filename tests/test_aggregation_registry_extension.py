"""A rule added from outside the package: one class and one registration line."""

import numpy as np
import pytest
import torch

from fedenv.aggregation import AggregationRule
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.registry import AGGREGATION_RULES


class UniformRule(AggregationRule):
    """Every upload with weight 1/K; records the uploads it saw."""

    def weights(self, uploads):
        self.seen = uploads
        k = len(uploads.clients)
        return np.arange(k), np.full(k, 1.0 / k)


@pytest.fixture
def toy_uniform():
    AGGREGATION_RULES.register("toy-uniform", UniformRule)
    yield
    AGGREGATION_RULES.unregister("toy-uniform")


def test_a_registered_rule_aggregates_an_episode(toy_uniform):
    env = ClientSelectionEnv(EnvConfig(aggregation="toy-uniform", num_clients=3, clients_per_round=3, num_rounds=2,
                                       device="cpu", test_samples=100))
    env.reset(seed=0)
    _, _, _, _, infos = env.step({a: 1 for a in env.agents})
    rule = env.simulator.federation.rule
    assert isinstance(rule, UniformRule)
    assert rule.seen.clients.tolist() == [0, 1, 2]
    assert [infos[a]["aggregation_weight"] for a in env.possible_agents if infos[a]["kept"]] == [1 / 3] * 3
    for name, p in env.simulator.federation.global_params.items():
        assert torch.allclose(p, rule.seen.params[name].mean(dim=0), atol=1e-7), name
        assert not torch.allclose(p, rule.seen.params[name][0])  # the uploads differ: a real average


def test_the_rule_is_gone_after_unregistering():
    assert "toy-uniform" not in AGGREGATION_RULES
    with pytest.raises(ValueError, match="aggregation='toy-uniform' is not known"):
        EnvConfig(aggregation="toy-uniform").validate()
