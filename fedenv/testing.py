"""Conformance checks for registered components, importable by anyone who registers one (as
``pettingzoo.test`` checks an environment)::

    from fedenv.registry import AGGREGATION_RULES
    from fedenv.testing import check_aggregation_rule

    AGGREGATION_RULES.register("my-rule", MyRule)
    check_aggregation_rule("my-rule")

Each ``check_*`` raises ``AssertionError`` naming the component and what it broke; the package's own
tests run them over every registered entry. :func:`check_rule_on_round` is the property of one round
(the package's property test feeds it rounds drawn by Hypothesis; :func:`random_round` draws one with a
seed).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from fedenv.aggregation.base import AggregationRule, Uploads, weighted_result
from fedenv.config import EnvConfig
from fedenv.registry import AGGREGATION_RULES, MODELS, PARTITIONERS

TINY_ENV = dict(num_clients=4, clients_per_round=3, num_rounds=2, device="cpu", test_samples=100)
"""The federation :func:`check_policy` plays: 4 clients, 3 candidates a round, 2 rounds, on the CPU."""


def random_round(seed: int, num_clients: int = 6, uploads: int | None = None, scale: float = 1.0,
                 batchnorm: bool = False) -> tuple[np.ndarray, Uploads]:
    """A federation's data sizes ``(N,)`` and one round's uploads: random models around a random global
    model (``scale``: the spread of the updates), random validation logits and labels; ``uploads`` of the
    ``num_clients`` clients (default: a random number), with BatchNorm-like statistics when ``batchnorm``."""
    rng = np.random.default_rng(seed)
    generator = torch.Generator().manual_seed(seed)
    sizes = rng.integers(1, 5000, num_clients).astype(np.float64)
    k = int(uploads if uploads is not None else rng.integers(1, num_clients + 1))
    clients = np.sort(rng.choice(num_clients, k, replace=False))
    global_params = {"w": torch.randn(3, 2, generator=generator), "b": torch.randn(2, generator=generator)}
    params = {name: p + scale * torch.randn(k, *p.shape, generator=generator) for name, p in global_params.items()}
    buffers = {}
    if batchnorm:
        buffers = {"running_mean": torch.randn(k, 2, generator=generator),
                   "num_batches_tracked": torch.randint(0, 50, (k,), generator=generator)}
    logits = 5 * torch.randn(k, 8, 3, generator=generator)
    labels = torch.randint(0, 3, (8,), generator=generator)
    return sizes, Uploads(clients, params, buffers, global_params, sizes[clients], float(sizes.sum()), num_clients,
                          lambda: logits, labels)


def check_rule_on_round(rule: AggregationRule, uploads: Uploads, name: str = "") -> None:
    """The contract of :meth:`AggregationRule.aggregate` on one round (:mod:`fedenv.aggregation.base`).

    The result has the global model's names, shapes and dtypes, finite values; it keeps at least one
    upload, each at most once; its weights are finite and non-negative (or all NaN for a coordinate-wise
    rule). When the weights sum to 1, or are NaN, every coordinate of the new model lies between the
    smallest and the largest value of the uploads it kept (a convex combination; a median or trimmed
    mean); a weighted-sum rule's model is the weighted sum of its weights.
    """
    label = name or type(rule).__name__
    result = rule.aggregate(uploads)
    k = len(uploads.clients)
    kept = np.asarray(result.kept_rows)
    weights = np.asarray(result.weights, dtype=np.float64)
    assert kept.ndim == 1 and 1 <= len(kept) <= k, f"{label}: kept rows {kept.tolist()} of {k} uploads"
    assert len(set(kept.tolist())) == len(kept) and set(kept.tolist()) <= set(range(k)), \
        f"{label}: kept rows {kept.tolist()} must be distinct rows of the {k} uploads"
    assert weights.shape == kept.shape, f"{label}: {weights.shape} weights for {kept.shape} kept rows"
    coordinate_wise = bool(np.all(np.isnan(weights)))
    assert coordinate_wise or (np.all(np.isfinite(weights)) and np.all(weights >= 0)), \
        f"{label}: weights {weights.tolist()} must be finite and >= 0, or all NaN"
    parts = ((uploads.params, result.params, "parameter"), (uploads.buffers, result.buffers, "buffer"))
    for stacked, out, what in parts:
        assert set(out) == set(stacked), f"{label}: {what}s {sorted(out)}, expected {sorted(stacked)}"
        for key, values in stacked.items():
            value = out[key]
            assert value.shape == values.shape[1:] and value.dtype == values.dtype, \
                f"{label}: {what} {key} has shape {tuple(value.shape)} {value.dtype}, expected " \
                f"{tuple(values.shape[1:])} {values.dtype}"
            assert torch.isfinite(value.double()).all(), f"{label}: {what} {key} is not finite"
            convex = coordinate_wise or abs(float(weights.sum()) - 1.0) <= 1e-9
            if convex and value.is_floating_point():
                used = values[torch.as_tensor(kept)].double()
                slack = 1e-6 * (1.0 + used.abs().amax(dim=0))
                assert bool((value.double() >= used.amin(dim=0) - slack).all()
                            and (value.double() <= used.amax(dim=0) + slack).all()), \
                    f"{label}: {what} {key} leaves the range of the uploads it kept"
    if not coordinate_wise and type(rule).weights is not AggregationRule.weights:
        expected = weighted_result(uploads, kept, weights)
        for key, value in result.params.items():
            assert torch.allclose(value, expected.params[key], rtol=1e-6, atol=1e-6), \
                f"{label}: parameter {key} is not the weighted sum of its weights"


def check_aggregation_rule(name: str, config: EnvConfig | None = None, rounds: int = 20, seed: int = 0) -> None:
    """Check the registered rule ``name`` (built as the federation builds it, with ``config``, default
    ``EnvConfig(aggregation=name)``): :func:`check_rule_on_round` on ``rounds`` random rounds (with and
    without BatchNorm statistics, one upload to all, updates tiny to large), each seen twice by the same
    instance (stateful rules); uploads all equal to one model give that model back."""
    config = config or EnvConfig(aggregation=name)
    for r in range(rounds):
        sizes, uploads = random_round(seed + r, num_clients=1 + r % 7, scale=(0.0, 1e-4, 1.0, 10.0)[r % 4],
                                      batchnorm=bool(r % 2))
        rule = AGGREGATION_RULES.get(name)(sizes, config)
        for _ in range(2):
            check_rule_on_round(rule, uploads, repr(name))
    sizes, uploads = random_round(seed, num_clients=5, uploads=4, scale=0.0)
    same = dataclasses.replace(uploads, params={n: p[:1].expand_as(p).clone() for n, p in uploads.params.items()})
    result = AGGREGATION_RULES.get(name)(sizes, config).aggregate(same)
    if np.all(np.isnan(result.weights)) or abs(float(np.sum(result.weights)) - 1.0) <= 1e-9:
        for key, value in result.params.items():
            assert torch.allclose(value, same.params[key][0], atol=1e-6), \
                f"{name!r}: equal uploads must aggregate to that model ({key} differs)"


def check_partitioner(name: str, config: EnvConfig | None = None, seed: int = 0) -> None:
    """Check the registered partitioner ``name`` on a pool of 8,000 samples of 10 labels and 40 users
    (with ``config``, default ``EnvConfig(partition=name, num_clients=5)``): it returns one non-empty int
    index array per client, disjoint, inside the pool, and the same arrays for the same generator seed."""
    config = config or EnvConfig(partition=name, num_clients=5, clients_per_round=5)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, 8000)
    owners = rng.integers(0, 40, 8000)
    partition = PARTITIONERS.get(name)

    def run():
        return partition(labels, owners, config.num_clients, np.random.default_rng(seed), config)

    shards = run()
    assert len(shards) == config.num_clients, f"{name!r}: {len(shards)} shards for {config.num_clients} clients"
    for k, shard in enumerate(shards):
        shard = np.asarray(shard)
        assert shard.ndim == 1 and np.issubdtype(shard.dtype, np.integer) and len(shard) > 0, \
            f"{name!r}: client {k} got {shard.dtype} shape {shard.shape}, not a non-empty int index array"
        assert shard.min() >= 0 and shard.max() < len(labels), f"{name!r}: client {k} indexes outside the pool"
    joined = np.concatenate(shards)
    assert len(np.unique(joined)) == len(joined), f"{name!r}: clients share samples"
    assert all(np.array_equal(a, b) for a, b in zip(shards, run())), f"{name!r}: not reproducible from its rng"


def check_model_spec(name: str, seed: int = 0) -> None:
    """Check the registered model ``name``: built on its reference input (:class:`fedenv.models.ModelSpec`)
    with the same seed twice, the same initial weights; a batch of 2 inputs gives finite ``(2, classes)``
    logits."""
    from fedenv.models import build_model

    spec = MODELS.get(name)
    shape, classes = tuple(spec.reference_input_shape), spec.reference_num_classes
    first, second = build_model(name, shape, classes, seed), build_model(name, shape, classes, seed)
    for (key, a), b in zip(first.state_dict().items(), second.state_dict().values()):
        assert torch.equal(a, b), f"{name!r}: {key} differs between two builds with seed {seed}"
    generator = torch.Generator().manual_seed(seed)
    if spec.input_dtype == torch.int64:
        x = torch.randint(0, classes, (2, *shape), generator=generator)
    else:
        x = torch.randn(2, *shape, generator=generator)
    first.eval()
    with torch.no_grad():
        logits = first(x)
    assert tuple(logits.shape) == (2, classes), \
        f"{name!r}: logits of shape {tuple(logits.shape)}, expected (2, {classes})"
    assert torch.isfinite(logits).all(), f"{name!r}: logits are not finite"


def check_policy(name: str, seed: int = 3) -> None:
    """Check the registered policy ``name``: ``make_policy(name)`` builds it with its registered name; in
    the :data:`TINY_ENV` federation (in the configuration its method resolves to, driven as
    :func:`fedenv.evaluation.run_episode` drives it) it acts only for candidates, with actions 0 or 1, and
    plays the same actions again after ``reset`` with the same seed."""
    from fedenv.baselines import make_policy
    from fedenv.env import ClientSelectionEnv
    from fedenv.evaluation import policy_config
    from fedenv.evaluation.rollout import policy_steps

    policy = make_policy(name)
    assert policy.name == name, f"policy {name!r} is built with the name {policy.name!r}"
    env = ClientSelectionEnv(policy_config(EnvConfig(**TINY_ENV), policy))

    def episode() -> list[dict]:
        played, steps = [], policy_steps(env, policy, seed)  # as run_episode drives it
        _, observations, _, _ = next(steps)
        for actions, next_observations, _, _ in steps:
            candidates = {a for a, o in observations.items() if o["action_mask"][1]}
            assert set(actions) <= candidates, f"{name!r} acts for non-candidates {sorted(set(actions) - candidates)}"
            assert all(int(v) in (0, 1) and v == int(v) for v in actions.values()), f"{name!r}: actions {actions}"
            played.append({a: int(v) for a, v in actions.items()})
            observations = next_observations
        return played

    assert episode() == episode(), f"{name!r}: the same seed gave other actions"
