"""VDN checkpoints: weights, the env config and the observation layout, written atomically."""

from __future__ import annotations

from pathlib import Path

import torch

from fedenv.fileio import atomic_write

CHECKPOINT_FORMAT = "fedenv-vdn-checkpoint"
CHECKPOINT_VERSION = 1


def save_checkpoint(path: str | Path, payload: dict) -> None:
    """Write ``payload`` (plus format tags) to ``path`` atomically: a temporary file in the same folder,
    then ``os.replace``; a crash mid-write leaves the previous checkpoint intact."""
    document = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, **payload}
    atomic_write(path, lambda handle: torch.save(document, handle))


def load_checkpoint(path: str | Path) -> dict:
    """Read a checkpoint written by :func:`save_checkpoint` (tensors and plain data only:
    ``torch.load(weights_only=True)``, so loading never runs code).

    Raises:
        FileNotFoundError: no file at ``path``. ValueError: not a fedenv VDN checkpoint of a known version.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    document = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(document, dict) or document.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path} is not a {CHECKPOINT_FORMAT} file")
    if document.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"{path}: checkpoint version {document.get('version')} is not supported "
                         f"(this version reads {CHECKPOINT_VERSION})")
    return document
