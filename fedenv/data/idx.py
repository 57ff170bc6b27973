"""MNIST and Fashion-MNIST: LeCun's idx files in torchvision's folder layout.

``mnist`` / ``fashion-mnist`` are the full sets (60,000 training / 10,000 test images) read from
``<data_root>/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]`` (``FashionMNIST`` for
Fashion-MNIST). With ``download=True`` torchvision fetches the files into that folder first.
Images are standardised with the training set's mean and standard deviation
(:func:`fedenv.data.dataset.greyscale_dataset`).
"""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

import numpy as np

from fedenv.data.dataset import Dataset, DatasetSpec, greyscale_dataset

IDX_FILES = {
    "train_x": "train-images-idx3-ubyte",
    "train_y": "train-labels-idx1-ubyte",
    "test_x": "t10k-images-idx3-ubyte",
    "test_y": "t10k-labels-idx1-ubyte",
}
_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str | Path) -> np.ndarray:
    """Read an idx file (LeCun's MNIST format, http://yann.lecun.com/exdb/mnist/), gzipped or raw.

    Args:
        path: file path; a ``.gz`` suffix means gzip-compressed.

    Returns:
        A numpy array with the file's dtype and shape (uint8 images ``(N, 28, 28)``, labels ``(N,)``).

    Raises:
        ValueError: the magic number or the size does not match the idx format.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        data = handle.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path}: not an idx file (bad magic number)")
    if data[2] not in _IDX_DTYPES:
        raise ValueError(f"{path}: unknown idx element type 0x{data[2]:02x}")
    ndim = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    array = np.frombuffer(data, dtype=_IDX_DTYPES[data[2]], offset=4 + 4 * ndim)
    if array.size != int(np.prod(shape)):
        raise ValueError(f"{path}: header says shape {shape} but the file holds {array.size} elements")
    return array.reshape(shape)


def load_torchvision_layout(name: str, folder: str, data_root: str, download: bool) -> Dataset:
    """The four idx files of ``<data_root>/<folder>/raw/`` as a :class:`Dataset` called ``name``.

    Args:
        folder: torchvision's folder, also the name of its dataset class (``MNIST``, ``FashionMNIST``),
            which fetches missing files when ``download`` is set.

    Raises:
        FileNotFoundError: an idx file is missing (names it and the layout).
        ValueError: a malformed idx file.
    """
    raw = Path(data_root) / folder / "raw"
    if download:
        from torchvision import datasets

        for train in (True, False):
            getattr(datasets, folder)(data_root, train=train, download=True)
    arrays = {}
    for key, stem in IDX_FILES.items():
        path = next((p for p in (raw / stem, raw / f"{stem}.gz") if p.is_file()), None)
        if path is None:
            raise FileNotFoundError(
                f"data_root={data_root!r}: no {stem} or {stem}.gz in {raw}; {name} must be in torchvision's "
                f"layout <data_root>/{folder}/raw/ (add --download to fetch it)"
            )
        arrays[key] = read_idx(path)
    return greyscale_dataset(name, arrays["train_x"], arrays["train_y"], arrays["test_x"], arrays["test_y"])


MNIST = DatasetSpec("mnist", functools.partial(load_torchvision_layout, "mnist", "MNIST"), needs_data_root=True,
                    layout="MNIST/raw/ in torchvision's layout", input_kind="image")
FASHION_MNIST = DatasetSpec(
    "fashion-mnist", functools.partial(load_torchvision_layout, "fashion-mnist", "FashionMNIST"),
    needs_data_root=True, layout="FashionMNIST/raw/ in torchvision's layout", input_kind="image",
)
