"""Batched local SGD: the candidates of a round train as one computation.

The client models are stacked along a leading dimension ``K``; at each step one call of a
:class:`~fedenv.engine.grad_fns.base.GradFn` (the MLP, grouped-convolution or vmap path, see
:mod:`fedenv.engine.grad_fns`) computes every client's minibatch gradient, and the SGD update is applied
to all clients at once (docs/design.md, section 8), by the gradient function's own step where it has
one (:func:`~fedenv.engine.grad_fns.step.sgd_step_of`: per chunk of clients, or fused into the MLP's
weight-gradient products). Clients hold different numbers of samples: they are
sorted by their number of steps, so at every step the clients with data left are a prefix and only
they are computed; nobody is over- or under-trained. The update matches ``torch.optim.SGD``
(:func:`fedenv.engine.reference.train_reference`, tested to float tolerance).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from fedenv.aggregation.weights import take_rows
from fedenv.engine.grad_fns import GradFn, batched_grad_fn
from fedenv.engine.grad_fns.step import sgd_step_of
from fedenv.engine.optimiser import LocalTrainingConfig
from fedenv.engine.schedule import Schedule


@dataclass
class TrainResult:
    """Stacked client models after local training.

    Attributes:
        params: ``name -> (K, *shape)`` parameters.
        momentum: ``name -> (K, *shape)`` SGD momentum buffers.
        loss_sum: ``(K,)`` sum over the visited samples of the training cross-entropy, each computed
            with the weights before that sample's step.
        loss_sq_sum: ``(K,)`` the same sum of squared cross-entropies (Oort's statistical utility).
        samples: ``(K,)`` number of samples visited.
        buffers: ``name -> (K, *shape)`` BatchNorm running statistics (empty for models without).
    """

    params: dict[str, torch.Tensor]
    momentum: dict[str, torch.Tensor]
    loss_sum: torch.Tensor
    loss_sq_sum: torch.Tensor
    samples: torch.Tensor
    buffers: dict[str, torch.Tensor] = field(default_factory=dict)

    def finite(self) -> torch.Tensor:
        """``(K,)`` bool: True where every parameter and running statistic of the client's model is finite."""
        k = self.loss_sum.shape[0]
        ok = torch.ones(k, dtype=torch.bool, device=self.loss_sum.device)
        floats = [t for t in [*self.params.values(), *self.buffers.values()] if t.is_floating_point()]
        for t in floats:  # a sum is finite only if every term is (or it overflowed: diverged)
            ok &= torch.isfinite((t if t.dim() > 1 else t.unsqueeze(1)).flatten(1).sum(dim=1)).to(ok.device)
        return ok

    def rows(self, rows) -> TrainResult:
        """The clients at positions ``rows`` (a list, int array or int tensor), in that order."""
        rows = torch.as_tensor(rows, dtype=torch.int64)
        return TrainResult(take_rows(self.params, rows), take_rows(self.momentum, rows), self.loss_sum[rows],
                           self.loss_sq_sum[rows], self.samples[rows], take_rows(self.buffers, rows))


def check_buffers(model: nn.Module, buffers: dict[str, torch.Tensor] | None) -> None:
    """Raise ``ValueError`` unless ``buffers`` holds exactly the model's buffers (None: it has none)."""
    expected, given = sorted(name for name, _ in model.named_buffers()), sorted(buffers or {})
    if given != expected:
        raise ValueError(f"the model's buffers {expected} must be passed stacked per client; got {given}")


def train_batched(
    model: nn.Module,
    params: dict[str, torch.Tensor],
    momentum: dict[str, torch.Tensor],
    global_params: dict[str, torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    schedule: Schedule,
    config: LocalTrainingConfig,
    buffers: dict[str, torch.Tensor] | None = None,
    grad_fn: GradFn | None = None,
) -> TrainResult:
    """Local SGD of ``K`` clients at once (one batched gradient computation per step).

    Args:
        model: module whose structure ``params`` follow (its own weights are not used).
        params: ``name -> (K, *shape)`` starting weights of each client.
        momentum: ``name -> (K, *shape)`` starting momentum buffers (zeros at the start of a round).
        global_params: ``name -> (*shape)`` global model, or ``(K, *shape)`` one per client: the
            FedProx anchor.
        x: ``(N, *input_shape)`` training inputs on the engine's device; ``y``: ``(N,)`` labels.
        schedule: minibatch schedule with ``K`` clients.
        config: optimiser settings.
        buffers: ``name -> (K, *shape)`` starting BatchNorm running statistics of each client (None:
            the model has none).
        grad_fn: per-client gradient function (default :func:`~fedenv.engine.grad_fns.batched_grad_fn`
            of ``model``).

    Raises:
        ValueError: ``buffers`` does not hold exactly the model's buffers.

    Returns:
        :class:`TrainResult` (the inputs are not modified; with ``config.momentum`` 0 its momentum
        buffers are the given ones); the update per step matches ``torch.optim.SGD`` (dampening 0, no
        Nesterov) on the loss ``mean CE + mu/2 ||w - w_global||^2``.
    """
    device = x.device
    check_buffers(model, buffers)
    model.train()  # BatchNorm normalises with batch statistics and updates the per-client buffers
    step_fn = sgd_step_of(grad_fn or batched_grad_fn(model))
    order, active_counts = _longest_first(schedule)
    sorted_already = bool((order == torch.arange(len(order))).all())
    to_device = order.to(device)

    def permute(t: torch.Tensor) -> torch.Tensor:  # a copy in sorted order: the inputs stay untouched
        return t.clone() if sorted_already else t[to_device]

    given_momentum = momentum
    params = {name: permute(p) for name, p in params.items()}
    momentum = {name: permute(b) for name, b in momentum.items()} if config.momentum else {}
    buffers = {name: permute(b) for name, b in (buffers or {}).items()}
    anchor = {name: permute(a) if a.dim() == params[name].dim() else a
              for name, a in global_params.items()} if config.fedprox_mu else {}
    index, valid = schedule.index[:, order].to(device), schedule.valid[:, order].to(device)
    dtype = next(iter(params.values())).dtype
    weights = valid.to(dtype)
    ce = torch.zeros(valid.shape, dtype=dtype, device=device)  # (S, K, B): per-sample losses, summed at the end
    for step, n, xs, ys in _minibatches(x, y, index, active_counts):
        ce[step, :n] = step_fn({name: p[:n] for name, p in params.items()},
                               {name: m[:n] for name, m in momentum.items()},
                               {name: a[:n] if a.dim() == params[name].dim() else a for name, a in anchor.items()},
                               {name: b[:n] for name, b in buffers.items()}, xs, ys, weights[step, :n], config)
    ce = ce.double()
    loss_sum, loss_sq_sum = ce.sum(dim=(0, 2)), (ce * ce).sum(dim=(0, 2))
    samples = valid.sum(dim=(0, 2)).cpu().double()
    if sorted_already:
        return TrainResult(params, momentum or given_momentum, loss_sum, loss_sq_sum, samples, buffers)
    unsort = torch.argsort(order)
    on_device = unsort.to(device)
    return TrainResult(take_rows(params, unsort), take_rows(momentum, unsort) if momentum else given_momentum,
                       loss_sum[on_device], loss_sq_sum[on_device], samples[unsort], take_rows(buffers, unsort))


GATHER_BYTES = 32 * 2**20
"""Most bytes of inputs :func:`_minibatches` gathers at once."""


def _minibatches(x: torch.Tensor, y: torch.Tensor, index: torch.Tensor, active_counts: list[int]):
    """Yield ``(step, n, inputs (n, B, *input_shape), labels (n, B))`` for every step with ``n > 0``
    clients computed, the first ``n`` clients' minibatches of ``index`` ``(S, K, B)``. The samples of
    many steps are gathered in one indexing operation (up to :data:`GATHER_BYTES`): per-step
    bookkeeping is a large part of a step when few clients train."""
    per_step = [n * index.shape[2] * x[0].numel() * x.element_size() for n in active_counts]
    active = torch.arange(index.shape[1], device=index.device) < torch.tensor(active_counts,
                                                                             device=index.device).unsqueeze(1)
    first = 0
    while first < len(active_counts):
        last, size = first + 1, per_step[first]
        while last < len(active_counts) and size + per_step[last] <= GATHER_BYTES:
            size += per_step[last]
            last += 1
        rows = index[first:last][active[first:last]]  # (sum of n, B), step by step
        xs, ys = x[rows], y[rows]
        offset = 0
        for step in range(first, last):
            n = active_counts[step]
            if n:
                yield step, n, xs[offset:offset + n], ys[offset:offset + n]
            offset += n
        first = last


def _longest_first(schedule: Schedule) -> tuple[torch.Tensor, list[int]]:
    """Clients sorted by their number of steps, longest first (stable), and at each step how many of
    them still have data: with this order the clients computed at a step are a prefix, updated in
    place through views (no work on padding).

    Returns:
        ``(order (K,) int64, active count per step (S,))``.
    """
    steps_per_client = schedule.valid.any(dim=2).sum(dim=0)
    order = torch.argsort(steps_per_client, descending=True, stable=True)
    return order, [int((steps_per_client > step).sum()) for step in range(schedule.index.shape[0])]
