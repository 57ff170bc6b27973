"""The embedded mnist5k dataset (fedenv.data.mnist5k)."""

import torch

from fedenv.data import load_dataset


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


def test_mnist5k_ignores_a_data_root_and_is_loaded_once():
    assert load_dataset("mnist5k", "/nowhere") is load_dataset("mnist5k")
