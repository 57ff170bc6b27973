"""Replay buffer of joint transitions with n-step returns (for VDN)."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import torch


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

    :meth:`add` takes one environment step at a time; it emits the n-step transition that starts ``n``
    steps back once ``n`` rewards are known, and flushes the shorter windows when the episode ends
    (by termination: no bootstrap; by truncation: bootstrap from the last next-observation).

    Args:
        capacity: transitions kept (oldest overwritten).
        num_agents: K; obs_dim: d.
        n_step: rewards summed per transition (>= 1).
        gamma: discount per step, in [0, 1].
    """

    def __init__(self, capacity: int, num_agents: int, obs_dim: int, n_step: int = 1, gamma: float = 0.99):
        if capacity < 1 or n_step < 1 or not 0.0 <= gamma <= 1.0:
            raise ValueError(f"need capacity >= 1, n_step >= 1 and gamma in [0, 1]; got {capacity}, {n_step}, {gamma}")
        self.capacity, self.n_step, self.gamma = capacity, n_step, gamma
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
        self._pending: deque = deque()

    def __len__(self) -> int:
        return self.size

    def add(self, obs, mask, actions, reward: float, next_obs, next_mask, terminated: bool, truncated: bool) -> None:
        """Record one environment step (arrays of shape ``(K, d)``, ``(K, 2)``, ``(K,)``)."""
        self._pending.append((obs, mask, actions, float(reward)))
        if len(self._pending) == self.n_step:
            self._emit(next_obs, next_mask, terminated)
            self._pending.popleft()
        if terminated or truncated:
            while self._pending:
                self._emit(next_obs, next_mask, terminated)
                self._pending.popleft()

    def _emit(self, next_obs, next_mask, terminated: bool) -> None:
        obs, mask, actions, _ = self._pending[0]
        rewards = [step[3] for step in self._pending]
        i = self.position
        self.obs[i], self.mask[i], self.actions[i] = obs, mask, actions
        self.reward[i] = sum(self.gamma**j * r for j, r in enumerate(rewards))
        self.discount[i] = self.gamma ** len(rewards)
        self.next_obs[i], self.next_mask[i] = next_obs, next_mask
        self.terminated[i] = float(terminated)
        self.position = (self.position + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size: int, rng: np.random.Generator, device: torch.device) -> Batch:
        """Uniform minibatch of ``batch_size`` stored transitions (with replacement)."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        idx = rng.integers(0, self.size, size=batch_size)
        t = lambda a: torch.as_tensor(a[idx], device=device)  # noqa: E731
        return Batch(t(self.obs), t(self.mask), t(self.actions), t(self.reward), t(self.next_obs),
                     t(self.next_mask), t(self.discount), t(self.terminated))

    _ARRAYS = ("obs", "next_obs", "mask", "next_mask", "actions", "reward", "discount", "terminated")

    def state_dict(self) -> dict:
        """The stored transitions as tensors (only the filled part) and the ring position.

        Raises:
            RuntimeError: called mid-episode (transitions still waiting for their n-step rewards).
        """
        if self._pending:
            raise RuntimeError("replay buffer state is only saved between episodes")
        state = {key: torch.from_numpy(getattr(self, key)[: self.size].copy()) for key in self._ARRAYS}
        return state | {"size": self.size, "position": self.position}

    def load_state_dict(self, state: dict) -> None:
        """Inverse of :meth:`state_dict` (into a buffer of the same capacity and shapes)."""
        for key in self._ARRAYS:
            getattr(self, key)[: state["size"]] = state[key].numpy()
        self.size, self.position = int(state["size"]), int(state["position"])
        self._pending.clear()
