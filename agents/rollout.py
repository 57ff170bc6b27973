"""Rollouts for a remote learner: training episodes played with given Q-network weights, returned as the
n-step transitions each environment step completed (no replay buffer, no training).

An episode is a function of the weights, its index and the run seed only: its env seed is
:func:`~agents.trainer.training_seed`, its epsilon the run's schedule by episode index
(:class:`~agents.trainer.Trainer`), and its exploration draws come from a generator seeded with
``(run seed, episode)``; so an episode replayed after a worker died is the same episode.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from agents.config import VDNConfig
from agents.nstep import NStepWindow, Transition
from agents.trainer import EpisodeSummary, RunningEpisode, stack_observations, training_seed
from agents.vdn import VDNLearner, linear_epsilon
from fedenv.vector import VectorClientSelectionEnv, drive_together

EXPLORATION_STREAM = 2
"""Third entry of the exploration generator's seed ``(run seed, episode, 2)`` (the trainer's replay sampling
uses ``(run seed, 1)``)."""


@dataclass
class EpisodeRollout:
    """One played episode. ``steps[t]``: the n-step transitions completed by environment step t (what
    the learner stores before training after that step); ``summary``: without TD losses."""

    episode: int
    steps: list[list[Transition]]
    summary: EpisodeSummary


@dataclass
class WorkerEpisode(RunningEpisode):
    """A :class:`~agents.trainer.RunningEpisode` with its own exploration generator and its transitions."""

    rng: np.random.Generator | None = None
    steps: list[list[Transition]] = field(default_factory=list)


def play_rollouts(vector: VectorClientSelectionEnv, actor: VDNLearner, episodes: list[int], planned_episodes: int,
                  seed: int) -> list[EpisodeRollout]:
    """Play training episodes ``episodes`` of run ``seed`` side by side (one per federation of ``vector``),
    acting epsilon-greedily with ``actor``'s Q-network.

    Raises:
        ValueError: more episodes than federations.
    """
    if len(episodes) > vector.num_envs:
        raise ValueError(f"{len(episodes)} episodes for {vector.num_envs} federations")
    config = actor.config
    envs = vector.envs[: len(episodes)]
    started = drive_together([env.reset_process(training_seed(seed, e)) for env, e in zip(envs, episodes)])
    running = [WorkerEpisode(env, e, NStepWindow(config.n_step, config.gamma), *stack_observations(env, obs),
                             rng=np.random.default_rng([seed, e, EXPLORATION_STREAM]))
               for env, e, (obs, _) in zip(envs, episodes, started)]
    while active := [r for r in running if r.env.agents]:
        actions = [_act(actor, r, planned_episodes, config) for r in active]
        outputs = drive_together([r.env.step_process({a: int(x) for a, x in zip(r.env.possible_agents, action)})
                                  for r, action in zip(active, actions)])
        for r, action, output in zip(active, actions, outputs):
            _record(r, action, output)
    return [EpisodeRollout(r.episode, r.steps, r.summary) for r in running]


def _act(actor: VDNLearner, r: WorkerEpisode, planned_episodes: int, config: VDNConfig) -> np.ndarray:
    num_rounds = r.env.config.num_rounds
    r.epsilon = linear_epsilon(r.episode * num_rounds + r.rounds, planned_episodes * num_rounds, config)
    actor.rng = r.rng
    return actor.act(r.obs, r.mask, r.epsilon)


def _record(r: WorkerEpisode, action: np.ndarray, output: tuple) -> None:
    observations, rewards, terminations, truncations, infos = output
    agent = r.env.possible_agents[0]
    next_obs, next_mask = stack_observations(r.env, observations)
    r.steps.append(r.window.push(r.obs, r.mask, action, rewards[agent], next_obs, next_mask,
                                 terminations[agent], truncations[agent]))
    r.team_return += rewards[agent]
    r.candidates += int(r.mask[:, 1].sum())
    r.uploads += int((action * r.mask[:, 1]).sum())
    r.obs, r.mask = next_obs, next_mask
    r.rounds += 1
    if not r.env.agents:
        r.summary = EpisodeSummary(r.team_return, infos[agent]["accuracy"], infos[agent]["wall_clock_s"],
                                   r.uploads * r.env.simulator.model_size_mb, r.uploads / max(1, r.candidates),
                                   r.epsilon)
