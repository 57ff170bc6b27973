"""A dataset, a partitioner and a model added from outside the package, by registration alone, run an
episode of the environment."""

import numpy as np
import pytest
import torch
from torch import nn

from fedenv.config import EnvConfig
from fedenv.data import Dataset, DatasetSpec
from fedenv.env import ClientSelectionEnv
from fedenv.models import ModelSpec
from fedenv.registry import DATASETS, MODELS, PARTITIONERS

TRAIN, TEST, CLASSES = 200, 50, 10


def toy_dataset(data_root, download):
    generator = torch.Generator().manual_seed(0)
    return Dataset("toy-grid", torch.randn(TRAIN, 1, 4, 4, generator=generator), torch.arange(TRAIN) % CLASSES,
                   torch.randn(TEST, 1, 4, 4, generator=generator), torch.arange(TEST) % CLASSES, CLASSES)


def round_robin(labels, owners, num_clients, rng, config):
    return [np.arange(k, len(labels), num_clients) for k in range(num_clients)]


def tiny_linear(input_shape, num_classes):
    return nn.Sequential(nn.Flatten(), nn.Linear(int(np.prod(input_shape)), num_classes))


def leave_one_empty(labels, owners, num_clients, rng, config):
    return [np.arange(len(labels))] + [np.arange(0)] * (num_clients - 1)


@pytest.fixture
def toy_entries():
    DATASETS.register("toy-grid", DatasetSpec("toy-grid", toy_dataset, needs_data_root=False, layout="nothing",
                                              input_kind="image"))
    PARTITIONERS.register("round-robin", round_robin)
    PARTITIONERS.register("leave-one-empty", leave_one_empty)
    MODELS.register("tiny-linear", ModelSpec("tiny-linear", tiny_linear, input_kind="image",
                                             reference_input_shape=(1, 4, 4), reference_num_classes=CLASSES,
                                             accepts=lambda shape: True, accepted="any (C, H, W) input"))
    try:
        yield
    finally:
        DATASETS.unregister("toy-grid")
        PARTITIONERS.unregister("round-robin")
        PARTITIONERS.unregister("leave-one-empty")
        MODELS.unregister("tiny-linear")


def test_registered_dataset_partitioner_and_model_play_an_episode(toy_entries):
    env = ClientSelectionEnv(EnvConfig(dataset="toy-grid", partition="round-robin", model="tiny-linear",
                                       num_clients=3, clients_per_round=3, num_rounds=2, device="cpu",
                                       trace="default"))
    assert env.simulator.model_parameters == 4 * 4 * CLASSES + CLASSES  # the tiny linear model, not the default MLP
    assert env.simulator.model_size_mb == pytest.approx(env.simulator.model_parameters * 4 / 1e6)
    _, infos = env.reset(seed=0)
    # 20 samples per class, the default val_fraction 0.25 holds 5 per class out: a pool of 150, dealt round-robin
    pool = np.setdiff1d(np.arange(TRAIN), env.simulator.validation_indices)
    assert len(env.simulator.validation_indices) == 50 and len(pool) == 150
    for k in range(3):
        assert np.array_equal(env.simulator.client_indices[k], pool[k::3])
        assert infos[f"client_{k}"]["data_size"] == 50
    steps = 0
    while env.agents:
        _, _rewards, _, truncations, infos = env.step({agent: 1 for agent in env.agents})
        steps += 1
    assert steps == 2 and all(truncations.values())
    assert all(info["data_size"] == 50 and info["selected"] for info in infos.values())
    assert set(env.simulator.federation.global_params) == {"1.weight", "1.bias"}


def test_a_registered_partitioner_leaving_a_client_empty_is_refused_at_construction(toy_entries):
    with pytest.raises(ValueError, match=r"partitioner 'leave-one-empty' gave clients \[1, 2\] no samples"):
        ClientSelectionEnv(dataset="toy-grid", partition="leave-one-empty", model="tiny-linear", num_clients=3,
                           clients_per_round=3, device="cpu")


def test_entries_are_gone_after_the_test():
    assert "toy-grid" not in DATASETS and "round-robin" not in PARTITIONERS and "tiny-linear" not in MODELS


def one_label_short(data_root, download):
    dataset = toy_dataset(data_root, download)
    return Dataset("toy-short", dataset.train_x, dataset.train_y[:-1], dataset.test_x, dataset.test_y, CLASSES)


def test_a_registered_loader_with_a_label_missing_is_refused():
    DATASETS.register("toy-short", DatasetSpec("toy-short", one_label_short, needs_data_root=False, layout="nothing",
                                               input_kind="image"))
    try:
        with pytest.raises(ValueError, match=rf"dataset 'toy-short' \(data_root=None\): the train split's inputs, "
                                             rf"labels and users differ in count \(train_x: {TRAIN}, train_y: "
                                             rf"{TRAIN - 1}\)"):
            ClientSelectionEnv(EnvConfig(dataset="toy-short", num_clients=2, clients_per_round=2, device="cpu"))
    finally:
        DATASETS.unregister("toy-short")
