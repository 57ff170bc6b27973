"""CIFAR-10 (Krizhevsky, 2009, "Learning multiple layers of features from tiny images") in the "python
version" layout that torchvision downloads: ``<data_root>/cifar-10-batches-py/{data_batch_1..5,test_batch}``,
each a pickled dict with ``data`` (uint8 ``(N, 3072)``, channel-major 32x32 images) and ``labels``.

The pickles are read with a restricted unpickler: the names a pickled numpy array uses resolve to
stand-ins that accept only a plain uint8 array and build it with ``numpy.frombuffer`` from the file's
own bytes (numpy's unpickling, which trusts dtype state, never runs); any other class or function is
refused before it is looked up, let alone called. torchvision's own reader uses plain ``pickle.load``.
The ``cifar10`` dataset (50,000 / 10,000 colour 32x32 images) is standardised per channel with the
training set's mean and standard deviation.
"""

from __future__ import annotations

import codecs
import io
import math
import pickle
from pathlib import Path

import numpy as np
import torch

from fedenv.data.dataset import Dataset, DatasetSpec

CIFAR10_FOLDER = "cifar-10-batches-py"
CIFAR10_TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR10_TEST_BATCH = "test_batch"


class _Uint8Dtype:
    """Stands in for ``numpy.dtype`` while unpickling: accepts only the plain uint8 dtype and its
    standard pickled state, so no dtype with object fields (raw pointers) can be built."""

    def __init__(self, code, align=False, copy=True):
        if code not in ("u1", b"u1"):
            raise pickle.UnpicklingError(f"refused dtype {code!r}: CIFAR-10 batches hold uint8 arrays only")

    def __setstate__(self, state):
        if not (isinstance(state, tuple) and len(state) == 8 and state[0] == 3 and state[1] in ("|", b"|")
                and state[2:] == (None, None, None, -1, -1, 0)):
            raise pickle.UnpicklingError(f"refused dtype state {state!r}: not a plain uint8 dtype")


class _Uint8Array:
    """Stands in for ``numpy.ndarray`` while unpickling: the array is built by :func:`numpy.frombuffer`
    from the bytes in the file (so its size is bounded by the file's), never by numpy's own unpickling."""

    array: np.ndarray | None = None

    def __setstate__(self, state):
        if not (isinstance(state, tuple) and len(state) == 5):
            raise pickle.UnpicklingError("refused array state: not (version, shape, dtype, fortran, data)")
        version, shape, dtype, fortran, raw = state
        self.array = _uint8_array(raw, dtype, shape)
        if version != 1 or fortran:
            raise pickle.UnpicklingError("refused array state: only version-1, C-ordered arrays are allowed")


def _uint8_array(raw, dtype, shape) -> np.ndarray:
    if not isinstance(dtype, _Uint8Dtype) or not isinstance(raw, (bytes, bytearray)):
        raise pickle.UnpicklingError("refused array: it must hold uint8 data given as bytes")
    if not (isinstance(shape, tuple) and all(isinstance(n, int) and n >= 0 for n in shape)
            and math.prod(shape) == len(raw)):
        raise pickle.UnpicklingError(f"refused array: shape {shape!r} does not match its {len(raw)} bytes")
    return np.frombuffer(bytes(raw), dtype=np.uint8).reshape(shape).copy()


def _reconstruct(subtype, shape, code) -> _Uint8Array:
    if subtype is not _Uint8Array:
        raise pickle.UnpicklingError("refused array reconstruction of a type other than numpy.ndarray")
    return _Uint8Array()


def _frombuffer(buffer, dtype, shape, order) -> _Uint8Array:
    if order != "C":
        raise pickle.UnpicklingError("refused array: only C-ordered arrays are allowed")
    stub = _Uint8Array()
    stub.array = _uint8_array(buffer, dtype, shape)
    return stub


def _array_globals() -> dict[tuple[str, str], object]:
    """What the globals of a pickled numpy array (protocols 2 to 5, numpy 1 and 2 module names) resolve
    to here, plus the text-to-bytes codec that Python 3's protocol 2 uses for bytes."""
    allowed = {("numpy", "ndarray"): _Uint8Array, ("numpy", "dtype"): _Uint8Dtype, ("_codecs", "encode"): codecs.encode}
    for package in ("numpy.core", "numpy._core"):
        allowed[(f"{package}.multiarray", "_reconstruct")] = _reconstruct
        allowed[(f"{package}.numeric", "_frombuffer")] = _frombuffer
    return allowed


class _ArrayUnpickler(pickle.Unpickler):
    allowed = _array_globals()

    def find_class(self, module: str, name: str):
        if (module, name) not in self.allowed:
            raise pickle.UnpicklingError(
                f"refused to load {module}.{name}: only uint8 numpy arrays and plain data are allowed"
            )
        return self.allowed[(module, name)]

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refused a persistent reference")


def read_cifar10_batch(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """One CIFAR-10 python batch file.

    Returns:
        ``(images, labels)``: uint8 ``(N, 3, 32, 32)`` and int64 ``(N,)``.

    Raises:
        ValueError: the pickle names anything but numpy's array reconstruction, or lacks ``data`` /
            ``labels`` of the right shapes and types.
    """
    path = Path(path)
    try:
        batch = _ArrayUnpickler(io.BytesIO(path.read_bytes()), encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as error:
        raise ValueError(f"{path}: not a CIFAR-10 batch ({error})") from error
    if not isinstance(batch, dict):
        raise ValueError(f"{path}: expected a dict with data and labels, got {type(batch).__name__}")
    batch = {key.decode() if isinstance(key, bytes) else key: value for key, value in batch.items()}
    data, labels = batch.get("data"), batch.get("labels")
    data = data.array if isinstance(data, _Uint8Array) else data
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise ValueError(f"{path}: 'data' must be a uint8 array of shape (N, 3072)")
    valid_labels = isinstance(labels, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in labels)
    labels = np.asarray(labels, dtype=np.int64) if valid_labels else None
    if labels is None or labels.shape != (len(data),) or labels.min(initial=0) < 0 or labels.max(initial=0) > 9:
        raise ValueError(f"{path}: 'labels' must be a list of {len(data)} labels in 0..9")
    return data.reshape(-1, 3, 32, 32), labels


def read_cifar10(data_root: str | Path) -> dict[str, np.ndarray]:
    """CIFAR-10 from ``<data_root>/cifar-10-batches-py``.

    Returns:
        ``train_x`` uint8 ``(50000, 3, 32, 32)``, ``train_y`` int64 ``(50000,)``, ``test_x``, ``test_y``
        (fewer for a smaller folder of the same layout).

    Raises:
        FileNotFoundError: a batch file is missing (names it and the expected layout).
        ValueError: a batch file is malformed or unsafe.
    """
    folder = Path(data_root) / CIFAR10_FOLDER
    for name in (*CIFAR10_TRAIN_BATCHES, CIFAR10_TEST_BATCH):
        if not (folder / name).is_file():
            raise FileNotFoundError(
                f"data_root={str(data_root)!r}: no {name} in {folder}; cifar10 must be in torchvision's layout "
                f"<data_root>/{CIFAR10_FOLDER}/ (add --download to fetch it)"
            )
    train = [read_cifar10_batch(folder / name) for name in CIFAR10_TRAIN_BATCHES]
    test_x, test_y = read_cifar10_batch(folder / CIFAR10_TEST_BATCH)
    return {"train_x": np.concatenate([x for x, _ in train]), "train_y": np.concatenate([y for _, y in train]),
            "test_x": test_x, "test_y": test_y}


def load_cifar10(data_root: str, download: bool) -> Dataset:
    """:func:`read_cifar10` as a :class:`Dataset`, pixels scaled to ``[0, 1]`` and standardised per
    channel; with ``download`` torchvision fetches the folder first."""
    if download:
        from torchvision import datasets

        for train in (True, False):
            datasets.CIFAR10(data_root, train=train, download=True)
    arrays = read_cifar10(data_root)
    train = torch.as_tensor(arrays["train_x"], dtype=torch.float32) / 255.0
    test = torch.as_tensor(arrays["test_x"], dtype=torch.float32) / 255.0
    mean, std = train.mean(dim=(0, 2, 3), keepdim=True), train.std(dim=(0, 2, 3), keepdim=True)
    return Dataset("cifar10", (train - mean) / std, torch.as_tensor(arrays["train_y"]), (test - mean) / std,
                   torch.as_tensor(arrays["test_y"]), num_classes=10)


CIFAR10 = DatasetSpec("cifar10", load_cifar10, needs_data_root=True,
                      layout=f"{CIFAR10_FOLDER}/ in torchvision's layout", input_kind="image")
