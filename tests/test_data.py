import numpy as np
import pytest
import torch

from fedenv.data import (
    load_dataset, partition_dirichlet, partition_fedmarl, partition_iid, read_idx, split_validation,
)
from tests.helpers import make_torchvision_folder, write_idx


def test_mnist5k_is_a_stratified_4000_1000_split_of_real_digits():
    data = load_dataset("mnist5k")
    assert data.train_x.shape == (4000, 1, 28, 28) and data.test_x.shape == (1000, 1, 28, 28)
    assert data.train_x.dtype == torch.float32
    assert torch.bincount(data.train_y).tolist() == [400] * 10
    assert torch.bincount(data.test_y).tolist() == [100] * 10
    assert abs(float(data.train_x.mean())) < 1e-4 and abs(float(data.train_x.std()) - 1) < 1e-3
    train_rows = {tuple(r) for r in data.train_x.flatten(1)[:, ::7].numpy().round(3).tolist()}
    test_rows = [tuple(r) for r in data.test_x.flatten(1)[:, ::7].numpy().round(3).tolist()]
    assert sum(r in train_rows for r in test_rows) < 5  # the splits do not share images


@pytest.mark.parametrize("compress", [True, False])
def test_torchvision_layout_reads_gzipped_and_raw_idx(tmp_path, compress):
    arrays = make_torchvision_folder(tmp_path, "FashionMNIST", 30, 10, compress)
    data = load_dataset("fashion-mnist", str(tmp_path))
    assert data.train_x.shape == (30, 1, 28, 28) and data.test_y.tolist() == list(range(10))
    expected = (arrays["train-images-idx3-ubyte"][3] / 255.0 - (arrays["train-images-idx3-ubyte"] / 255.0).mean())
    expected /= (arrays["train-images-idx3-ubyte"] / 255.0).std(ddof=1)
    assert np.allclose(data.train_x[3, 0].numpy(), expected, atol=1e-4)


def test_missing_folder_error_says_where_the_files_must_be(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"MNIST/raw"):
        load_dataset("mnist", str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="--data-root"):
        load_dataset("mnist")
    with pytest.raises(ValueError, match="allowed: mnist5k, mnist, fashion-mnist"):
        load_dataset("cifar")


def test_download_path_goes_through_torchvision_on_local_files(tmp_path):
    make_torchvision_folder(tmp_path, "MNIST", 20, 10, compress=False, seed=1)
    data = load_dataset("mnist", str(tmp_path), download=True)  # files present: torchvision skips the fetch
    assert data.train_x.shape == (20, 1, 28, 28)


def test_read_idx_rejects_a_truncated_file(tmp_path):
    write_idx(tmp_path / "x", np.zeros((4, 28, 28)), compress=False)
    (tmp_path / "x").write_bytes((tmp_path / "x").read_bytes()[:-10])
    with pytest.raises(ValueError, match="header says shape"):
        read_idx(tmp_path / "x")


def labels_of(n_per_class=200, classes=10):
    return np.repeat(np.arange(classes), n_per_class)


def test_iid_and_dirichlet_cover_every_index_exactly_once():
    labels = labels_of()
    for shards in (partition_iid(labels, 7, np.random.default_rng(0)),
                   partition_dirichlet(labels, 7, np.random.default_rng(0), alpha=0.3)):
        joined = np.concatenate(shards)
        assert len(joined) == len(labels) and len(np.unique(joined)) == len(labels)


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


def test_validation_split_is_stratified_and_disjoint():
    labels = labels_of(100)
    pool, validation = split_validation(labels, 0.1, np.random.default_rng(0))
    assert np.bincount(labels[validation]).tolist() == [10] * 10
    assert len(np.intersect1d(pool, validation)) == 0 and len(pool) + len(validation) == len(labels)


def test_test_samples_evaluates_every_env_on_the_same_fixed_subset():
    from fedenv.env import ClientSelectionEnv

    full = load_dataset("mnist5k")
    a, b = ClientSelectionEnv(test_samples=200, num_rounds=1), ClientSelectionEnv(test_samples=200, num_rounds=1)
    assert len(a.simulator.dataset.test_y) == 200 and torch.equal(a.simulator.dataset.test_x, b.simulator.dataset.test_x)
    assert len({tuple(row) for row in a.simulator.dataset.test_x.flatten(1)[:, ::7].tolist()}) == 200  # no repeats
    members = {tuple(row) for row in full.test_x.flatten(1)[:, ::7].tolist()}
    assert all(tuple(row) in members for row in a.simulator.dataset.test_x.flatten(1)[:, ::7].tolist())
    a.reset(seed=3)
    assert round(a.simulator.accuracy * 200) == pytest.approx(a.simulator.accuracy * 200)  # accuracy counts 200 samples
    assert len(full.test_y) == 1000  # the cached full dataset is untouched
    with pytest.raises(ValueError, match=r"test_samples=5000 must be in \[1, 1000\]"):
        ClientSelectionEnv(test_samples=5000)
