"""FedMarl's partition (fedenv.data.partition.fedmarl)."""

import numpy as np
import pytest

from fedenv.data import partition_fedmarl


def labels_of(n_per_class, classes=10):
    return np.repeat(np.arange(classes), n_per_class)


def test_fedmarl_is_disjoint_with_an_80_20_composition():
    labels = labels_of(360)
    shards = partition_fedmarl(labels, 10, np.random.default_rng(3))
    joined = np.concatenate(shards)
    assert len(np.unique(joined)) == len(joined)  # no sample given twice
    dominants = []
    for shard in shards:
        counts = np.bincount(labels[shard], minlength=10)
        dominants.append(counts.argmax())
        assert abs(counts.max() - 0.8 * len(shard)) <= 0.5  # rounding of one sample
        others = np.delete(counts, counts.argmax())
        assert others.max() - others.min() <= 1  # the 20 % spread evenly
    assert sorted(dominants) == list(range(10))  # each label dominant once with 10 clients
    sizes = sorted(len(s) for s in shards)
    assert sizes[-1] > 2 * sizes[0]  # power law: unequal sizes


def test_fedmarl_sizes_follow_the_power_law_exponent():
    labels = labels_of(10_000)
    shards = partition_fedmarl(labels, 10, np.random.default_rng(0), size_exponent=1.0)
    sizes = np.sort([len(s) for s in shards])[::-1]
    expected = (np.arange(1, 11) ** -1.0) / np.sum(np.arange(1, 11) ** -1.0)
    assert np.allclose(sizes / sizes.sum(), expected, atol=0.002)


def test_c3_size_constrained_partition_names_the_class_and_shortfall():
    labels = labels_of(100)  # 1000 samples, 100 per class
    with pytest.raises(ValueError, match=r"needs 600 samples of class \d+ but the pool holds 100 \(short by 500\)"):
        partition_fedmarl(labels, 2, np.random.default_rng(0), dominant_fraction=1.0, client_sizes=[600, 600])


def test_steep_power_law_still_gives_every_client_min_size():
    labels = labels_of(100)
    shards = partition_fedmarl(labels, 50, np.random.default_rng(0), size_exponent=4.0, min_size=1)
    assert min(len(s) for s in shards) >= 1  # a rank-50 share of 50 ** -4 rounds to 0 samples before the floor
