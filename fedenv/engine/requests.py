"""Training requests: how env processes ask for local training, and how requests of several
federations are served as one batched computation.

An env step is written as a generator (an :data:`EnvProcess`) that yields a :class:`TrainRequest`
whenever it needs local training and receives the :class:`~fedenv.engine.local_sgd.TrainResult`; a
driver serves each request alone (``fedenv.env.run_alone``) or the pending requests of B federations
together (:func:`fedenv.vector.drive_together` through :func:`train_together`).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np
import torch

from fedenv.engine.grad_fns import GradFn
from fedenv.engine.local_sgd import TrainResult, train_batched
from fedenv.engine.optimiser import LocalTrainingConfig
from fedenv.engine.schedule import join_schedules, make_schedule

T = TypeVar("T")


class TrainingFederation(Protocol):
    """What serving a request reads of its federation (:class:`fedenv.engine.server.Federation` is one).

    Attributes:
        model: the model structure; grad_fn: its batched gradient path; config: the optimiser settings.
        train_x, train_y: the training tensors (shared by federations trained together).
        client_indices: each client's rows of ``train_x``; drop_last: drop partial batches (BatchNorm).
        global_params, global_buffers: ``name -> (*shape)`` the global model, the starting point.
    """

    model: torch.nn.Module
    grad_fn: GradFn
    config: LocalTrainingConfig
    train_x: torch.Tensor
    train_y: torch.Tensor
    client_indices: list[np.ndarray]
    drop_last: bool
    global_params: dict[str, torch.Tensor]
    global_buffers: dict[str, torch.Tensor]


@dataclass
class TrainRequest:
    """Local training that one federation asks for.

    Attributes:
        federation: the federation (its global model is the starting point and the FedProx anchor).
        clients: int array of client ids (rows of the result, in this order).
        epochs: local epochs.
        generators: one generator per client, fixing its minibatch order.
        start: previous result for the same clients (continues their weights and momentum), or None.
    """

    federation: TrainingFederation
    clients: np.ndarray
    epochs: int
    generators: list[torch.Generator]
    start: TrainResult | None = None


EnvProcess = Generator[TrainRequest, TrainResult, T]
"""An env process returning ``T``: it yields :class:`TrainRequest` objects and is sent their results."""


def starting_point(request: TrainRequest) -> tuple[dict, dict, dict]:
    """``(params, momentum, buffers)``, each ``name -> (K, *shape)``, the request's clients start from:
    its ``start``, or copies of the global model with zero momentum."""
    if request.start is not None:
        return request.start.params, request.start.momentum, request.start.buffers
    fed, k = request.federation, len(request.clients)
    params = {n: p.unsqueeze(0).expand(k, *p.shape) for n, p in fed.global_params.items()}
    momentum = {n: torch.zeros(k, *p.shape, dtype=p.dtype, device=p.device) for n, p in fed.global_params.items()}
    buffers = {n: b.unsqueeze(0).repeat(k, *[1] * b.dim()) for n, b in fed.global_buffers.items()}
    return params, momentum, buffers


def _concat(parts: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Stacked models ``name -> (K_i, *shape)`` joined along the client dimension."""
    return {name: torch.cat([part[name] for part in parts]) for name in parts[0]}


def train_together(requests: list[TrainRequest]) -> list[TrainResult]:
    """Serve training requests of one or more federations as one batched computation.

    The federations must share the model structure, the training data tensors and the optimiser
    settings (B copies of one configuration with different seeds, as in :mod:`fedenv.vector`). Every
    client keeps its own schedule, start and anchor, so each result equals what its federation would
    get alone (to float tolerance).

    Returns:
        One :class:`~fedenv.engine.local_sgd.TrainResult` per request, in order.

    Raises:
        ValueError: the federations do not share training data and optimiser settings.
    """
    first = requests[0].federation
    schedules, starts, anchors = [], [], []
    for request in requests:
        fed = request.federation
        if fed.config != first.config or fed.train_x is not first.train_x:
            raise ValueError("requests trained together must share training data and optimiser settings")
        indices = [fed.client_indices[c] for c in request.clients]
        schedules.append(make_schedule(indices, request.epochs, fed.config.batch_size, request.generators,
                                       fed.drop_last))
        starts.append(starting_point(request))
        k = len(request.clients)
        anchors.append({n: p.unsqueeze(0).expand(k, *p.shape) for n, p in fed.global_params.items()})
    if len(requests) == 1:
        return [train_batched(first.model, *starts[0][:2], first.global_params, first.train_x, first.train_y,
                              schedules[0], first.config, starts[0][2], first.grad_fn)]
    params, momentum, buffers = (_concat([start[i] for start in starts]) for i in range(3))
    anchor = _concat(anchors) if first.config.fedprox_mu else first.global_params  # per-client anchors for FedProx
    result = train_batched(first.model, params, momentum, anchor, first.train_x, first.train_y,
                           join_schedules(schedules), first.config, buffers, first.grad_fn)
    sizes = np.cumsum([0] + [len(r.clients) for r in requests])
    return [result.rows(np.arange(sizes[i], sizes[i + 1])) for i in range(len(requests))]
