"""Helpers for the tests: a tiny federation, tiny idx data folders and tiny trace files."""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import numpy as np

from fedenv.config import EnvConfig

TINY_FEDERATION = dict(num_clients=3, clients_per_round=3, num_rounds=2, device="cpu")
"""The smallest federation the env tests play: every client a candidate every round, two rounds, on the CPU."""


def tiny_config(**overrides) -> EnvConfig:
    """:data:`TINY_FEDERATION` on 200 test samples, with ``overrides`` (fields of :class:`EnvConfig`)."""
    return EnvConfig(**{**TINY_FEDERATION, "test_samples": 200, **overrides})


def expected_round_latency_s(simulator, selected: np.ndarray) -> float:
    """The latency of the round ``simulator`` is in, with the candidates ``selected`` finishing, recomputed
    from the trace replay (FedMarl, arXiv 2201.02932, Section 3): the slowest probing candidate (download
    + one epoch) plus the slowest selected client (remaining epochs + upload), s. For models without
    BatchNorm (every epoch trains all of a client's samples) and without a round deadline."""
    replay, t, data_size = simulator.replay, simulator.round, simulator.clients.data_size
    upload_kbps, download_kbps = replay.bandwidth_kbps(t)
    candidates = simulator.candidates
    probe_s = replay.transfer_s(download_kbps[candidates]) + replay.compute_s(candidates, data_size[candidates], t)
    if len(selected) == 0:
        return float(probe_s.max())
    rest = (simulator.config.local_epochs - 1) * data_size[selected]
    finish_s = replay.compute_s(selected, rest, t) + replay.transfer_s(upload_kbps[selected])
    return float(probe_s.max() + finish_s.max())


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


def make_cifar10_folder(root: Path, per_batch: int, n_test: int, seed: int = 0) -> dict:
    """A CIFAR-10 "python version" folder (5 training batches and a test batch, pickled as the real
    files are: protocol 2, numpy uint8 data) with random images; returns the arrays."""
    import pickle

    rng = np.random.default_rng(seed)
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for name, n in [*((f"data_batch_{i}", per_batch) for i in range(1, 6)), ("test_batch", n_test)]:
        data = rng.integers(0, 256, (n, 3072)).astype(np.uint8)
        labels = [int(v) for v in rng.integers(0, 10, n)]
        (folder / name).write_bytes(pickle.dumps({b"data": data, b"labels": labels}, protocol=2))
        arrays[name] = (data, labels)
    return arrays


LEAF_TEXT = "To be, or not to be: that is the question. Whether 'tis nobler in the mind to suffer\n"


def make_leaf_folder(root: Path, samples_per_user: dict[str, int], window: int = 12, seed: int = 0) -> dict:
    """LEAF Shakespeare train/test JSON files (``shakespeare/data/{train,test}/``) with windows of
    ``LEAF_TEXT``; the test file holds 3 samples per user. Returns the train document."""
    import json

    rng = np.random.default_rng(seed)
    documents = {}
    for split, counts in (("train", samples_per_user), ("test", {u: 3 for u in samples_per_user})):
        user_data = {}
        for user, n in counts.items():
            starts = rng.integers(0, len(LEAF_TEXT) - window - 1, n)
            user_data[user] = {"x": [LEAF_TEXT[s : s + window] for s in starts],
                               "y": [LEAF_TEXT[s + window] for s in starts]}
        document = {"users": list(counts), "num_samples": list(counts.values()), "user_data": user_data}
        folder = root / "shakespeare" / "data" / split
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"all_data_{split}.json").write_text(json.dumps(document))
        documents[split] = document
    return documents["train"]


def strict_json_loads(text: str):
    """``json.loads`` that refuses what standard JSON (RFC 8259) does not have: ``NaN``, ``Infinity``,
    ``-Infinity``."""
    def refuse(constant: str):
        raise ValueError(f"{constant} is not standard JSON")

    return json.loads(text, parse_constant=refuse)


def capture_uploads(federation) -> dict:
    """Wrap ``federation.rule.aggregate`` so that each call's ``RoundUploads`` is kept in the returned dict
    (key ``"uploads"``, the latest round's) before the rule aggregates them as before."""
    captured = {}
    aggregate = federation.rule.aggregate

    def spy(round_uploads):
        captured["uploads"] = round_uploads
        return aggregate(round_uploads)

    federation.rule.aggregate = spy
    return captured
