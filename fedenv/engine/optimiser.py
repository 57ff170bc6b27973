"""The clients' optimiser settings, read by the SGD step (:mod:`fedenv.engine.grad_fns.step`) and the
batched local training (:mod:`fedenv.engine.local_sgd`)."""

from __future__ import annotations

from dataclasses import dataclass


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
