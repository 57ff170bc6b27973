"""Helpers for the tests: tiny idx data folders and tiny trace files."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np


def write_idx(path: Path, array: np.ndarray, compress: bool) -> None:
    """Write ``array`` (uint8) in LeCun's idx format, gzipped when ``compress``."""
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(struct.pack(">I", n) for n in array.shape)
    data = header + array.astype(np.uint8).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    if compress:
        with gzip.open(str(path) + ".gz", "wb") as handle:
            handle.write(data)
    else:
        path.write_bytes(data)


def make_torchvision_folder(root: Path, folder: str, n_train: int, n_test: int, compress: bool, seed: int = 0):
    """A torchvision-layout folder with random 28x28 images and labels 0..9; returns the arrays."""
    rng = np.random.default_rng(seed)
    arrays = {
        "train-images-idx3-ubyte": rng.integers(0, 256, (n_train, 28, 28)),
        "train-labels-idx1-ubyte": np.arange(n_train) % 10,
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (n_test, 28, 28)),
        "t10k-labels-idx1-ubyte": np.arange(n_test) % 10,
    }
    for name, array in arrays.items():
        write_idx(root / folder / "raw" / name, array, compress)
    return arrays


def trace_document(clients: list[dict], macs: int = 1_000_000) -> dict:
    """A fedenv-trace document around the given client entries."""
    return {"format": "fedenv-trace", "version": 1,
            "reference_model": {"name": "test", "macs_per_sample": macs}, "clients": clients}
