"""What every partitioner promises: the validation split, refusal of empty clients, non-empty shards
(fedenv.data.partition)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedenv.data import (
    partition_dirichlet,
    partition_fedmarl,
    partition_iid,
    partition_natural,
    partition_xclass,
    split_validation,
)
from fedenv.data.partition.common import check_shards


def test_validation_split_is_stratified_and_disjoint():
    labels = np.repeat(np.arange(10), 100)
    pool, validation = split_validation(labels, 0.1, np.random.default_rng(0))
    assert np.bincount(labels[validation]).tolist() == [10] * 10
    assert len(np.intersect1d(pool, validation)) == 0 and len(pool) + len(validation) == len(labels)


def test_iid_covers_every_index_exactly_once_in_near_equal_shards():
    shards = partition_iid(np.repeat(np.arange(10), 200), 7, np.random.default_rng(0))
    assert sorted(np.concatenate(shards).tolist()) == list(range(2000))
    assert sorted(len(s) for s in shards) == [285] * 2 + [286] * 5  # 2000 = 7 * 285 + 5


LABELS = np.repeat(np.arange(10), 50)
REFUSALS = [
    (lambda rng, m: partition_dirichlet(LABELS, 10, rng, min_size=m), "min_size"),
    (lambda rng, m: partition_fedmarl(LABELS, 10, rng, min_size=m), "min_size"),
    (lambda rng, m: partition_natural(LABELS, 5, rng, min_size=m), "min_size"),
    (lambda rng, m: partition_xclass(LABELS, 10, rng, samples_per_client=m), "samples_per_client"),
]


@pytest.mark.parametrize("partition, name", REFUSALS)
@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_a_least_client_size_below_one_is_refused_by_name(partition, name, bad):
    with pytest.raises(ValueError, match=rf"{name}={bad!r} must be an integer >= 1"):
        partition(np.random.default_rng(0), bad)


@settings(max_examples=40, deadline=None)
@given(class_sizes=st.lists(st.integers(1, 40), min_size=1, max_size=8), num_clients=st.integers(1, 30),
       alpha=st.floats(0.01, 100.0), seed=st.integers(0, 2**16))
def test_no_partitioner_returns_an_empty_shard(class_sizes, num_clients, alpha, seed):
    labels = np.repeat(np.arange(len(class_sizes)), class_sizes)
    num_clients = min(num_clients, len(labels))
    rng = np.random.default_rng(seed)
    results = [partition_iid(labels, num_clients, rng),
               partition_dirichlet(labels, num_clients, rng, alpha=alpha, min_size=1),
               partition_natural(labels, min(num_clients, len(class_sizes)), rng, min_size=1)]
    try:
        results.append(partition_fedmarl(labels, num_clients, rng, min_size=1))
    except ValueError as error:  # the pool cannot serve the 80/20 composition: refused, never empty
        assert "short by" in str(error)
    for shards in results:
        assert all(len(s) >= 1 for s in shards)


def test_env_refuses_a_partitioner_that_leaves_a_client_empty():
    with pytest.raises(ValueError, match=r"partitioner 'toy' gave clients \[1\] no samples"):
        check_shards("toy", [np.arange(3), np.arange(0), np.arange(2)], 3)
    with pytest.raises(ValueError, match="partitioner 'toy' gave 2 shards for num_clients=3"):
        check_shards("toy", [np.arange(3), np.arange(2)], 3)
