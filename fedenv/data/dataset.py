"""The :class:`Dataset` tensors, the :class:`DatasetSpec` a dataset registers, and :func:`load_dataset`."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from fedenv.names import check_known
from fedenv.registry import DATASETS

INPUT_KINDS = ("image", "sequence")
"""What a dataset's inputs are: ``(C, H, W)`` float images or ``(T,)`` integer token windows."""


@dataclass(frozen=True)
class Dataset:
    """A classification dataset held as tensors.

    Attributes:
        name: dataset name (a name of :data:`fedenv.registry.DATASETS`).
        train_x: float32 ``(N_train, C, H, W)`` images, standardised with the training mean and std,
            or int64 ``(N_train, T)`` character windows.
        train_y: int64 ``(N_train,)``.
        test_x: as ``train_x``, ``(N_test, ...)``.
        test_y: int64 ``(N_test,)``.
        num_classes: number of labels (10 for the image sets, 80 characters for ``shakespeare``).
        train_owner: int64 ``(N_train,)`` user of each training sample, or None where the dataset
            records none (the ``natural`` partitioner needs it).
    """

    name: str
    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor
    num_classes: int
    train_owner: np.ndarray | None = None

    @property
    def input_shape(self) -> tuple[int, ...]:
        """Shape of one input: ``(channels, height, width)`` or ``(T,)``."""
        return tuple(self.train_x.shape[1:])


@dataclass(frozen=True)
class DatasetSpec:
    """What :data:`fedenv.registry.DATASETS` holds for one dataset.

    Attributes:
        name: the registered name.
        load: ``load(data_root, download) -> Dataset``; ``data_root`` is an absolute path, or None for a
            dataset that needs no folder. Raises ``FileNotFoundError`` for missing files and
            ``ValueError`` for malformed ones.
        needs_data_root: the files are read from ``--data-root``.
        layout: where the files go under ``data_root`` (for the "needs --data-root" error).
        input_kind: ``"image"`` (``(C, H, W)`` inputs) or ``"sequence"`` (``(T,)`` token ids).
        records_owners: the training samples carry their user (:attr:`Dataset.train_owner`).
    """

    name: str
    load: Callable[[str | None, bool], Dataset]
    needs_data_root: bool
    layout: str
    input_kind: str
    records_owners: bool = False

    def __post_init__(self):
        if self.input_kind not in INPUT_KINDS:
            raise ValueError(
                f"dataset {self.name!r}: input_kind={self.input_kind!r}; allowed: {', '.join(INPUT_KINDS)}"
            )


def load_dataset(name: str, data_root: str | None = None, download: bool = False) -> Dataset:
    """Load a registered dataset by name.

    Args:
        name: a name of :data:`fedenv.registry.DATASETS`.
        data_root: folder in the dataset's layout (:attr:`DatasetSpec.layout`), needed by every dataset
            with ``needs_data_root`` (all built-ins but ``mnist5k``).
        download: let the dataset fetch missing files into ``data_root`` (needs a network; not for
            ``shakespeare``).

    Returns:
        The :class:`Dataset`. Loads are cached per ``(spec, data_root, download)``.

    Raises:
        ValueError: unknown name (lists the registered ones), ``data_root`` missing for a folder dataset,
            a download the dataset cannot do, a malformed file (names it and what is wrong), inputs and
            labels (or users) of a split in different counts, or a loader whose data contradicts its
            spec's ``input_kind`` or ``records_owners``.
        FileNotFoundError: the files are not where the dataset's layout puts them.
    """
    spec = DATASETS.get(name)
    if not spec.needs_data_root:
        return _load(spec, None, download)
    if data_root is None:
        raise ValueError(f"dataset {name!r} needs --data-root: a folder holding {spec.layout} (or add --download)")
    return _load(spec, str(Path(data_root).expanduser().resolve()), download)


@functools.lru_cache(maxsize=4)
def _load(spec: DatasetSpec, data_root: str | None, download: bool) -> Dataset:
    dataset = spec.load(data_root, download)
    counts = {"train_x": len(dataset.train_x), "train_y": len(dataset.train_y), "test_x": len(dataset.test_x),
              "test_y": len(dataset.test_y)}
    if dataset.train_owner is not None:
        counts["train_owner"] = len(dataset.train_owner)
    for split in ("train", "test"):
        split_counts = {key: n for key, n in counts.items() if key.startswith(split)}
        if len(set(split_counts.values())) > 1:
            listed = ", ".join(f"{key}: {n}" for key, n in split_counts.items())
            raise ValueError(f"dataset {spec.name!r} (data_root={data_root!r}): the {split} split's inputs, labels "
                             f"and users differ in count ({listed}); every sample needs its label")
    kind = {1: "sequence", 3: "image"}.get(len(dataset.input_shape))
    if kind != spec.input_kind:
        raise ValueError(f"dataset {spec.name!r} declares input_kind={spec.input_kind!r} but its inputs have shape "
                         f"{dataset.input_shape}; allowed: (C, H, W) for 'image', (T,) for 'sequence'")
    if (dataset.train_owner is not None) != spec.records_owners:
        raise ValueError(f"dataset {spec.name!r} declares records_owners={spec.records_owners} but its loader "
                         f"{'gave no' if spec.records_owners else 'gave'} train_owner")
    return dataset


def greyscale_dataset(name: str, train_x, train_y, test_x, test_y) -> Dataset:
    """A :class:`Dataset` from uint8 ``(N, H, W)`` grey images and integer labels: pixels scaled to
    ``[0, 1]``, then standardised with the training set's mean and standard deviation; a channel axis
    is added, ``(N, 1, H, W)``; ``num_classes`` is the largest training label + 1."""
    train = torch.as_tensor(np.asarray(train_x, dtype=np.float32) / 255.0).unsqueeze(1)
    test = torch.as_tensor(np.asarray(test_x, dtype=np.float32) / 255.0).unsqueeze(1)
    mean, std = train.mean(), train.std()
    train_y = torch.as_tensor(np.asarray(train_y, dtype=np.int64))
    return Dataset(
        name=name,
        train_x=(train - mean) / std,
        train_y=train_y,
        test_x=(test - mean) / std,
        test_y=torch.as_tensor(np.asarray(test_y, dtype=np.int64)),
        num_classes=int(train_y.max()) + 1,
    )


def subsample_split(dataset: Dataset, split: str, size: int | None, seed: int = 0) -> Dataset:
    """``dataset`` with its ``split`` (``"train"`` or ``"test"``) cut to a fixed random subset of ``size``
    samples, kept in their original order (None: unchanged).

    The subset depends only on ``seed``, so every episode and policy sees the same samples. The test
    split is cut for large models on a CPU, where evaluating all of it each round dominates the run
    (``EnvConfig.test_samples``); the training split to keep per-client sizes of a large dataset small
    (``EnvConfig.train_samples``; the samples' users, where recorded, are cut alike).

    Raises:
        ValueError: ``split`` is neither ``"train"`` nor ``"test"``, or ``size`` is below 1 or above the
            split's size.
    """
    check_known(split, ("train", "test"), "split")
    if size is None:
        return dataset
    labels = dataset.train_y if split == "train" else dataset.test_y
    n = len(labels)
    if not 1 <= size <= n:
        raise ValueError(f"{split}_samples={size} must be in [1, {n}] (the {split} split of {dataset.name!r})")
    keep = np.sort(np.random.default_rng(seed).permutation(n)[:size])
    index = torch.as_tensor(keep).to(labels.device)
    if split == "test":
        return dataclasses.replace(dataset, test_x=dataset.test_x[index], test_y=dataset.test_y[index])
    owners = None if dataset.train_owner is None else dataset.train_owner[keep]
    return dataclasses.replace(dataset, train_x=dataset.train_x[index], train_y=dataset.train_y[index],
                               train_owner=owners)
