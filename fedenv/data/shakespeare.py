"""LEAF's Shakespeare next-character task (Caldas et al., "LEAF: a benchmark for federated settings",
arXiv 1812.01097): the JSON files that LEAF's ``preprocess.sh`` writes to
``<data_root>/shakespeare/data/{train,test}/*.json``, each ``{"users": [...], "user_data": {user: {"x":
[80-character windows], "y": [next characters]}}}``. Characters are indexed in LEAF's vocabulary
:data:`LEAF_LETTERS` (``models/utils/language_utils.py`` of the LEAF repository). Each training sample
keeps its user (speaking role), so the ``natural`` partitioner can give each client one user's lines.
No download: run LEAF's ``preprocess.sh``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from fedenv.data.dataset import Dataset, DatasetSpec

LEAF_LETTERS = "\n !\"&'(),-.0123456789:;>?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]abcdefghijklmnopqrstuvwxyz}"


def _leaf_folder(data_root: Path, split: str) -> Path:
    for folder in (data_root / "shakespeare" / "data" / split, data_root / split):
        if folder.is_dir() and any(folder.glob("*.json")):
            return folder
    raise FileNotFoundError(
        f"data_root={str(data_root)!r}: no LEAF {split} JSON files in {data_root / 'shakespeare' / 'data' / split} "
        f"(or {data_root / split}); run LEAF's shakespeare/preprocess.sh and point --data-root at its data folder"
    )


def _encode(text: str, where: str) -> list[int]:
    indices = [LEAF_LETTERS.find(c) for c in text]
    if -1 in indices:
        bad = text[indices.index(-1)]
        raise ValueError(f"{where}: character {bad!r} is not in LEAF's Shakespeare vocabulary {LEAF_LETTERS!r}")
    return indices


def _leaf_users(path: Path):
    """``(user, windows, targets)`` of one LEAF JSON file, its structure checked."""
    try:
        document = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not a JSON file ({error})") from error
    if not isinstance(document, dict) or not isinstance(document.get("user_data"), dict):
        raise ValueError(f"{path}: a LEAF file must be a JSON object with a 'user_data' object")
    user_data = document["user_data"]
    names = document.get("users", list(user_data))
    if not isinstance(names, list):
        raise ValueError(f"{path}: 'users' must be a list of user names, got {type(names).__name__}")
    for user in names:
        samples = user_data.get(user) if isinstance(user, str) else None
        if not isinstance(samples, dict):
            raise ValueError(f"{path}: user {user!r} of 'users' has no entry in 'user_data'")
        windows, targets = samples.get("x"), samples.get("y")
        if not isinstance(windows, list) or not isinstance(targets, list) or len(windows) != len(targets):
            raise ValueError(f"{path}: user {user!r} needs lists 'x' and 'y' of equal length")
        yield user, windows, targets


def read_leaf_shakespeare(data_root: str | Path) -> dict[str, np.ndarray]:
    """LEAF's Shakespeare JSON files (see the module docstring).

    Returns:
        ``train_x`` int64 ``(N, T)`` character ids, ``train_y`` int64 ``(N,)`` next-character ids,
        ``train_owner`` int64 ``(N,)`` user number (users of the training files in order of appearance),
        ``test_x``, ``test_y``; ``T`` is the window length (80 in LEAF).

    Raises:
        FileNotFoundError: no JSON files where LEAF writes them.
        ValueError: a malformed file, windows of different lengths, a target that is not one character,
            or a character outside :data:`LEAF_LETTERS` (names the file and the user).
    """
    data_root = Path(data_root)
    out = {}
    for split in ("train", "test"):
        xs, ys, owners, users = [], [], [], {}
        for path in sorted(_leaf_folder(data_root, split).glob("*.json")):
            for user, windows, targets in _leaf_users(path):
                owner = users.setdefault(user, len(users))
                for window, target in zip(windows, targets):
                    where = f"{path}: user {user!r}"
                    if not isinstance(window, str) or not window:
                        raise ValueError(f"{where}: window {window!r} must be a non-empty string")
                    if not isinstance(target, str) or len(target) != 1:
                        raise ValueError(f"{where}: target {target!r} must be one character")
                    if xs and len(window) != len(xs[0]):
                        raise ValueError(f"{where}: window of {len(window)} characters; earlier ones have {len(xs[0])}")
                    xs.append(_encode(window, where))
                    ys.append(_encode(target, where)[0])
                    owners.append(owner)
        if not xs:
            raise ValueError(f"{data_root}: the LEAF {split} files hold no samples")
        if split == "test" and len(xs[0]) != out["train_x"].shape[1]:
            raise ValueError(f"{data_root}: LEAF test windows have {len(xs[0])} characters, training windows "
                             f"{out['train_x'].shape[1]}")
        out[f"{split}_x"] = np.asarray(xs, dtype=np.int64)
        out[f"{split}_y"] = np.asarray(ys, dtype=np.int64)
        if split == "train":
            out["train_owner"] = np.asarray(owners, dtype=np.int64)
    return out


def load_shakespeare(data_root: str, download: bool) -> Dataset:
    """:func:`read_leaf_shakespeare` as a :class:`Dataset` (int64 windows, 80 classes, users kept).

    Raises:
        ValueError: ``download`` is set (LEAF's files are made by its own script).
    """
    if download:
        raise ValueError("dataset 'shakespeare' cannot be downloaded here: run LEAF's shakespeare/preprocess.sh")
    arrays = read_leaf_shakespeare(data_root)
    return Dataset("shakespeare", torch.as_tensor(arrays["train_x"]), torch.as_tensor(arrays["train_y"]),
                   torch.as_tensor(arrays["test_x"]), torch.as_tensor(arrays["test_y"]), num_classes=len(LEAF_LETTERS),
                   train_owner=arrays["train_owner"])


SHAKESPEARE = DatasetSpec("shakespeare", load_shakespeare, needs_data_root=True,
                          layout="LEAF's shakespeare/data/{train,test}/*.json", input_kind="sequence",
                          records_owners=True)
