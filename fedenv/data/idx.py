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
import zlib
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
        ValueError: a ``.gz`` file that is not gzip data or is cut short (a half-finished download), or
            content that does not match the idx format: bad magic number, a header cut short, or a size
            other than the header's shape (each names the file and what is wrong).
    """
    path = Path(path)
    data = _read_bytes(path)
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(f"{path}: not an idx file (bad magic number)")
    if data[2] not in _IDX_DTYPES:
        raise ValueError(f"{path}: unknown idx element type 0x{data[2]:02x}")
    ndim, dtype = data[3], np.dtype(_IDX_DTYPES[data[2]])
    header_bytes = 4 + 4 * ndim
    if len(data) < header_bytes:
        raise ValueError(f"{path}: idx header cut short: {len(data)} bytes, the header of a {ndim}-dimensional "
                         f"array takes {header_bytes} (a truncated file)")
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(data) - header_bytes != expected:
        raise ValueError(f"{path}: header says shape {shape} ({expected} bytes of data) but the file holds "
                         f"{len(data) - header_bytes} bytes after the header")
    return np.frombuffer(data, dtype=dtype, offset=header_bytes).reshape(shape)


def _read_bytes(path: Path) -> bytes:
    """The bytes of ``path``, gunzipped for a ``.gz`` suffix.

    Raises:
        ValueError: a ``.gz`` file that is not gzip data (an HTML error page saved under the name) or is
            cut short or corrupt (names the file).
    """
    if path.suffix != ".gz":
        return path.read_bytes()
    try:
        with gzip.open(path, "rb") as handle:
            return handle.read()
    except gzip.BadGzipFile as error:
        raise ValueError(f"{path}: not gzip data ({error}); delete it and download it again") from error
    except (EOFError, zlib.error) as error:
        raise ValueError(f"{path}: gzip data cut short or corrupt ({error}), e.g. an interrupted download; "
                         f"delete it and download it again") from error


def load_torchvision_layout(name: str, folder: str, data_root: str, download: bool) -> Dataset:
    """The four idx files of ``<data_root>/<folder>/raw/`` as a :class:`Dataset` called ``name``.

    Args:
        folder: torchvision's folder, also the name of its dataset class (``MNIST``, ``FashionMNIST``),
            which fetches missing files when ``download`` is set.

    Raises:
        FileNotFoundError: an idx file is missing (names it and the layout).
        ValueError: a malformed idx file (:func:`read_idx`), or an images file and its labels file of
            different counts (names both files and both counts).
    """
    raw = Path(data_root) / folder / "raw"
    if download:
        from torchvision import datasets

        for train in (True, False):
            getattr(datasets, folder)(data_root, train=train, download=True)
    arrays, paths = {}, {}
    for key, stem in IDX_FILES.items():
        paths[key] = next((p for p in (raw / stem, raw / f"{stem}.gz") if p.is_file()), None)
        if paths[key] is None:
            raise FileNotFoundError(
                f"data_root={data_root!r}: no {stem} or {stem}.gz in {raw}; {name} must be in torchvision's "
                f"layout <data_root>/{folder}/raw/ (add --download to fetch it)"
            )
        arrays[key] = read_idx(paths[key])
    for split in ("train", "test"):
        images, labels = arrays[f"{split}_x"], arrays[f"{split}_y"]
        if len(images) != len(labels):
            raise ValueError(f"{paths[f'{split}_x']} holds {len(images)} images but {paths[f'{split}_y']} "
                             f"{len(labels)} labels; the counts must match (a truncated or mixed-up file)")
    return greyscale_dataset(name, arrays["train_x"], arrays["train_y"], arrays["test_x"], arrays["test_y"])


MNIST = DatasetSpec("mnist", functools.partial(load_torchvision_layout, "mnist", "MNIST"), needs_data_root=True,
                    layout="MNIST/raw/ in torchvision's layout", input_kind="image")
FASHION_MNIST = DatasetSpec(
    "fashion-mnist", functools.partial(load_torchvision_layout, "fashion-mnist", "FashionMNIST"),
    needs_data_root=True, layout="FashionMNIST/raw/ in torchvision's layout", input_kind="image",
)
