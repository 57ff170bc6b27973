"""Replay buffer of n-step joint transitions (for VDN; the windows are built by :mod:`agents.nstep`)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

from agents.nstep import Transition


@dataclass
class Batch:
    """A sampled minibatch (tensors on the learner's device).

    Shapes: ``obs``/``next_obs`` ``(B, K, d)`` float32; ``mask``/``next_mask`` ``(B, K, 2)`` float32
    (1 = allowed action); ``actions`` ``(B, K)`` int64; ``reward`` ``(B,)`` the discounted n-step sum
    of team rewards; ``discount`` ``(B,)`` ``gamma ** m`` for the ``m`` rewards summed; ``terminated``
    ``(B,)`` 1.0 where the n-step window ended in a terminal state (no bootstrap).
    """

    obs: torch.Tensor
    mask: torch.Tensor
    actions: torch.Tensor
    reward: torch.Tensor
    next_obs: torch.Tensor
    next_mask: torch.Tensor
    discount: torch.Tensor
    terminated: torch.Tensor


class ReplayBuffer:
    """Ring buffer of n-step joint transitions.

    Args:
        capacity: transitions kept (oldest overwritten).
        num_agents: K; obs_dim: d.

    Raises:
        ValueError: ``capacity < 1``.
    """

    def __init__(self, capacity: int, num_agents: int, obs_dim: int):
        if capacity < 1:
            raise ValueError(f"replay capacity={capacity} must be >= 1")
        self.capacity = capacity
        self.obs = np.zeros((capacity, num_agents, obs_dim), dtype=np.float32)
        self.next_obs = np.zeros_like(self.obs)
        self.mask = np.zeros((capacity, num_agents, 2), dtype=np.float32)
        self.next_mask = np.zeros_like(self.mask)
        self.actions = np.zeros((capacity, num_agents), dtype=np.int64)
        self.reward = np.zeros(capacity, dtype=np.float32)
        self.discount = np.zeros(capacity, dtype=np.float32)
        self.terminated = np.zeros(capacity, dtype=np.float32)
        self.size = 0
        self.position = 0

    def __len__(self) -> int:
        return self.size

    def add(self, transition: Transition) -> None:
        """Store one transition (overwriting the oldest when full)."""
        i = self.position
        self.obs[i], self.mask[i], self.actions[i] = transition.obs, transition.mask, transition.actions
        self.reward[i], self.discount[i] = transition.reward, transition.discount
        self.next_obs[i], self.next_mask[i] = transition.next_obs, transition.next_mask
        self.terminated[i] = float(transition.terminated)
        self.position = (self.position + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size: int, rng: np.random.Generator, device: torch.device) -> Batch:
        """Uniform minibatch of ``batch_size`` stored transitions (with replacement)."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        idx = rng.integers(0, self.size, size=batch_size)
        return Batch(**{f.name: torch.as_tensor(getattr(self, f.name)[idx], device=device) for f in fields(Batch)})

    _ARRAYS = ("obs", "next_obs", "mask", "next_mask", "actions", "reward", "discount", "terminated")

    def state_dict(self) -> dict:
        """The stored transitions as tensors (only the filled part) and the ring position."""
        state = {key: torch.from_numpy(getattr(self, key)[: self.size].copy()) for key in self._ARRAYS}
        return state | {"size": self.size, "position": self.position}

    def load_state_dict(self, state: dict) -> None:
        """Inverse of :meth:`state_dict` (into a buffer of the same capacity and shapes)."""
        for key in self._ARRAYS:
            getattr(self, key)[: state["size"]] = state[key].numpy()
        self.size, self.position = int(state["size"]), int(state["position"])
