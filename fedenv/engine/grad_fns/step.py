"""The SGD step of the batched engine: gradients of every client, then ``torch.optim.SGD``'s update.

A gradient function may bring its own step (the attribute ``sgd_step``, a :class:`StepFn`) that
applies the update as it goes: per chunk of clients on a CPU (:mod:`.cpu_chunks`), or fused into the
weight-gradient matrix products of the MLP (:mod:`fedenv.engine.grad_fns.mlp`); :func:`sgd_step_of` picks it, else it
computes the gradients and applies :func:`sgd_update`.
"""

from __future__ import annotations

from typing import Protocol

import torch

from fedenv.engine.grad_fns.base import GradFn
from fedenv.engine.optimiser import LocalTrainingConfig


class StepFn(Protocol):
    """One SGD step of every client, in place.

    Args:
        params: ``name -> (K, *shape)`` each client's parameters, updated in place.
        momentum: ``name -> (K, *shape)`` each client's momentum buffer, updated in place (used only
            when ``config.momentum`` is set).
        anchor: ``name -> (K, *shape)`` each client's FedProx anchor, or ``name -> (*shape)`` one for
            all (used only when ``config.fedprox_mu`` is set).
        buffers, x, y, valid: as :class:`~fedenv.engine.grad_fns.base.GradFn` takes them.
        config: the optimiser settings (:class:`~fedenv.engine.optimiser.LocalTrainingConfig`).

    Returns:
        ``ce`` ``(K, B)``: the per-sample cross-entropies before the step (0 where padded).
    """

    def __call__(self, params: dict[str, torch.Tensor], momentum: dict[str, torch.Tensor],
                 anchor: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                 valid: torch.Tensor, config: LocalTrainingConfig) -> torch.Tensor: ...


def sgd_update(params: dict[str, torch.Tensor], grads: dict[str, torch.Tensor], momentum: dict[str, torch.Tensor],
               anchor: dict[str, torch.Tensor], config: LocalTrainingConfig) -> None:
    """``torch.optim.SGD``'s update (dampening 0, no Nesterov) of ``params`` in place, with weight decay,
    the FedProx term ``mu (w - w_global)`` (Li et al., MLSys 2020, Eq. 2) and momentum as ``config``
    asks; arguments as :class:`StepFn` takes them, ``grads`` as ``params``."""
    for name, p in params.items():
        g = grads[name]
        if config.weight_decay:
            g = g.add(p, alpha=config.weight_decay)
        if config.fedprox_mu:
            g = g.add(p - anchor[name], alpha=config.fedprox_mu)
        if config.momentum:
            g = momentum[name].mul_(config.momentum).add_(g)
        p.add_(g, alpha=-config.lr)


def sgd_step_of(grad_fn: GradFn) -> StepFn:
    """``grad_fn``'s own step (its attribute ``sgd_step``) if it has one, else its gradients followed by
    :func:`sgd_update`."""
    own = getattr(grad_fn, "sgd_step", None)
    if own is not None:
        return own

    def step(params, momentum, anchor, buffers, x, y, valid, config):
        grads, ce = grad_fn(params, buffers, x, y, valid)
        sgd_update(params, grads, momentum, anchor, config)
        return ce

    return step
