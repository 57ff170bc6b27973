"""The plain per-client training loop with ``torch.optim.SGD``: slow by design, kept as the reference
that :func:`fedenv.engine.local_sgd.train_batched` is tested and benchmarked against."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from fedenv.engine.local_sgd import TrainResult, check_buffers
from fedenv.engine.optimiser import LocalTrainingConfig
from fedenv.engine.schedule import Schedule


def train_reference(
    model: nn.Module,
    params: dict[str, torch.Tensor],
    momentum: dict[str, torch.Tensor],
    global_params: dict[str, torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    schedule: Schedule,
    config: LocalTrainingConfig,
    buffers: dict[str, torch.Tensor] | None = None,
) -> TrainResult:
    """The plain per-client loop with ``torch.optim.SGD``; same arguments and result as
    :func:`~fedenv.engine.local_sgd.train_batched` (``global_params``: ``name -> (*shape)`` only).

    Raises:
        ValueError: ``buffers`` does not hold exactly the model's buffers.
    """
    check_buffers(model, buffers)
    buffers = buffers or {}
    out_params = {name: torch.empty_like(p) for name, p in params.items()}
    out_momentum = {name: torch.empty_like(p) for name, p in params.items()}
    out_buffers = {name: torch.empty_like(b) for name, b in buffers.items()}
    k = schedule.index.shape[1]
    loss_sum = torch.zeros(k, dtype=torch.float64)
    loss_sq_sum = torch.zeros(k, dtype=torch.float64)
    for client in range(k):
        local = copy.deepcopy(model)
        with torch.no_grad():
            for name, p in local.named_parameters():
                p.copy_(params[name][client])
            for name, b in local.named_buffers():
                b.copy_(buffers[name][client])
        optimizer = torch.optim.SGD(
            local.parameters(), lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay
        )
        if config.momentum:
            for name, p in local.named_parameters():
                optimizer.state[p]["momentum_buffer"] = momentum[name][client].clone()
        loss_sum[client], loss_sq_sum[client] = _train_client(local, optimizer, global_params, x, y, schedule,
                                                              client, config.fedprox_mu)
        for name, p in local.named_parameters():
            out_params[name][client] = p.detach()
            out_momentum[name][client] = (
                optimizer.state[p]["momentum_buffer"] if config.momentum else torch.zeros_like(p)
            )
        for name, b in local.named_buffers():
            out_buffers[name][client] = b
    return TrainResult(out_params, out_momentum, loss_sum.to(x.device), loss_sq_sum.to(x.device),
                       schedule.valid.sum(dim=(0, 2)).double(), out_buffers)


def _train_client(local: nn.Module, optimizer: torch.optim.SGD, global_params: dict[str, torch.Tensor],
                  x: torch.Tensor, y: torch.Tensor, schedule: Schedule, client: int,
                  fedprox_mu: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Run ``client``'s steps of ``schedule`` on ``local`` in training mode.

    Returns:
        The sums over the visited samples of the cross-entropy and of its square (float64 scalars).
    """
    local.train()
    loss_sum = loss_sq_sum = torch.zeros((), dtype=torch.float64)
    for step in range(schedule.index.shape[0]):
        chosen = schedule.index[step, client][schedule.valid[step, client]].to(x.device)
        if len(chosen) == 0:
            continue
        ce = F.cross_entropy(local(x[chosen]), y[chosen], reduction="none")
        loss = ce.mean()
        if fedprox_mu:
            loss = loss + fedprox_mu / 2 * sum(
                ((p - global_params[name]) ** 2).sum() for name, p in local.named_parameters()
            )
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss_sum = loss_sum + ce.detach().sum().double().cpu()
        loss_sq_sum = loss_sq_sum + (ce.detach().double() ** 2).sum().cpu()
    return loss_sum, loss_sq_sum
