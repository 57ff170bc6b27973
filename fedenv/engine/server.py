"""One federation's server: the data on the device, the global model, aggregation and evaluation."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from fedenv.aggregation import AggregationResult, AggregationRule, FedAvg, Uploads
from fedenv.config import EVALUATION_SPLITS, EnvConfig
from fedenv.data import Dataset
from fedenv.engine.grad_fns import batched_grad_fn
from fedenv.engine.local_sgd import TrainResult
from fedenv.engine.optimiser import LocalTrainingConfig
from fedenv.engine.requests import TrainRequest, train_together
from fedenv.models import has_batchnorm
from fedenv.names import check_known


class Federation:
    """One federation's server state: data on the device, the global model, and its round operations.

    Args:
        model: the network (its initial weights become the global model).
        dataset: the dataset; training tensors are indexed by ``client_indices``.
        client_indices: one int array of training-set indices per client.
        config: local optimiser settings (the attribute ``config`` may be replaced between rounds: the
            simulator sets each round's decayed learning rate there).
        device: where data and models live.
        rule: the aggregation rule, built for this federation's clients (None:
            :class:`~fedenv.aggregation.fedavg.FedAvg`).
        validation_indices: training-set indices of the server's validation split (FedCA).
        engine: gradient path of the batched engine (:func:`fedenv.engine.grad_fns.batched_grad_fn`).

    Raises:
        ValueError: the model has BatchNorm and a client holds fewer than ``config.batch_size`` samples;
            the rule needs a validation split and there is none; unknown ``engine``.
    """

    def __init__(
        self,
        model: nn.Module,
        dataset: Dataset,
        client_indices: list[np.ndarray],
        config: LocalTrainingConfig,
        device: torch.device,
        rule: AggregationRule | None = None,
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
                "(--min-client-size, --xclass-samples)"
            )
        self.rule = rule if rule is not None else FedAvg(self.data_sizes, EnvConfig())
        validation = torch.as_tensor(np.asarray(validation_indices, dtype=np.int64), device=device)
        self.validation_x, self.validation_y = self.train_x[validation], self.train_y[validation]
        if self.rule.needs_validation and len(validation) == 0:
            raise ValueError(f"aggregation rule {type(self.rule).__name__} needs a server validation split: "
                             "set val_fraction > 0")

    def local_train(
        self,
        clients: np.ndarray,
        epochs: int,
        generators: list[torch.Generator],
        start: TrainResult | None = None,
    ) -> TrainResult:
        """Train ``clients`` for ``epochs`` local epochs, from the global model or from ``start``
        (see :class:`~fedenv.engine.requests.TrainRequest`)."""
        return train_together([TrainRequest(self, np.asarray(clients), epochs, generators, start)])[0]

    def aggregate(self, clients: np.ndarray, result: TrainResult) -> AggregationResult:
        """Replace the global model by the rule's aggregate of ``result`` (rows = ``clients``).

        Uploads holding a non-finite value (diverged local training) are left out first; with no usable
        upload the global model is unchanged. The rule's :meth:`~fedenv.aggregation.base.AggregationRule.aggregate`
        gives the new global model (for the weighted rules, the weighted sum of the kept uploads, BatchNorm
        running statistics averaged with the weights normalised to sum to 1; docs/design.md, section 8).

        Returns:
            The rule's :class:`~fedenv.aggregation.base.AggregationResult` with its rows referring to
            ``clients`` and ``usable_rows`` set.
        """
        clients = np.asarray(clients, dtype=np.int64)
        usable = np.flatnonzero(result.finite().cpu().numpy())
        if len(usable) == 0:
            return AggregationResult(self.global_params, self.global_buffers, np.zeros(0, dtype=np.int64), np.zeros(0),
                                     usable)
        picked = result.rows(usable)
        ids = clients[usable]
        uploads = Uploads(
            ids, picked.params, picked.buffers, self.global_params, self.data_sizes[ids], self.data_sizes.sum(),
            len(self.client_indices), lambda: self.logits(picked.params, self.validation_x, picked.buffers),
            self.validation_y,
        )
        outcome = self.rule.aggregate(uploads)
        self.global_params = outcome.params
        if picked.buffers:
            self.global_buffers = outcome.buffers
        return dataclasses.replace(outcome, kept_rows=usable[np.asarray(outcome.kept_rows, dtype=np.int64)],
                                   usable_rows=usable)

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
    def evaluate(self, split: str = "test", chunk: int = 4096) -> tuple[float, float]:
        """Accuracy (fraction in [0, 1]) and mean cross-entropy (nats) of the global model on ``split``:
        ``"test"`` (the dataset's test split) or ``"validation"`` (the server's validation split, held out
        of the training set before partitioning).

        Raises:
            ValueError: unknown ``split``, or ``"validation"`` without a validation split (val_fraction 0).
        """
        check_known(split, EVALUATION_SPLITS, "split")
        x, y = (self.test_x, self.test_y) if split == "test" else (self.validation_x, self.validation_y)
        if len(y) == 0:
            raise ValueError(f"no {split} samples to evaluate on" + (": set val_fraction > 0" if split == "validation"
                                                                         else ""))
        correct, loss = 0, 0.0
        for start in range(0, len(y), chunk):
            xb, yb = x[start : start + chunk], y[start : start + chunk]
            logits = self._inference(self.global_params, self.global_buffers, xb)
            correct += int((logits.argmax(dim=1) == yb).sum())
            loss += float(F.cross_entropy(logits, yb, reduction="sum"))
        return correct / len(y), loss / len(y)

    def _inference(self, params, buffers, x):
        """Evaluation-mode forward pass (BatchNorm uses its running statistics)."""
        self.model.eval()
        try:
            return functional_call(self.model, (params, buffers), (x,))
        finally:
            self.model.train()
