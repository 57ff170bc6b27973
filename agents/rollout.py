"""Training episodes played step by step: the one episode loop of every rollout source.

A rollout source (:class:`RolloutSource`) hands the learner (:class:`~agents.trainer.Trainer`) the
environment steps of its next episodes; :class:`LocalSource` plays them on a local vector env with the
learner's current Q-network, :mod:`agents.ray_training` on Ray actors.

:func:`play` resets a group of federations with the training seeds of the episodes it is given, asks an
``act`` function for every active federation's joint action each round, steps the federations together
and yields each federation's step as it is recorded (:meth:`~agents.episodes.RunningEpisode.record`).
It is a generator, so a learner that trains between two yields (:meth:`agents.trainer.Trainer.play_episodes`)
acts in the next round with the updated weights, as Stable-Baselines3's off-policy ``collect_rollouts`` does.
Where the federations live is a :class:`Federations` object: in this process (:class:`LocalFederations`)
or on Ray actors (:class:`agents.ray_training.RemoteFederations`).

:func:`play_rollouts` plays whole episodes without a learner (an asynchronous Ray actor): its exploration
draws come from a generator seeded with ``(run seed, episode)``, so an episode is a function of the weights,
its index and the run seed only, and an episode replayed after a worker died is the same episode.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from agents.config import VDNConfig
from agents.demonstrations import make_demonstrator
from agents.episodes import EpisodeSummary, RunningEpisode, stack_observations
from agents.nstep import NStepWindow, Transition
from agents.vdn import VDNLearner, linear_epsilon
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation.rollout import profile_duration_s
from fedenv.vector import VectorClientSelectionEnv, drive_together

TRAINING_SEED_BASE = 10_000
TRAINING_TEST_REPORTS = "episode_end"
"""``report_test_accuracy`` of the envs that play training and validation episodes
(:class:`fedenv.env.ClientSelectionEnv`): their summaries report the final test accuracy only, so the test
split is scored once per episode (the trained weights are the same either way: the test split feeds
neither reward nor observation)."""
EXPLORATION_STREAM = 2
"""Third entry of an asynchronous actor's exploration generator's seed ``(run seed, episode, 2)`` (the
trainer's replay sampling uses ``(run seed, 1)``)."""


def training_seed(seed: int, episode: int) -> int:
    """Env seed of training episode ``episode`` of run ``seed``: ``10000 + 1000000 * seed + episode``.
    Evaluation uses seeds from 1000 up (held out: never a training seed)."""
    return TRAINING_SEED_BASE + 1_000_000 * seed + episode


def exploration_epsilon(r: RunningEpisode, schedule_episodes: int, config: VDNConfig) -> float:
    """Epsilon of the next action of ``r``: round ``r.rounds`` of episode ``r.episode`` is schedule step
    ``episode * num_rounds + round`` of ``schedule_episodes * num_rounds`` (:func:`~agents.vdn.linear_epsilon`;
    the horizon is the run's first plan, so an extended run keeps its schedule: :class:`~agents.trainer.Trainer`)."""
    num_rounds = r.env.config.num_rounds
    return linear_epsilon(r.episode * num_rounds + r.rounds, schedule_episodes * num_rounds, config)


def exploration_upload_probability(r: RunningEpisode, config: VDNConfig) -> float:
    """The probability that an exploring candidate of ``r``'s next round uploads: 0.5 without
    ``config.exploration_uploads``; with ``(k, last)``, 1 in the episode's last ``last`` rounds and
    ``min(1, k / candidates)`` before them (the open-loop schedule ``k random, all last L``,
    :class:`fedenv.baselines.LateRoundsPolicy`, in expectation); before the last ``last`` rounds, 0 when no
    client is a candidate (a non-candidate's upload is masked out in any case)."""
    if not config.exploration_uploads:
        return 0.5
    k, last = config.exploration_uploads
    if r.rounds >= r.env.config.num_rounds - last:
        return 1.0
    candidates = int((r.mask[:, 1] > 0).sum())
    return min(1.0, k / candidates) if candidates else 0.0


class Federations(Protocol):
    """Federations of one configuration, reset and stepped together (federation ``i`` plays episode ``i``
    of a :func:`play` call)."""

    def reset(self, seeds: list[int]) -> list[tuple[dict, dict]]:
        """Reset federation ``i`` with ``seeds[i]``; each one's ``(observations, infos)``."""

    def profile_duration_s(self, i: int) -> dict[str, float]:
        """Federation ``i``'s clients' round times estimated from their device profiles for the episode it
        was last reset to, s (:func:`fedenv.evaluation.rollout.profile_duration_s`)."""

    def step(self, actions: dict[int, np.ndarray]) -> dict[int, tuple]:
        """Step federation ``i`` with joint action ``actions[i]`` ``(K,)`` (the others are left alone);
        each stepped federation's ``(observations, rewards, terminations, truncations, infos)``."""


class LocalFederations:
    """:class:`Federations` in this process: ``envs`` driven through one batched engine
    (:func:`fedenv.vector.drive_together`)."""

    def __init__(self, envs: list[ClientSelectionEnv]):
        self.envs = envs

    def reset(self, seeds: list[int]) -> list[tuple[dict, dict]]:
        if len(seeds) > len(self.envs):
            raise ValueError(f"{len(seeds)} episodes for {len(self.envs)} federations")
        return drive_together([env.reset_process(seed) for env, seed in zip(self.envs, seeds)])

    def profile_duration_s(self, i: int) -> dict[str, float]:
        return profile_duration_s(self.envs[i])

    def step(self, actions: dict[int, np.ndarray]) -> dict[int, tuple]:
        agents = self.envs[0].possible_agents
        outputs = drive_together([self.envs[i].step_process({a: int(x) for a, x in zip(agents, action)})
                                  for i, action in actions.items()])
        return dict(zip(actions, outputs))


def play(federations: Federations, env: ClientSelectionEnv, episodes: list[int], seed: int, config: VDNConfig,
         act: Callable[[RunningEpisode], np.ndarray]) -> Iterator[tuple[RunningEpisode, list[Transition]]]:
    """Play training episodes ``episodes`` of run ``seed`` side by side, one per federation.

    Args:
        federations: where the episodes are played. env: an environment of their configuration (agents,
            model size). config: n-step window settings, and the demonstrator that labels every episode's
            states (``config.demonstrator``; :meth:`~agents.episodes.RunningEpisode.start_demonstration`, seeded
            with the episode's training seed). act: the joint action ``(K,)`` of an episode's next round (it
            sets the episode's ``epsilon``), called for every active episode before the round.

    Yields:
        Every environment step as ``(episode, transitions it completed)``, round by round, federations in
        order; ``episode.done`` and ``episode.summary`` are set on its last step.
    """
    started = federations.reset([training_seed(seed, e) for e in episodes])
    running = [RunningEpisode(env, e, NStepWindow(config.n_step, config.gamma), *stack_observations(env, obs))
               for e, (obs, _) in zip(episodes, started)]
    if config.demonstrator:
        for i, (r, (obs, infos)) in enumerate(zip(running, started)):
            r.start_demonstration(make_demonstrator(config.demonstrator, env.config), training_seed(seed, r.episode),
                                  federations.profile_duration_s(i), obs, infos)
    while active := [i for i, r in enumerate(running) if not r.done]:
        actions = {i: act(running[i]) for i in active}
        outputs = federations.step(actions)
        for i in active:
            yield running[i], running[i].record(actions[i], outputs[i])


@dataclass
class Step:
    """One environment step of episode ``episode`` as the learner stores it: the n-step ``transitions`` it
    completed, and the episode's ``summary`` (without losses) when the step ended the episode."""

    episode: int
    transitions: list[Transition]
    summary: EpisodeSummary | None


class Learner(Protocol):
    """What a rollout source reads of the learner (:class:`~agents.trainer.Trainer`): the run's seed and
    episode counters, its exploration horizon, its networks and its epsilon-greedy action."""

    episode: int
    episodes: int
    seed: int
    schedule_episodes: int
    vdn_config: VDNConfig
    learner: VDNLearner

    def act(self, r: RunningEpisode) -> np.ndarray: ...


class RolloutSource(Protocol):
    """Where the learner's training episodes come from (Stable-Baselines3's ``collect_rollouts`` split from
    ``learn``). ``env``: an environment of the run's configuration in this process; ``worker_rates``: worker
    index -> FL rounds per second of its last call (empty for a local source)."""

    env: ClientSelectionEnv
    worker_rates: dict[int, float]

    def steps(self, learner: Learner) -> Iterator[Step]:
        """The steps of the next episodes from ``learner.episode`` on (never past ``learner.episodes``,
        at least one episode), in the order the learner stores them; the learner trains between two."""

    def close(self) -> None:
        """Release what the source holds (Ray actors)."""


class LocalSource:
    """Episodes played in this process: the next ``min(num_envs, episodes left)`` episodes side by side on
    ``vector`` (one batched engine), acting with ``learner.act`` (its current weights) every round."""

    def __init__(self, vector: VectorClientSelectionEnv):
        self.vector, self.env = vector, vector.envs[0]
        self.worker_rates: dict[int, float] = {}

    def steps(self, learner: Learner) -> Iterator[Step]:
        count = max(1, min(self.vector.num_envs, learner.episodes - learner.episode))
        episodes = list(range(learner.episode, learner.episode + count))
        for r, transitions in play(LocalFederations(self.vector.envs[:count]), self.env, episodes, learner.seed,
                                   learner.vdn_config, learner.act):
            yield Step(r.episode, transitions, r.summary)

    def close(self) -> None:
        pass


@dataclass
class EpisodeRollout:
    """One played episode. ``steps[t]``: the n-step transitions completed by environment step t (what
    the learner stores before training after that step); ``summary``: without losses."""

    episode: int
    steps: list[list[Transition]]
    summary: EpisodeSummary


def play_rollouts(envs: list[ClientSelectionEnv], actor: VDNLearner, episodes: list[int], schedule_episodes: int,
                  seed: int) -> list[EpisodeRollout]:
    """Play training episodes ``episodes`` of run ``seed`` side by side (one per env of ``envs``), acting
    epsilon-greedily with ``actor``'s Q-network; episode ``e`` explores with a generator seeded
    ``(seed, e, 2)`` and epsilon on the run's schedule of ``schedule_episodes`` episodes.

    Returns:
        The rollouts in episode order.

    Raises:
        ValueError: more episodes than federations.
    """
    generators = {e: np.random.default_rng([seed, e, EXPLORATION_STREAM]) for e in episodes}
    steps: dict[int, list[list[Transition]]] = {e: [] for e in episodes}

    def act(r: RunningEpisode) -> np.ndarray:
        r.epsilon = exploration_epsilon(r, schedule_episodes, actor.config)
        actor.rng = generators[r.episode]
        return actor.act(r.obs, r.mask, r.epsilon, upload_probability=exploration_upload_probability(r, actor.config),
                         demo_actions=r.demo_actions)

    summaries = {}
    for r, transitions in play(LocalFederations(envs), envs[0], episodes, seed, actor.config, act):
        steps[r.episode].append(transitions)
        if r.done:
            summaries[r.episode] = r.summary
    return [EpisodeRollout(e, steps[e], summaries[e]) for e in episodes]
