"""n-step returns of one episode (Sutton & Barto, Reinforcement Learning, 2nd ed. 2018, section 7.1).

A transition starting at step ``t`` stores ``R = sum_{j<m} gamma^j r_{t+j}`` and the observation ``m``
steps later, with ``m = n`` inside the episode and ``m < n`` for the last steps of an episode (Rainbow,
Hessel et al., AAAI 2018, keeps the same truncated windows at episode ends).

An :class:`NStepWindow` holds the steps of ONE episode: federations played side by side need one
window each, or their rewards mix in one sum and the first episode to end flushes the others' steps
with its own next observation.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np


@dataclass
class Transition:
    """One n-step joint transition.

    Shapes: ``obs``/``next_obs`` ``(K, d)``; ``mask``/``next_mask`` ``(K, 2)`` (1 = allowed action);
    ``actions`` ``(K,)``. ``reward``: the discounted sum of the ``m`` team rewards; ``discount``:
    ``gamma ** m``; ``terminated``: the window ended in a terminal state (no bootstrap);
    ``demo_actions`` ``(K,)``: a demonstrator's joint action in ``obs`` (:mod:`agents.demonstrations`), or
    None when the run has no demonstrator.
    """

    obs: np.ndarray
    mask: np.ndarray
    actions: np.ndarray
    reward: float
    discount: float
    next_obs: np.ndarray
    next_mask: np.ndarray
    terminated: bool
    demo_actions: np.ndarray | None = None


class NStepWindow:
    """The last ``n_step`` steps of one episode.

    Args:
        n_step: rewards summed per transition (>= 1). gamma: discount per step, in [0, 1].

    Raises:
        ValueError: ``n_step`` or ``gamma`` out of range.
    """

    def __init__(self, n_step: int, gamma: float):
        if n_step < 1 or not 0.0 <= gamma <= 1.0:
            raise ValueError(f"need n_step >= 1 and gamma in [0, 1]; got n_step={n_step}, gamma={gamma}")
        self.n_step, self.gamma = n_step, gamma
        self._steps: deque = deque()

    def __len__(self) -> int:
        return len(self._steps)

    def push(self, obs, mask, actions, reward: float, next_obs, next_mask, terminated: bool,
             truncated: bool, demo_actions: np.ndarray | None = None) -> list[Transition]:
        """Record one environment step (arrays of shape ``(K, d)``, ``(K, 2)``, ``(K,)``; ``demo_actions``
        ``(K,)``: a demonstrator's joint action in ``obs``, kept with the transition that starts here).

        Returns:
            The transitions completed by this step: the one starting ``n_step - 1`` steps back once its
            ``n_step`` rewards are known, and at the episode's end (termination: no bootstrap; truncation:
            bootstrap from ``next_obs``) every shorter window still open.
        """
        self._steps.append((obs, mask, actions, float(reward), demo_actions))
        done = []
        if len(self._steps) == self.n_step:
            done.append(self._pop(next_obs, next_mask, terminated))
        while (terminated or truncated) and self._steps:
            done.append(self._pop(next_obs, next_mask, terminated))
        return done

    def _pop(self, next_obs, next_mask, terminated: bool) -> Transition:
        rewards = [step[3] for step in self._steps]
        obs, mask, actions, _, demo_actions = self._steps.popleft()
        reward = sum(self.gamma**j * r for j, r in enumerate(rewards))
        return Transition(obs, mask, actions, reward, self.gamma ** len(rewards), next_obs, next_mask,
                          bool(terminated), demo_actions)
