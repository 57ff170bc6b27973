"""Add a dataset, a partitioner and a model from outside the package, by registration alone, and play
one short episode with them (docs: "Extending").

    python examples/extending/add_dataset_partitioner_model.py

A dataset is a :class:`fedenv.data.DatasetSpec` whose loader returns a :class:`fedenv.data.Dataset`
(train and test tensors); a partitioner is a function ``(labels, owners, num_clients, rng, config) ->
[indices per client]``; a model is a :class:`fedenv.models.ModelSpec` whose builder takes the input
shape and the number of classes.
"""

import numpy as np
import torch
from torch import nn

import fedenv
from fedenv.data import Dataset, DatasetSpec
from fedenv.models import ModelSpec
from fedenv.registry import DATASETS, MODELS, PARTITIONERS

CLASSES = 10


def noise_grid(data_root, download):
    """200 training and 50 test 4x4 images of seeded noise, labels cycling over 10 classes."""
    generator = torch.Generator().manual_seed(0)
    return Dataset("noise-grid", torch.randn(200, 1, 4, 4, generator=generator), torch.arange(200) % CLASSES,
                   torch.randn(50, 1, 4, 4, generator=generator), torch.arange(50) % CLASSES, CLASSES)


def round_robin(labels, owners, num_clients, rng, config):
    """Deal the samples to the clients in turn: client k gets samples k, k + K, k + 2K, ..."""
    return [np.arange(k, len(labels), num_clients) for k in range(num_clients)]


def linear(input_shape, num_classes):
    return nn.Sequential(nn.Flatten(), nn.Linear(int(np.prod(input_shape)), num_classes))


DATASETS.register("noise-grid", DatasetSpec("noise-grid", noise_grid, needs_data_root=False, layout="nothing",
                                            input_kind="image"))
PARTITIONERS.register("round-robin", round_robin)
MODELS.register("linear", ModelSpec("linear", linear, input_kind="image", reference_input_shape=(1, 4, 4),
                                    reference_num_classes=CLASSES, accepts=lambda shape: True,
                                    accepted="any (C, H, W) input"))

env = fedenv.parallel_env(dataset="noise-grid", partition="round-robin", model="linear", num_clients=3,
                          clients_per_round=3, num_rounds=2, device="cpu")
observations, infos = env.reset(seed=0)
while env.agents:
    observations, rewards, terminations, truncations, infos = env.step({a: 1 for a in env.agents})
print(f"2 rounds on noise-grid / round-robin / linear: test accuracy {infos['client_0']['test_accuracy']:.3f}, "
      f"{infos['client_0']['data_size']} samples per client")
