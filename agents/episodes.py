"""One training episode in progress and its summary: the per-federation state of the VDN training loop."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from agents.nstep import NStepWindow
from fedenv.env import ClientSelectionEnv


def stack_observations(env: ClientSelectionEnv, observations: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(K, d)`` observations and ``(K, 2)`` action masks in ``possible_agents`` order."""
    obs = np.stack([observations[a]["observation"] for a in env.possible_agents])
    mask = np.stack([observations[a]["action_mask"] for a in env.possible_agents]).astype(np.float32)
    return obs, mask


@dataclass
class EpisodeSummary:
    """One training episode. ``team_return``: the shared reward summed over rounds (not over agents)."""

    team_return: float
    final_accuracy: float
    total_latency_s: float
    total_comm_mb: float
    participation_rate: float
    epsilon: float
    td_losses: list[float] = field(default_factory=list)
    rounds_played: int = 0  # FL rounds played by the whole run when this episode ended (TensorBoard x-axis)


@dataclass
class RunningEpisode:
    """One federation's episode in progress: its n-step window, current observation and running sums.

    Every per-episode accumulator lives here, one per federation played side by side (never shared)."""

    env: ClientSelectionEnv
    episode: int
    window: NStepWindow
    obs: np.ndarray
    mask: np.ndarray
    rounds: int = 0
    team_return: float = 0.0
    candidates: int = 0
    uploads: int = 0
    epsilon: float = 0.0
    td_losses: list[float] = field(default_factory=list)
    summary: EpisodeSummary | None = None
