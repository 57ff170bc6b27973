"""The general gradient path: ``torch.func.vmap(grad(loss))`` over the client dimension of any module."""

from __future__ import annotations

import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

from fedenv.engine.grad_fns.base import GradFn


def _batch_loss(model, params, buffers, x, y, valid):
    logits = functional_call(model, (params, buffers), (x,))
    ce = F.cross_entropy(logits, y, reduction="none") * valid
    return ce.sum() / valid.sum().clamp(min=1), ce


def vmap_grad_fn(model: nn.Module) -> GradFn:
    """General path: ``torch.func.vmap(grad(loss))`` over the client dimension.

    Returns:
        A :class:`~fedenv.engine.grad_fns.base.GradFn`. BatchNorm buffers are stacked per client, so
        each client's running statistics are updated from its own batch only.
    """
    return vmap(grad(lambda p, b, xb, yb, vb: _batch_loss(model, p, b, xb, yb, vb), has_aux=True))
