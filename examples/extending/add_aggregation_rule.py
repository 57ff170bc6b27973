"""Add an aggregation rule from outside the package (one class, one registration line) and play one
short episode with it (docs: "Extending").

    python examples/extending/add_aggregation_rule.py

A rule is a :class:`fedenv.aggregation.AggregationRule`; ``weights(uploads)`` returns the indices of
the uploads it keeps and their weights (summing to 1), ``uploads.clients`` the uploading clients.
"""

import numpy as np

import fedenv
from fedenv.aggregation import AggregationRule
from fedenv.registry import AGGREGATION_RULES


class UniformRule(AggregationRule):
    """Every upload with weight 1/K, whatever its client's data size (FedAvg weighs by data size)."""

    def weights(self, uploads):
        k = len(uploads.clients)
        return np.arange(k), np.full(k, 1.0 / k)


AGGREGATION_RULES.register("uniform", UniformRule)

env = fedenv.parallel_env(aggregation="uniform", num_clients=3, clients_per_round=3, num_rounds=2,
                          test_samples=100, device="cpu")
env.reset(seed=0)
_, _, _, _, infos = env.step({a: 1 for a in env.agents})
print("aggregation weights:", [round(infos[a]["aggregation_weight"], 4) for a in env.possible_agents])
