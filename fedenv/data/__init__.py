"""Datasets and client partitioners.

Datasets (one module each, registered in :data:`fedenv.registry.DATASETS` as a :class:`DatasetSpec`):
``mnist5k`` (:mod:`fedenv.data.mnist5k`, embedded, the default), ``mnist`` and ``fashion-mnist``
(:mod:`fedenv.data.idx`), ``cifar10`` (:mod:`fedenv.data.cifar10`) and ``shakespeare``
(:mod:`fedenv.data.shakespeare`). Images are returned as float32 tensors of shape ``(N, C, H, W)``,
standardised with the training set's mean and standard deviation (per channel for colour images);
character windows as int64 ``(N, T)``; labels as int64 tensors of shape ``(N,)``.

Partitioners: :mod:`fedenv.data.partition` (registered in :data:`fedenv.registry.PARTITIONERS`).
"""

from fedenv.data.cifar10 import read_cifar10, read_cifar10_batch
from fedenv.data.dataset import Dataset, DatasetSpec, load_dataset, subsample_split
from fedenv.data.idx import read_idx
from fedenv.data.partition import (
    partition_dirichlet,
    partition_fedmarl,
    partition_iid,
    partition_natural,
    partition_xclass,
    split_validation,
)
from fedenv.data.shakespeare import LEAF_LETTERS, read_leaf_shakespeare

__all__ = [
    "LEAF_LETTERS", "Dataset", "DatasetSpec", "load_dataset", "partition_dirichlet", "partition_fedmarl",
    "partition_iid", "partition_natural", "partition_xclass", "read_cifar10", "read_cifar10_batch", "read_idx",
    "read_leaf_shakespeare", "split_validation", "subsample_split",
]
