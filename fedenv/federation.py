"""The FL engine: batched local training of all candidates, aggregation and evaluation.

Local training of the candidates of a round is one batched computation: the client models are stacked
along a leading dimension and one ``torch.func.vmap(grad(...))`` call computes every client's minibatch
gradient per SGD step (DESIGN.md section 5). Clients hold different numbers of samples; a client whose
data are exhausted is masked out of the remaining steps, so nobody is over- or under-trained.
:func:`train_reference` is the plain per-client loop with ``torch.optim.SGD``; it is kept for tests and
benchmarks and must agree with :func:`train_batched` to float tolerance.

Both follow one :class:`Schedule` (which sample each client sees at each step), so the same seed gives
the same minibatches to both.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from fedenv.aggregators import (
    AggregationResult, fedadp_weights, fedavg_weights, fedca_subset, fedpdp_weights, weighted_average,
    weighted_sum,
)
from fedenv.data import Dataset
from fedenv.batched import batched_grad_fn
from fedenv.models import has_batchnorm


@dataclass(frozen=True)
class LocalTrainingConfig:
    """Client-side optimiser settings (SGD, as in FedAvg).

    Attributes:
        batch_size: minibatch size (our default 32).
        lr: SGD learning rate (our default 0.05).
        momentum: SGD momentum; the buffer starts at zero every round and carries from the probing
            epoch into the remaining epochs.
        weight_decay: L2 coefficient added to the gradient, as ``torch.optim.SGD`` does.
        fedprox_mu: FedProx proximal coefficient ``mu``: the local objective gets
            ``mu / 2 * ||w - w_global||^2`` (Li et al., MLSys 2020, Eq. 2). 0 is plain FedAvg.
    """

    batch_size: int = 32
    lr: float = 0.05
    momentum: float = 0.0
    weight_decay: float = 0.0
    fedprox_mu: float = 0.0


@dataclass(frozen=True)
class AggregationConfig:
    """Server-side aggregation (see :mod:`fedenv.aggregators`).

    Attributes:
        rule: one of ``fedavg``, ``fedpdp``, ``fedca``, ``fedadp``.
        fedca_score: FedCA's validation score, ``acc`` (Dirac delta) or ``ce`` (classification loss;
            the paper found it generalise better, our default).
        fedadp_alpha: FedAdp's Gompertz constant (the paper's best, 5).
    """

    rule: str = "fedavg"
    fedca_score: str = "ce"
    fedadp_alpha: float = 5.0


@dataclass(frozen=True)
class Schedule:
    """Which training sample each client sees at each local step.

    Attributes:
        index: int64 ``(S, K, B)``: indices into the training tensors (0 where padded).
        valid: bool ``(S, K, B)``: False marks padding (a client's last partial batch, or steps after
            its data are exhausted).
    """

    index: torch.Tensor
    valid: torch.Tensor


def make_schedule(
    client_indices: list[np.ndarray], epochs: int, batch_size: int, generators: list[torch.Generator],
    drop_last: bool = False,
) -> Schedule:
    """Minibatch schedule of ``epochs`` local epochs for each client.

    Each epoch visits a client's samples once in a fresh random order, in batches of ``batch_size``
    (the last one partial), like a shuffling ``DataLoader`` with ``drop_last=False``; with
    ``drop_last=True`` the partial batch is left out (as models with BatchNorm need: batch statistics
    over a padded batch would not be the client's own). A client's epochs follow each other without
    gaps; clients with less data finish early and are padded.

    Args:
        client_indices: one int array of training-set indices per client.
        epochs: number of local epochs (>= 1).
        batch_size: minibatch size (>= 1).
        generators: one CPU generator per client; it alone fixes that client's order, so a client's
            minibatches do not depend on which other clients train.

    Returns:
        A :class:`Schedule` with ``S = max_k epochs * ceil(n_k / batch_size)`` steps.
    """
    batches_per_client = []
    if len(generators) != len(client_indices):
        raise ValueError(f"need one generator per client: {len(client_indices)} clients, {len(generators)} generators")
    for indices, generator in zip(client_indices, generators):
        indices = torch.as_tensor(np.asarray(indices), dtype=torch.int64)
        batches = []
        for _ in range(epochs):
            order = indices[torch.randperm(len(indices), generator=generator)]
            batches.extend(b for b in order.split(batch_size) if len(b) == batch_size or not drop_last)
        batches_per_client.append(batches)
    steps = max(max(len(b) for b in batches_per_client), 1)
    index = torch.zeros(steps, len(client_indices), batch_size, dtype=torch.int64)
    valid = torch.zeros(steps, len(client_indices), batch_size, dtype=torch.bool)
    for k, batches in enumerate(batches_per_client):
        for s, batch in enumerate(batches):
            index[s, k, : len(batch)] = batch
            valid[s, k, : len(batch)] = True
    return Schedule(index, valid)


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

    def rows(self, rows) -> "TrainResult":
        """The clients at positions ``rows`` (a list or int tensor), in that order."""
        rows = torch.as_tensor(rows, dtype=torch.int64)
        pick = lambda d: {k: v[rows.to(v.device)] for k, v in d.items()}  # noqa: E731
        return TrainResult(pick(self.params), pick(self.momentum), self.loss_sum[rows], self.loss_sq_sum[rows],
                           self.samples[rows], pick(self.buffers))


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
    grad_fn=None,
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
        grad_fn: per-client gradient function (default :func:`batched_grad_fn` of ``model``).

    Raises:
        ValueError: ``buffers`` does not hold exactly the model's buffers.

    Returns:
        :class:`TrainResult`; the update per step matches ``torch.optim.SGD`` (dampening 0, no
        Nesterov) on the loss ``mean CE + mu/2 ||w - w_global||^2``.
    """
    device = x.device
    _check_buffers(model, buffers)
    model.train()  # BatchNorm normalises with batch statistics and updates the per-client buffers
    per_client_grad = grad_fn or batched_grad_fn(model)
    # Clients sorted by their number of steps, longest first: at every step the clients with data left
    # are a prefix, so only they are computed (no work on padding) and updated in place through views.
    steps_per_client = schedule.valid.any(dim=2).sum(dim=0)
    order = torch.argsort(steps_per_client, descending=True, stable=True)
    sorted_already = bool((order == torch.arange(len(order))).all())
    active_counts = [int((steps_per_client > step).sum()) for step in range(schedule.index.shape[0])]
    to_device = order.to(device)
    permute = (lambda t: t.clone()) if sorted_already else (lambda t: t[to_device])  # noqa: E731
    params = {name: permute(p) for name, p in params.items()}
    momentum = {name: permute(b) for name, b in momentum.items()}
    buffers = {name: permute(b) for name, b in (buffers or {}).items()}
    anchor = {name: permute(a) if a.dim() == params[name].dim() else a for name, a in global_params.items()}
    k = schedule.index.shape[1]
    loss_sum = torch.zeros(k, device=device, dtype=torch.float64)
    loss_sq_sum = torch.zeros(k, device=device, dtype=torch.float64)
    index, valid = schedule.index[:, order].to(device), schedule.valid[:, order].to(device)
    dtype = next(iter(params.values())).dtype
    for step, n in enumerate(active_counts):
        views = {name: p[:n] for name, p in params.items()}
        grads, ce = per_client_grad(views, {name: b[:n] for name, b in buffers.items()}, x[index[step, :n]],
                                    y[index[step, :n]], valid[step, :n].to(dtype))
        ce = ce.double()
        loss_sum[:n] += ce.sum(dim=1)
        loss_sq_sum[:n] += (ce * ce).sum(dim=1)
        for name, p in views.items():
            g = grads[name]
            if config.weight_decay:
                g = g.add(p, alpha=config.weight_decay)
            if config.fedprox_mu:
                a = anchor[name]
                g = g.add(p - (a[:n] if a.dim() == p.dim() else a), alpha=config.fedprox_mu)
            if config.momentum:
                g = momentum[name][:n].mul_(config.momentum).add_(g)
            p.add_(g, alpha=-config.lr)
    samples = valid.sum(dim=(0, 2)).cpu().double()
    if sorted_already:
        return TrainResult(params, momentum, loss_sum, loss_sq_sum, samples, buffers)
    inverse = torch.argsort(order)
    back = inverse.to(device)
    unsort = lambda d: {n: t[back] for n, t in d.items()}  # noqa: E731
    return TrainResult(unsort(params), unsort(momentum), loss_sum[back], loss_sq_sum[back], samples[inverse],
                       unsort(buffers))


def _check_buffers(model: nn.Module, buffers: dict[str, torch.Tensor] | None) -> None:
    """Raise ``ValueError`` unless ``buffers`` holds exactly the model's buffers (None: it has none)."""
    expected, given = sorted(name for name, _ in model.named_buffers()), sorted(buffers or {})
    if given != expected:
        raise ValueError(f"the model's buffers {expected} must be passed stacked per client; got {given}")


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
    :func:`train_batched`. Slow by design: the reference for tests and benchmarks."""
    _check_buffers(model, buffers)
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
        local.train()
        optimizer = torch.optim.SGD(
            local.parameters(), lr=config.lr, momentum=config.momentum, weight_decay=config.weight_decay
        )
        if config.momentum:
            for name, p in local.named_parameters():
                optimizer.state[p]["momentum_buffer"] = momentum[name][client].clone()
        for step in range(schedule.index.shape[0]):
            chosen = schedule.index[step, client][schedule.valid[step, client]].to(x.device)
            if len(chosen) == 0:
                continue
            ce = F.cross_entropy(local(x[chosen]), y[chosen], reduction="none")
            loss = ce.mean()
            if config.fedprox_mu:
                loss = loss + config.fedprox_mu / 2 * sum(
                    ((p - global_params[name]) ** 2).sum() for name, p in local.named_parameters()
                )
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss_sum[client] += ce.detach().sum().double().cpu()
            loss_sq_sum[client] += (ce.detach().double() ** 2).sum().cpu()
        for name, p in local.named_parameters():
            out_params[name][client] = p.detach()
            out_momentum[name][client] = (
                optimizer.state[p]["momentum_buffer"] if config.momentum else torch.zeros_like(p)
            )
        for name, b in local.named_buffers():
            out_buffers[name][client] = b
    return TrainResult(out_params, out_momentum, loss_sum.to(x.device), loss_sq_sum.to(x.device),
                       schedule.valid.sum(dim=(0, 2)).double(), out_buffers)


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


class Federation:
    """One federation's server state: data on the device, the global model, and its round operations.

    Args:
        model: the network (its initial weights become the global model).
        dataset: the dataset; training tensors are indexed by ``client_indices``.
        client_indices: one int array of training-set indices per client.
        config: local optimiser settings.
        device: where data and models live.
        aggregation: the aggregation rule and its settings.
        validation_indices: training-set indices of the server's validation split (FedCA).
        engine: gradient path of the batched engine (:func:`fedenv.batched.batched_grad_fn`).
    """

    def __init__(
        self,
        model: nn.Module,
        dataset: Dataset,
        client_indices: list[np.ndarray],
        config: LocalTrainingConfig,
        device: torch.device,
        aggregation: AggregationConfig = AggregationConfig(),
        validation_indices: np.ndarray = (),
        engine: str = "auto",
    ):
        self.model = model.to(device)
        self.grad_fn = batched_grad_fn(self.model, engine)
        self.config = config
        self.device = device
        self.train_x = dataset.train_x.to(device)
        self.train_y = dataset.train_y.to(device)
        self.test_x = dataset.test_x.to(device)
        self.test_y = dataset.test_y.to(device)
        self.client_indices = [np.asarray(i) for i in client_indices]
        self.data_sizes = np.array([len(i) for i in self.client_indices], dtype=np.float64)
        self.global_params = {name: p.detach().clone() for name, p in self.model.named_parameters()}
        self.global_buffers = {name: b.detach().clone() for name, b in self.model.named_buffers()}
        self.drop_last = has_batchnorm(self.model)
        if self.drop_last and self.data_sizes.min() < config.batch_size:
            small = sorted(int(n) for n in self.data_sizes if n < config.batch_size)
            raise ValueError(
                f"the model has BatchNorm, so clients train on full minibatches only, but clients hold {small} "
                f"samples < batch_size={config.batch_size}: lower batch_size or give every client more samples "
                "(min_client_size, xclass_samples)"
            )
        self.aggregation = aggregation
        validation = torch.as_tensor(np.asarray(validation_indices, dtype=np.int64), device=device)
        self.validation_x, self.validation_y = self.train_x[validation], self.train_y[validation]
        if aggregation.rule == "fedca" and len(validation) == 0:
            raise ValueError("aggregation='fedca' needs a server validation split: set val_fraction > 0")
        self.smoothed_angle = np.zeros(len(self.client_indices))
        self.participations = np.zeros(len(self.client_indices), dtype=np.int64)

    def local_train(
        self,
        clients: np.ndarray,
        epochs: int,
        generators: list[torch.Generator],
        start: TrainResult | None = None,
    ) -> TrainResult:
        """Train ``clients`` for ``epochs`` local epochs, from the global model or from ``start``
        (see :class:`TrainRequest`)."""
        return train_together([TrainRequest(self, np.asarray(clients), epochs, generators, start)])[0]

    def aggregate(self, clients: np.ndarray, result: TrainResult) -> AggregationResult:
        """Replace the global model by the configured rule's aggregate of ``result`` (rows = ``clients``).

        Uploads holding a non-finite value (diverged local training) are left out first; with no usable
        upload the global model is unchanged. See :mod:`fedenv.aggregators` for the rules. BatchNorm
        running statistics are averaged with the rule's weights normalised to sum to 1 (DESIGN.md
        section 5; ``num_batches_tracked`` rounded to an integer).

        Returns:
            The rule's :class:`~fedenv.aggregators.AggregationResult` (rows refer to ``clients``).
        """
        clients = np.asarray(clients, dtype=np.int64)
        usable = np.flatnonzero(result.finite().cpu().numpy())
        if len(usable) == 0:
            return AggregationResult(self.global_params, np.zeros(0, dtype=np.int64), np.zeros(0), usable)
        picked = result.rows(usable)
        stacked = picked.params
        ids = clients[usable]
        rule = self.aggregation.rule
        if rule == "fedavg":
            kept, weights = np.arange(len(ids)), fedavg_weights(self.data_sizes[ids])
            self.global_params = weighted_average(stacked, weights)
        elif rule == "fedadp":
            local = torch.cat([v.reshape(len(ids), -1) for v in stacked.values()], dim=1)
            anchor = torch.cat([v.reshape(1, -1) for v in self.global_params.values()], dim=1)
            updates = (local - anchor).double().cpu().numpy()
            kept = np.arange(len(ids))
            weights, smoothed = fedadp_weights(updates, self.data_sizes[ids], self.smoothed_angle[ids],
                                               self.participations[ids], self.aggregation.fedadp_alpha)
            self.smoothed_angle[ids] = smoothed
            self.participations[ids] += 1
            self.global_params = weighted_average(stacked, weights)
        else:
            kept = np.arange(len(ids))
            if rule == "fedca":
                logits = self.logits(stacked, self.validation_x, picked.buffers)
                kept = fedca_subset(logits, self.validation_y, self.aggregation.fedca_score)
            weights = fedpdp_weights(self.data_sizes[ids[kept]], self.data_sizes.sum(), len(self.client_indices))
            self.global_params = weighted_sum({n: v[torch.as_tensor(kept, device=v.device)] for n, v in stacked.items()},
                                              weights)
        if picked.buffers:
            self.global_buffers = weighted_average(
                {n: b[torch.as_tensor(kept, device=b.device)] for n, b in picked.buffers.items()}, weights)
        return AggregationResult(self.global_params, usable[kept], weights, usable)

    @torch.no_grad()
    def logits(self, stacked: dict[str, torch.Tensor], x: torch.Tensor,
               buffers: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        """``(K, N, C)`` logits of each stacked model (``buffers``: its stacked BatchNorm statistics)
        on inputs ``x`` ``(N, *input_shape)``, in evaluation mode."""
        buffers = buffers or {}
        return torch.stack([
            self._inference({n: v[i] for n, v in stacked.items()}, {n: b[i] for n, b in buffers.items()}, x)
            for i in range(next(iter(stacked.values())).shape[0])
        ])

    @torch.no_grad()
    def evaluate(self, chunk: int = 4096) -> tuple[float, float]:
        """Accuracy (fraction in [0, 1]) and mean cross-entropy of the global model on the test split."""
        correct, loss = 0, 0.0
        for start in range(0, len(self.test_y), chunk):
            xb, yb = self.test_x[start : start + chunk], self.test_y[start : start + chunk]
            logits = self._inference(self.global_params, self.global_buffers, xb)
            correct += int((logits.argmax(dim=1) == yb).sum())
            loss += float(F.cross_entropy(logits, yb, reduction="sum"))
        return correct / len(self.test_y), loss / len(self.test_y)

    def _inference(self, params, buffers, x):
        """Evaluation-mode forward pass (BatchNorm uses its running statistics)."""
        self.model.eval()
        try:
            return functional_call(self.model, (params, buffers), (x,))
        finally:
            self.model.train()


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

    federation: Federation
    clients: np.ndarray
    epochs: int
    generators: list[torch.Generator]
    start: TrainResult | None = None


def train_together(requests: list[TrainRequest]) -> list[TrainResult]:
    """Serve training requests of one or more federations as one batched computation.

    The federations must share the model structure, the training data tensors and the optimiser
    settings (B copies of one configuration with different seeds, as in :mod:`fedenv.vector`). Every
    client keeps its own schedule, start and anchor, so each result equals what its federation would
    get alone (to float tolerance).

    Returns:
        One :class:`TrainResult` per request, in order.
    """
    first = requests[0].federation
    schedules, params, momentum, buffers, anchors = [], [], [], [], []
    for request in requests:
        fed = request.federation
        if fed.config != first.config or fed.train_x is not first.train_x:
            raise ValueError("requests trained together must share training data and optimiser settings")
        indices = [fed.client_indices[c] for c in request.clients]
        schedules.append(make_schedule(indices, request.epochs, fed.config.batch_size, request.generators,
                                       fed.drop_last))
        k = len(request.clients)
        if request.start is None:
            params.append({n: p.unsqueeze(0).expand(k, *p.shape) for n, p in fed.global_params.items()})
            momentum.append({n: torch.zeros(k, *p.shape, dtype=p.dtype, device=p.device)
                             for n, p in fed.global_params.items()})
            buffers.append({n: b.unsqueeze(0).repeat(k, *[1] * b.dim()) for n, b in fed.global_buffers.items()})
        else:
            params.append(request.start.params)
            momentum.append(request.start.momentum)
            buffers.append(request.start.buffers)
        anchors.append({n: p.unsqueeze(0).expand(k, *p.shape) for n, p in fed.global_params.items()})
    if len(requests) == 1:
        return [train_batched(first.model, params[0], momentum[0], first.global_params, first.train_x,
                              first.train_y, schedules[0], first.config, buffers[0], first.grad_fn)]
    steps = max(s.index.shape[0] for s in schedules)
    pad = lambda t: torch.cat([t, t.new_zeros(steps - t.shape[0], *t.shape[1:])])  # noqa: E731
    schedule = Schedule(torch.cat([pad(s.index) for s in schedules], dim=1),
                        torch.cat([pad(s.valid) for s in schedules], dim=1))
    joined = lambda parts: {n: torch.cat([part[n] for part in parts]) for n in parts[0]}  # noqa: E731
    anchor = joined(anchors) if first.config.fedprox_mu else first.global_params  # per-client anchors for FedProx
    result = train_batched(first.model, joined(params), joined(momentum), anchor, first.train_x, first.train_y,
                           schedule, first.config, joined(buffers), first.grad_fn)
    sizes = np.cumsum([0] + [len(r.clients) for r in requests])
    return [result.rows(np.arange(sizes[i], sizes[i + 1])) for i in range(len(requests))]
