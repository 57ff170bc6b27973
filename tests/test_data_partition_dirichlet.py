"""The Dirichlet label-skew partition (fedenv.data.partition.dirichlet)."""

import numpy as np
import pytest

from fedenv.data import partition_dirichlet


def test_dirichlet_covers_every_index_exactly_once():
    labels = np.repeat(np.arange(10), 200)
    joined = np.concatenate(partition_dirichlet(labels, 7, np.random.default_rng(0), alpha=0.3))
    assert len(joined) == len(labels) and len(np.unique(joined)) == len(labels)


def test_c1_dirichlet_tiny_alpha_many_clients_meets_min_size():
    labels = np.repeat(np.arange(10), 6000)
    shards = partition_dirichlet(labels, 100, np.random.default_rng(0), alpha=0.05, min_size=10)
    assert min(len(s) for s in shards) >= 10
    assert len(np.unique(np.concatenate(shards))) == len(labels)
    with pytest.raises(ValueError, match="cannot give 100 clients at least 700 samples"):
        partition_dirichlet(labels, 100, np.random.default_rng(0), alpha=0.05, min_size=700)


def test_c2_dirichlet_huge_alpha_is_near_iid():
    labels = np.repeat(np.arange(10), 600)
    shards = partition_dirichlet(labels, 10, np.random.default_rng(0), alpha=1e4)
    for shard in shards:
        histogram = np.bincount(labels[shard], minlength=10) / len(shard)
        assert np.abs(histogram - 0.1).max() < 0.05
    assert len(np.unique(np.concatenate(shards))) == len(labels)


@pytest.mark.parametrize("alpha", [0.01, 0.02, 0.05, 0.1, 0.5, 1.0, 100.0])
@pytest.mark.parametrize("seed", range(3))
def test_no_client_is_left_empty_down_to_alpha_001(alpha, seed):
    labels = np.repeat(np.arange(10), 60)
    shards = partition_dirichlet(labels, 100, np.random.default_rng(seed), alpha=alpha, min_size=1)
    assert len(shards) == 100 and min(len(s) for s in shards) >= 1
    assert sorted(np.concatenate(shards).tolist()) == list(range(600))


def test_min_size_zero_is_refused_instead_of_giving_empty_clients():
    labels = np.repeat(np.arange(10), 6000)
    with pytest.raises(ValueError, match=r"min_size=0 must be an integer >= 1"):
        partition_dirichlet(labels, 100, np.random.default_rng(0), alpha=0.01, min_size=0)
