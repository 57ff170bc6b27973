"""Minibatch schedules: which training sample each client sees at each local SGD step.

The batched engine (:func:`fedenv.engine.train_batched`) and the reference loop
(:func:`fedenv.engine.train_reference`) both follow one :class:`Schedule`, so the same seed gives the
same minibatches to both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


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

    Raises:
        ValueError: not one generator per client.
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


def join_schedules(schedules: list[Schedule]) -> Schedule:
    """One schedule whose clients are those of ``schedules`` side by side (shorter ones padded).

    Returns:
        A :class:`Schedule` ``(max S, sum K, B)``; every schedule must share ``B``.
    """
    steps = max(s.index.shape[0] for s in schedules)

    def pad(t: torch.Tensor) -> torch.Tensor:
        return torch.cat([t, t.new_zeros(steps - t.shape[0], *t.shape[1:])])

    return Schedule(torch.cat([pad(s.index) for s in schedules], dim=1),
                    torch.cat([pad(s.valid) for s in schedules], dim=1))
