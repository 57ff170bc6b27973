"""VDN checkpoints: weights, the env and VDN configs and the observation layout, written atomically."""

from __future__ import annotations

import pickle
from pathlib import Path

import torch

from agents.config import VDNConfig
from fedenv.config import EnvConfig
from fedenv.fileio import atomic_write

CHECKPOINT_FORMAT = "fedenv-vdn-checkpoint"
CHECKPOINT_VERSION = 1
PLAIN_TYPES = (str, int, float, bool, type(None), torch.Tensor)
"""What a checkpoint may hold besides dicts, lists and tuples: what ``torch.load(weights_only=True)`` reads."""


def save_checkpoint(path: str | Path, payload: dict) -> None:
    """Write ``payload`` (plus format tags) to ``path`` atomically: a temporary file in the same folder,
    then ``os.replace``; a crash mid-write leaves the previous checkpoint intact.

    Raises:
        TypeError: ``payload`` holds a value that is not plain data (:data:`PLAIN_TYPES`), e.g. a numpy
            scalar, which ``torch.load(weights_only=True)`` would refuse; names where it is.
    """
    document = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, **payload}
    _check_plain(document, "checkpoint")
    atomic_write(path, lambda handle: torch.save(document, handle))


def load_checkpoint(path: str | Path) -> dict:
    """Read a checkpoint written by :func:`save_checkpoint` (tensors and plain data only:
    ``torch.load(weights_only=True)``, so loading never runs code).

    Returns:
        The document, with ``vdn_config`` and ``env_config`` as :class:`VDNConfig` and :class:`EnvConfig`
        (VDN field names from before the Stable-Baselines3 rename are read as the new names).

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: one line naming ``path``: the file is damaged (truncated) or not a fedenv VDN
            checkpoint of a known version, or its configs name an unknown field or hold a bad value.
    """
    path = Path(path)
    if not path.is_file():
        inside = [path / name for name in ("checkpoint.pt", "best.pt") if (path / name).is_file()]
        raise FileNotFoundError(f"no checkpoint at {path}" + (
            f": a folder; did you mean {' or '.join(map(str, inside))}?" if inside else ""))
    try:
        document = torch.load(path, map_location="cpu", weights_only=True)
    except (PermissionError, MemoryError):
        raise
    except pickle.UnpicklingError as error:
        first_line = (str(error).splitlines() or [""])[0][:120]
        raise ValueError(f"{path} is not a {CHECKPOINT_FORMAT} file (the checkpoint.pt or best.pt of a "
                         f"train_agents.py run): torch.load(weights_only=True) cannot read it, or it holds objects "
                         f"other than tensors and plain Python data ({first_line})") from error
    except Exception as error:  # foreign bytes: RuntimeError (truncated zip), EOFError (empty), KeyError, IndexError..
        first_line = (str(error).splitlines() or [""])[0][:120]
        raise ValueError(f"{path} is damaged (truncated?) or not a {CHECKPOINT_FORMAT} file "
                         f"({type(error).__name__}: {first_line})") from error
    if not isinstance(document, dict) or document.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path} is not a {CHECKPOINT_FORMAT} file")
    if document.get("version") != CHECKPOINT_VERSION:
        raise ValueError(f"{path}: checkpoint version {document.get('version')} is not supported "
                         f"(this version reads {CHECKPOINT_VERSION})")
    for key in ("q_state", "vdn_config", "env_config", "feature_names"):
        if key not in document:
            raise ValueError(f"{path} is damaged: the checkpoint has no {key!r} entry")
    try:
        document["vdn_config"] = VDNConfig.from_dict(document["vdn_config"])
        document["env_config"] = EnvConfig.from_dict(document["env_config"])
    except (TypeError, ValueError) as error:
        raise ValueError(f"{path}: {error}") from error
    return document


def _check_plain(value, where: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _check_plain(key, f"{where} key {key!r}")
            _check_plain(item, f"{where}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_plain(item, f"{where}[{i}]")
    elif not isinstance(value, PLAIN_TYPES):
        raise TypeError(f"{where} is a {type(value).__module__}.{type(value).__name__} ({value!r}); a checkpoint "
                         f"holds only tensors and plain Python values (convert with int()/float())")
