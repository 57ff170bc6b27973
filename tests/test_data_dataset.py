"""Dataset lookup, spec checks and the fixed test subset (fedenv.data.dataset)."""

import numpy as np
import pytest
import torch

from fedenv.data import Dataset, DatasetSpec, load_dataset
from fedenv.registry import DATASETS


def test_unknown_dataset_lists_the_registered_names():
    with pytest.raises(ValueError, match="dataset 'cifar' is not known; allowed: mnist5k, mnist, fashion-mnist"):
        load_dataset("cifar")


def windows(owners):
    x = torch.zeros(6, 5, dtype=torch.int64)
    return Dataset("bad", x, torch.zeros(6, dtype=torch.int64), x, torch.zeros(6, dtype=torch.int64), 2, owners)


@pytest.mark.parametrize("kind, records_owners, owners, message", [
    ("image", False, None, r"declares input_kind='image' but its inputs have shape \(5,\)"),
    ("sequence", True, None, "declares records_owners=True but its loader gave no train_owner"),
    ("sequence", False, np.zeros(6, dtype=np.int64), "declares records_owners=False but its loader gave train_owner"),
])
def test_a_loader_that_contradicts_its_spec_is_refused(kind, records_owners, owners, message):
    spec = DatasetSpec("contradicting", lambda root, download: windows(owners), needs_data_root=False, layout="-",
                       input_kind=kind, records_owners=records_owners)
    DATASETS.register("contradicting", spec)
    try:
        with pytest.raises(ValueError, match=message):
            load_dataset("contradicting")
    finally:
        DATASETS.unregister("contradicting")


def test_a_spec_with_an_unknown_input_kind_is_refused():
    with pytest.raises(ValueError, match="input_kind='video'; allowed: image, sequence"):
        DatasetSpec("clips", lambda root, download: None, needs_data_root=False, layout="-", input_kind="video")


def test_test_samples_evaluates_every_env_on_the_same_fixed_subset():
    from fedenv.env import ClientSelectionEnv

    full = load_dataset("mnist5k")
    a, b = ClientSelectionEnv(test_samples=200, num_rounds=1), ClientSelectionEnv(test_samples=200, num_rounds=1)
    assert len(a.simulator.dataset.test_y) == 200
    assert torch.equal(a.simulator.dataset.test_x, b.simulator.dataset.test_x)
    assert len({tuple(row) for row in a.simulator.dataset.test_x.flatten(1)[:, ::7].tolist()}) == 200  # no repeats
    members = {tuple(row) for row in full.test_x.flatten(1)[:, ::7].tolist()}
    assert all(tuple(row) in members for row in a.simulator.dataset.test_x.flatten(1)[:, ::7].tolist())
    a.reset(seed=3)
    assert round(a.simulator.test_accuracy * 200) == pytest.approx(a.simulator.test_accuracy * 200)  # of 200 samples
    assert len(full.test_y) == 1000  # the cached full dataset is untouched
    with pytest.raises(ValueError, match=r"test_samples=5000 must be in \[1, 1000\]"):
        ClientSelectionEnv(test_samples=5000)


def test_train_samples_partitions_a_fixed_subset_of_the_training_split():
    from fedenv.env import ClientSelectionEnv

    full = load_dataset("mnist5k")
    a = ClientSelectionEnv(train_samples=1000, num_rounds=1, num_clients=4, clients_per_round=4)
    b = ClientSelectionEnv(train_samples=1000, num_rounds=1, num_clients=4, clients_per_round=4)
    assert len(a.simulator.dataset.train_y) == 1000
    assert torch.equal(a.simulator.dataset.train_x, b.simulator.dataset.train_x)
    rows = [tuple(row) for row in a.simulator.dataset.train_x.flatten(1)[:, ::7].tolist()]
    members = {tuple(row) for row in full.train_x.flatten(1)[:, ::7].tolist()}
    assert len(set(rows)) == 1000 and all(row in members for row in rows)
    a.reset(seed=3)
    used = np.concatenate([*a.simulator.client_indices, a.simulator.validation_indices])
    assert len(np.unique(used)) == len(used) and used.max() < 1000  # partitioned from the 1,000 kept samples
    assert len(full.train_y) == 4000 and len(a.simulator.dataset.test_y) == len(full.test_y)
    with pytest.raises(ValueError, match=r"train_samples=5000 must be in \[1, 4000\]"):
        ClientSelectionEnv(train_samples=5000)


def test_subsample_split_cuts_the_recorded_users_with_their_samples():
    from fedenv.data import subsample_split

    x = torch.arange(6).unsqueeze(1).repeat(1, 5)
    data = Dataset("w", x, torch.arange(6), x[:2], torch.arange(2), 6, np.arange(6) * 10)
    cut = subsample_split(data, "train", 3, seed=1)
    assert cut.train_owner.tolist() == [10 * i for i in cut.train_y.tolist()]
    assert cut.train_x[:, 0].tolist() == cut.train_y.tolist() == sorted(cut.train_y.tolist())
    with pytest.raises(ValueError, match="split='val' is not known; allowed: train, test"):
        subsample_split(data, "val", 3)
