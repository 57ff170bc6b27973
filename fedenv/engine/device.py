"""The torch device the engine runs on, from a configuration string."""

from __future__ import annotations

import torch


def resolve_device(device: str) -> torch.device:
    """``"auto"`` -> CUDA when available, else CPU; any other string is passed to ``torch.device``.

    Raises:
        ValueError: the device string is not valid, or CUDA is asked for but not available.
    """
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError as error:
        raise ValueError(f"invalid device {device!r}; allowed: auto, cpu, cuda, cuda:N") from error
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for but CUDA is not available; use --device auto or cpu")
    return resolved
