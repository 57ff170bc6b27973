"""One training episode in progress and its summary: the per-federation state of the VDN training loop."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from agents.demonstrations import demonstrated_actions
from agents.nstep import NStepWindow, Transition
from fedenv.baselines.base import Policy
from fedenv.env import ClientSelectionEnv, policy_infos


def stack_observations(env: ClientSelectionEnv, observations: dict) -> tuple[np.ndarray, np.ndarray]:
    """``(K, d)`` observations and ``(K, 2)`` action masks in ``possible_agents`` order."""
    obs = np.stack([observations[a]["observation"] for a in env.possible_agents])
    mask = np.stack([observations[a]["action_mask"] for a in env.possible_agents]).astype(np.float32)
    return obs, mask


@dataclass
class EpisodeSummary:
    """One training episode. ``team_return``: the shared reward summed over rounds (not over agents).
    ``td_losses`` and ``margin_losses``: the TD and DQfD margin terms of the gradient steps reported with it
    (:class:`agents.vdn.UpdateLosses`; the margin terms only with a demonstrator): those run after its own
    environment steps, or with ``overlap_learner`` those run while its batch played (the batch's first
    episode); ``demonstration_weight``: the mean margin weight of those steps
    (:func:`agents.vdn.demonstration_weight`; None without a demonstrator or without steps)."""

    team_return: float
    final_accuracy: float
    total_latency_s: float
    total_upload_mb: float
    participation_rate: float
    epsilon: float
    td_losses: list[float] = field(default_factory=list)
    margin_losses: list[float] = field(default_factory=list)
    demonstration_weight: float | None = None
    rounds_played: int = 0  # FL rounds played by the whole run when this episode ended (TensorBoard x-axis)


@dataclass
class RunningEpisode:
    """One federation's episode in progress: its n-step window, current observation and running sums.

    Every per-episode accumulator lives here, one per federation played side by side (never shared).
    ``env`` is an environment of the configuration played (its agents and model size are read; the episode
    itself may be played elsewhere, e.g. by a Ray actor). ``epsilon``: the exploration rate of the last
    action; ``summary``: set by the step that ends the episode (without losses: the learner adds them).
    ``demonstrator``: the fixed policy that labels the episode's states (:mod:`agents.demonstrations`; set by
    :meth:`start_demonstration`), and ``demo_actions`` ``(K,)`` its joint action in ``obs``; None without one.
    """

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
    done: bool = False
    summary: EpisodeSummary | None = None
    demonstrator: Policy | None = None
    demo_actions: np.ndarray | None = None

    def start_demonstration(self, demonstrator: Policy, seed: int, profile_duration_s: dict[str, float],
                            observations: dict, infos: dict) -> None:
        """Let ``demonstrator`` label this episode, reset with the episode's ``seed`` and given the clients'
        device-profile estimates as :func:`fedenv.evaluation.run_episode` does; ``observations`` and ``infos``:
        the episode's reset output."""
        demonstrator.reset(seed)
        demonstrator.register_clients(profile_duration_s, self.env.config.probing)
        self.demonstrator = demonstrator
        self.demo_actions = demonstrated_actions(demonstrator, self.env.possible_agents, observations,
                                                 policy_infos(infos))

    def record(self, action: np.ndarray, output: tuple) -> list[Transition]:
        """Account for one environment step: ``action`` ``(K,)`` was played and the env returned ``output``
        (``observations, rewards, terminations, truncations, infos``, PettingZoo's parallel API).

        Returns:
            The n-step transitions this step completed (:meth:`agents.nstep.NStepWindow.push`).
        """
        observations, rewards, terminations, truncations, infos = output
        agent = self.env.possible_agents[0]
        next_obs, next_mask = stack_observations(self.env, observations)
        transitions = self.window.push(self.obs, self.mask, action, rewards[agent], next_obs, next_mask,
                                       terminations[agent], truncations[agent], self.demo_actions)
        self.team_return += rewards[agent]
        self.candidates += int(self.mask[:, 1].sum())
        self.uploads += int((action * self.mask[:, 1]).sum())
        self.obs, self.mask = next_obs, next_mask
        self.rounds += 1
        self.done = bool(terminations[agent] or truncations[agent])
        if self.demonstrator is not None:
            shown = policy_infos(infos)
            self.demonstrator.observe(shown)
            if not self.done:
                self.demo_actions = demonstrated_actions(self.demonstrator, self.env.possible_agents, observations,
                                                         shown)
        if self.done:
            info = infos[agent]
            self.summary = EpisodeSummary(self.team_return, info["test_accuracy"], info["wall_clock_s"],
                                          self.uploads * self.env.simulator.model_size_mb,
                                          self.uploads / max(1, self.candidates), self.epsilon)
        return transitions
