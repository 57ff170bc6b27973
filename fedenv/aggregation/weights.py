"""Weighted sums of stacked client models, and rows of them.

A stacked model is a ``dict[name -> Tensor]`` whose tensors have a leading client dimension ``K``
(parameters and buffers alike). Floating-point entries are combined as floats; integer entries
(BatchNorm's ``num_batches_tracked``) are combined as floats and rounded back to their own dtype.
"""

from __future__ import annotations

import numpy as np
import torch


def take_rows(stacked: dict[str, torch.Tensor], rows) -> dict[str, torch.Tensor]:
    """``name -> (len(rows), *shape)``: the entries of ``stacked`` (``name -> (K, *shape)``) at positions
    ``rows`` (a list, int array or int tensor), in that order."""
    rows = torch.as_tensor(rows, dtype=torch.int64)
    return {name: t[rows.to(t.device)] for name, t in stacked.items()}


def weighted_sum(stacked: dict[str, torch.Tensor], weights) -> dict[str, torch.Tensor]:
    """``sum_k weights[k] * stacked[name][k]`` for every entry (weights not renormalised).

    Args:
        stacked: ``name -> (K, *shape)`` tensors.
        weights: ``(K,)`` finite, non-negative weights.

    Returns:
        ``name -> (*shape)`` tensors, each with its input dtype.

    Raises:
        ValueError: weights of the wrong shape, negative or not finite.
    """
    weights = torch.as_tensor(np.asarray(weights, dtype=np.float64))
    k = next(iter(stacked.values())).shape[0]
    if weights.shape != (k,):
        raise ValueError(f"need {k} aggregation weights, got shape {tuple(weights.shape)}")
    if not torch.isfinite(weights).all() or (weights < 0).any():
        raise ValueError(f"aggregation weights must be finite and >= 0, got {weights.tolist()}")
    out = {}
    for name, tensor in stacked.items():
        w = weights.to(tensor.device).view(-1, *([1] * (tensor.dim() - 1)))
        if tensor.is_floating_point():
            out[name] = (w.to(tensor.dtype) * tensor).sum(dim=0)
        else:
            out[name] = torch.round((w * tensor.double()).sum(dim=0)).to(tensor.dtype)
    return out


def weighted_average(stacked: dict[str, torch.Tensor], weights) -> dict[str, torch.Tensor]:
    """:func:`weighted_sum` with the weights normalised to sum to 1.

    Raises:
        ValueError: as :func:`weighted_sum`, or weights summing to zero.
    """
    weights = np.asarray(weights, dtype=np.float64)
    if not np.all(np.isfinite(weights)) or weights.sum() <= 0:
        raise ValueError(f"aggregation weights must be finite, >= 0 and not all 0, got {weights.tolist()}")
    return weighted_sum(stacked, weights / weights.sum())
