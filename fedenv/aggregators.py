"""Aggregation rules on stacked client models.

A stacked model is a ``dict[name -> Tensor]`` whose tensors have a leading client dimension ``K``
(parameters and buffers alike). Floating-point entries are averaged; integer entries (BatchNorm's
``num_batches_tracked``) are averaged as floats and rounded back to their own dtype.
"""

from __future__ import annotations

import torch


def weighted_average(stacked: dict[str, torch.Tensor], weights: torch.Tensor) -> dict[str, torch.Tensor]:
    """Average stacked client tensors with the given weights.

    Args:
        stacked: ``name -> (K, *shape)`` tensors.
        weights: ``(K,)`` non-negative weights; normalised here to sum to 1.

    Returns:
        ``name -> (*shape)`` tensors, each with its input dtype.

    Raises:
        ValueError: weights of the wrong shape, negative, not finite, or summing to zero.
    """
    weights = torch.as_tensor(weights, dtype=torch.float64)
    k = next(iter(stacked.values())).shape[0]
    if weights.shape != (k,):
        raise ValueError(f"need {k} aggregation weights, got shape {tuple(weights.shape)}")
    if not torch.isfinite(weights).all() or (weights < 0).any() or weights.sum() <= 0:
        raise ValueError(f"aggregation weights must be finite, >= 0 and not all 0, got {weights.tolist()}")
    weights = weights / weights.sum()
    out = {}
    for name, tensor in stacked.items():
        w = weights.to(tensor.device).view(-1, *([1] * (tensor.dim() - 1)))
        if tensor.is_floating_point():
            out[name] = (w.to(tensor.dtype) * tensor).sum(dim=0)
        else:
            out[name] = torch.round((w * tensor.double()).sum(dim=0)).to(tensor.dtype)
    return out


def fedavg_weights(data_sizes: torch.Tensor) -> torch.Tensor:
    """FedAvg weights ``n_k / sum_j n_j`` (McMahan et al., AISTATS 2017, Algorithm 1).

    Args:
        data_sizes: ``(K,)`` number of training samples of each uploading client.

    Returns:
        ``(K,)`` float64 weights summing to 1.
    """
    sizes = torch.as_tensor(data_sizes, dtype=torch.float64)
    return sizes / sizes.sum()
