"""The contract every per-client gradient function of the batched engine follows."""

from __future__ import annotations

from typing import Protocol

import torch


class GradFn(Protocol):
    """One call computes the minibatch gradient of every client.

    Args:
        params: ``name -> (K, *shape)`` each client's parameters.
        buffers: ``name -> (K, *shape)`` each client's BatchNorm running statistics (empty for models
            without); updated in place as each client's own training-mode forward pass would update them.
        x: ``(K, B, *input_shape)`` each client's minibatch.
        y: ``(K, B)`` int64 labels.
        valid: ``(K, B)`` 0/1 mask in the parameters' dtype; 0 marks padding.

    Returns:
        ``(grads, ce)``: ``grads`` maps each parameter name to ``(K, *shape)``, the gradient of the
        client's mean cross-entropy over its valid samples; ``ce`` is ``(K, B)``, the per-sample
        cross-entropies (0 where padded).
    """

    def __call__(self, params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], x: torch.Tensor,
                 y: torch.Tensor, valid: torch.Tensor) -> tuple[dict[str, torch.Tensor], torch.Tensor]: ...
