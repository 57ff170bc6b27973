"""The contract of every registered aggregation rule (:mod:`fedenv.aggregation.base`), over rounds drawn by
Hypothesis: :func:`fedenv.testing.check_rule_on_round` for every rule, and finite, non-negative weights
summing to 1 over the kept uploads for the weighted-sum rules."""

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fedenv.aggregation import AggregationRule, Uploads
from fedenv.config import EnvConfig
from fedenv.registry import AGGREGATION_RULES
from fedenv.testing import check_rule_on_round


@st.composite
def rounds(draw):
    """A federation's data sizes, one round's uploads (a subset of its clients) and their random models,
    validation logits (FedCA) and update directions (FedAdp); ``K`` uploads of ``N`` clients."""
    num_clients = draw(st.integers(1, 12))
    sizes = np.array(draw(st.lists(st.integers(1, 5000), min_size=num_clients, max_size=num_clients)), float)
    uploading = draw(st.lists(st.integers(0, num_clients - 1), min_size=1, max_size=num_clients, unique=True))
    clients = np.array(sorted(uploading))
    k, seed = len(clients), draw(st.integers(0, 2**31 - 1))
    generator = torch.Generator().manual_seed(seed)
    scale = draw(st.sampled_from([0.0, 1e-4, 1.0, 10.0]))
    global_params = {"w": torch.randn(3, 2, generator=generator), "b": torch.randn(2, generator=generator)}
    params = {name: p + scale * torch.randn(k, *p.shape, generator=generator) for name, p in global_params.items()}
    logits = 5 * torch.randn(k, 8, 3, generator=generator)
    labels = torch.randint(0, 3, (8,), generator=generator)
    uploads = Uploads(clients, params, {}, global_params, sizes[clients], sizes.sum(), num_clients, lambda: logits,
                      labels)
    return sizes, uploads


@settings(max_examples=60, deadline=None)
@given(federation_round=rounds(), repeats=st.integers(1, 3))
def test_every_registered_rule_meets_the_aggregation_contract(federation_round, repeats):
    sizes, uploads = federation_round
    for name in AGGREGATION_RULES.names():
        rule = AGGREGATION_RULES[name](sizes, EnvConfig(aggregation=name))
        for _ in range(repeats):  # stateful rules (FedAdp's smoothed angles) see the round again
            check_rule_on_round(rule, uploads, name)


@settings(max_examples=60, deadline=None)
@given(federation_round=rounds(), repeats=st.integers(1, 3))
def test_every_weighted_rule_returns_finite_nonnegative_weights_summing_to_one(federation_round, repeats):
    sizes, uploads = federation_round
    for name in AGGREGATION_RULES.names():
        rule = AGGREGATION_RULES[name](sizes, EnvConfig(aggregation=name))
        if type(rule).weights is AggregationRule.weights:
            continue  # not a weighted-sum rule (a coordinate-wise median or trimmed mean)
        for _ in range(repeats):
            kept, weights = rule.weights(uploads)
            assert len(kept) == len(weights) >= 1, name
            assert set(np.asarray(kept).tolist()) <= set(range(len(uploads.clients))), name
            assert np.all(np.isfinite(weights)) and np.all(weights >= 0), (name, weights)
            assert abs(float(np.sum(weights)) - 1.0) <= 1e-9, (name, weights)
