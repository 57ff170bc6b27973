"""fedenv.testing's conformance checks over every registered component, and that each check catches a
component that breaks its contract."""

import numpy as np
import pytest

from fedenv import testing
from fedenv.aggregation import AggregationResult, AggregationRule
from fedenv.registry import AGGREGATION_RULES, MODELS, PARTITIONERS, POLICIES


@pytest.mark.parametrize("name", AGGREGATION_RULES.names())
def test_every_registered_rule_conforms(name):
    testing.check_aggregation_rule(name)


@pytest.mark.parametrize("name", PARTITIONERS.names())
def test_every_registered_partitioner_conforms(name):
    testing.check_partitioner(name)


@pytest.mark.parametrize("name", MODELS.names())
def test_every_registered_model_conforms(name):
    testing.check_model_spec(name)


@pytest.mark.parametrize("name", POLICIES.names())
def test_every_registered_policy_conforms(name):
    testing.check_policy(name)


class Shifted(AggregationRule):
    """A coordinate-wise rule whose model is shifted off the uploads' range."""

    def aggregate(self, uploads):
        k = len(uploads.clients)
        params = {name: p.mean(dim=0) + 10.0 for name, p in uploads.params.items()}
        buffers = {name: b[0] for name, b in uploads.buffers.items()}
        return AggregationResult(params, buffers, np.arange(k), np.full(k, np.nan))


class DropsBias(AggregationRule):
    """Forgets a parameter."""

    def aggregate(self, uploads):
        result = super().aggregate(uploads)
        return AggregationResult({"w": result.params["w"]}, result.buffers, result.kept_rows, result.weights)

    def weights(self, uploads):
        k = len(uploads.clients)
        return np.arange(k), np.full(k, 1.0 / k)


class LiesAboutWeights(AggregationRule):
    """Reports weights that are not the ones it applied (it takes the first upload)."""

    def aggregate(self, uploads):
        k = len(uploads.clients)
        result = super().aggregate(uploads)
        first = {name: p[0].clone() for name, p in uploads.params.items()}
        return AggregationResult(first, result.buffers, result.kept_rows, result.weights + (k == 1))

    def weights(self, uploads):
        k = len(uploads.clients)
        return np.arange(k), np.full(k, 1.0 / k)


def overlapping(labels, owners, num_clients, rng, config):
    return [np.arange(0, 100)] * num_clients


def unseeded(labels, owners, num_clients, rng, config):
    return list(np.array_split(np.random.default_rng().permutation(len(labels)), num_clients))


@pytest.mark.parametrize(("rule", "message"), [
    (Shifted, "leaves the range"), (DropsBias, r"parameters \['w'\], expected \['b', 'w'\]"),
    (LiesAboutWeights, "not the weighted sum of its weights"),
])
def test_a_broken_rule_fails_the_rule_checks(rule, message):
    AGGREGATION_RULES.register("broken-rule", rule)
    try:
        with pytest.raises(AssertionError, match=message):
            testing.check_aggregation_rule("broken-rule")
    finally:
        AGGREGATION_RULES.unregister("broken-rule")


@pytest.mark.parametrize(("partitioner", "message"), [(overlapping, "clients share samples"),
                                                       (unseeded, "not reproducible")])
def test_a_broken_partitioner_fails_the_partitioner_checks(partitioner, message):
    PARTITIONERS.register("broken-partition", partitioner)
    try:
        with pytest.raises(AssertionError, match=message):
            testing.check_partitioner("broken-partition")
    finally:
        PARTITIONERS.unregister("broken-partition")


def test_a_policy_acting_for_non_candidates_fails_the_policy_check():
    from fedenv.baselines import Policy

    class EveryAgent(Policy):
        name = "every-agent"

        def act(self, observations, infos):
            return dict.fromkeys(observations, 1)

    POLICIES.register("every-agent", EveryAgent)
    try:
        with pytest.raises(AssertionError, match="acts for non-candidates"):
            testing.check_policy("every-agent")
    finally:
        POLICIES.unregister("every-agent")
