"""Replay buffers of n-step joint transitions (for VDN; the windows are built by :mod:`agents.nstep`):
uniform (:class:`ReplayBuffer`, the default) and proportional prioritised (:class:`PrioritizedReplayBuffer`,
Schaul et al., ICLR 2016)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from agents.nstep import Transition

NO_DEMONSTRATION = -1
"""``demo_actions`` entry of a transition without a demonstrator's action."""


@dataclass
class Batch:
    """A sampled minibatch (tensors on the learner's device).

    Shapes: ``obs``/``next_obs`` ``(B, K, d)`` float32; ``mask``/``next_mask`` ``(B, K, 2)`` float32
    (1 = allowed action); ``actions`` ``(B, K)`` int64; ``reward`` ``(B,)`` the discounted n-step sum
    of team rewards; ``discount`` ``(B,)`` ``gamma ** m`` for the ``m`` rewards summed; ``terminated``
    ``(B,)`` 1.0 where the n-step window ended in a terminal state (no bootstrap). From a prioritised
    buffer also ``weight`` ``(B,)``, the importance-sampling weights, and ``index`` ``(B,)``, the buffer
    slots sampled (None from a uniform buffer). ``demo_actions`` ``(B, K)`` int64: the demonstrator's joint
    action in ``obs`` (:mod:`agents.demonstrations`), -1 where the transition has none.
    """

    obs: torch.Tensor
    mask: torch.Tensor
    actions: torch.Tensor
    reward: torch.Tensor
    next_obs: torch.Tensor
    next_mask: torch.Tensor
    discount: torch.Tensor
    terminated: torch.Tensor
    demo_actions: torch.Tensor | None = None
    weight: torch.Tensor | None = None
    index: np.ndarray | None = None


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
        self.demo_actions = np.full((capacity, num_agents), NO_DEMONSTRATION, dtype=np.int64)
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
        self.demo_actions[i] = NO_DEMONSTRATION if transition.demo_actions is None else transition.demo_actions
        self.position = (self.position + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch_size: int, rng: np.random.Generator, device: torch.device) -> Batch:
        """Uniform minibatch of ``batch_size`` stored transitions (with replacement)."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        return self._batch(rng.integers(0, self.size, size=batch_size), device)

    _ARRAYS = ("obs", "next_obs", "mask", "next_mask", "actions", "reward", "discount", "terminated", "demo_actions")

    def _batch(self, idx: np.ndarray, device: torch.device) -> Batch:
        return Batch(**{name: torch.as_tensor(getattr(self, name)[idx], device=device) for name in self._ARRAYS})

    def state_dict(self) -> dict:
        """The stored transitions as tensors (only the filled part) and the ring position."""
        state = {key: torch.from_numpy(getattr(self, key)[: self.size].copy()) for key in self._ARRAYS}
        return state | {"size": self.size, "position": self.position}

    def load_state_dict(self, state: dict) -> None:
        """Inverse of :meth:`state_dict` (into a buffer of the same capacity and shapes; a buffer saved before
        transitions carried demonstrations loads with none)."""
        for key in self._ARRAYS:
            if key == "demo_actions" and key not in state:
                getattr(self, key)[: state["size"]] = NO_DEMONSTRATION
            else:
                getattr(self, key)[: state["size"]] = state[key].numpy()
        self.size, self.position = int(state["size"]), int(state["position"])


class PrioritizedReplayBuffer(ReplayBuffer):
    """Proportional prioritised replay (Schaul et al., ICLR 2016, Algorithm 1): transition ``i`` is drawn
    with probability ``P(i) = p_i^alpha / sum_j p_j^alpha``, its squared TD error weighted by
    ``w_i = (N P(i))^-beta / max_j (N P(j))^-beta`` over the ``N`` stored transitions; a new transition
    enters with the largest priority so far, a replayed one gets ``p_i = |delta_i| + eps``
    (:meth:`update_priorities`). ``beta`` is constant (the paper anneals it to 1).

    Args:
        capacity, num_agents, obs_dim: as :class:`ReplayBuffer`. alpha: priority exponent in [0, 1]
            (0: uniform). beta: importance-sampling exponent in [0, 1]. eps: priority floor, > 0.
    """

    def __init__(self, capacity: int, num_agents: int, obs_dim: int, alpha: float, beta: float, eps: float):
        super().__init__(capacity, num_agents, obs_dim)
        self.alpha, self.beta, self.eps = alpha, beta, eps
        self.priority = np.zeros(capacity, dtype=np.float64)
        self.max_priority = 1.0

    def add(self, transition: Transition) -> None:
        """Store one transition with the largest priority so far."""
        self.priority[self.position] = self.max_priority
        super().add(transition)

    def sample(self, batch_size: int, rng: np.random.Generator, device: torch.device) -> Batch:
        """Minibatch drawn with probabilities ``P(i)`` (with replacement), with ``weight`` and ``index``."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        scaled = self.priority[: self.size] ** self.alpha
        probability = scaled / scaled.sum()
        idx = rng.choice(self.size, size=batch_size, p=probability)
        weight = (self.size * probability[idx]) ** -self.beta / (self.size * probability.min()) ** -self.beta
        batch = self._batch(idx, device)
        batch.weight = torch.as_tensor(weight, dtype=torch.float32, device=device)
        batch.index = idx
        return batch

    def update_priorities(self, index: np.ndarray, td_error: np.ndarray) -> None:
        """``p_i = |delta_i| + eps`` for the slots ``index`` (a slot drawn twice keeps its last error)."""
        self.priority[index] = np.abs(td_error) + self.eps
        self.max_priority = max(self.max_priority, float(self.priority[index].max()))

    def state_dict(self) -> dict:
        """:meth:`ReplayBuffer.state_dict` plus the priorities."""
        return super().state_dict() | {"priority": torch.from_numpy(self.priority[: self.size].copy()),
                                       "max_priority": self.max_priority}

    def load_state_dict(self, state: dict) -> None:
        """Inverse of :meth:`state_dict`."""
        super().load_state_dict(state)
        self.priority[: self.size] = state["priority"].numpy()
        self.max_priority = float(state["max_priority"])
