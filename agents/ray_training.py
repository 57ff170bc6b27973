"""Distributed VDN training on Ray (Ray core: one learner, W rollout actors; in the spirit of Ape-X,
Horgan et al., ICLR 2018, with one learner and its replay buffer here and actors that only play).

Each :class:`RolloutWorker` actor holds its own :class:`~fedenv.vector.VectorClientSelectionEnv` (``num_envs``
federations side by side) and plays the training episodes it is handed with the learner's latest published
Q-network weights (:func:`agents.rollout.play_rollouts`: epsilon is the run's schedule by episode index, so
episode e explores as it would in a local run). The learner (:class:`RayTrainer`, a
:class:`~agents.trainer.Trainer`) stores each episode's n-step transitions step by step and trains on the
trainer's schedule (``learning_starts``, ``train_freq``, ``gradient_steps`` counted in environment steps),
then logs, checkpoints and resumes as the local trainer does: the checkpoint is the learner's, in the same
format.

* Asynchronous (default): every worker plays the next ``num_envs`` unplayed episodes; the learner consumes
  results as they arrive and publishes its weights after every ``W * num_envs`` consumed episodes. Fast, not
  reproducible; ``--resume`` continues from the number of consumed episodes.
* ``sync``: per iteration, worker w plays episodes ``start + w * num_envs ...`` with the weights of the
  iteration's start, and the learner consumes them in worker order: two runs of one configuration end with
  the same weights, and resuming is exact.

A worker that dies is restarted by Ray (``max_restarts``) and its call, i.e. its lost episodes, replayed
with the same episode indices (``max_task_retries``), hence the same seeds.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import torch
from tqdm.auto import tqdm

from agents.checkpoint import load_checkpoint, save_checkpoint
from agents.config import VDNConfig
from agents.episodes import EpisodeSummary
from agents.rollout import EpisodeRollout, play_rollouts
from agents.tensorboard_log import log_episode, open_writer
from agents.trainer import CHECKPOINT_NAME, Trainer
from agents.vdn import VDNLearner
from fedenv.config import EnvConfig
from fedenv.distributed.cluster import RayOptions, start_ray
from fedenv.vector import VectorClientSelectionEnv

MAX_RESTARTS = 4
"""Restarts of a dead rollout actor, and retries of the call it died in."""


class RolloutWorker:
    """A rollout actor's state: ``num_envs`` federations and an epsilon-greedy copy of the Q-network."""

    def __init__(self, env_config: EnvConfig, vdn_config: VDNConfig, planned_episodes: int, seed: int,
                 num_envs: int):
        self.vector = VectorClientSelectionEnv(env_config, num_envs)
        env = self.vector.envs[0]
        self.actor = VDNLearner(len(env.feature_names), vdn_config, env.device, seed=seed)
        self.planned_episodes, self.seed = planned_episodes, seed

    def pid(self) -> int:
        """The worker's process id."""
        return os.getpid()

    def torch_threads(self) -> int:
        """torch's intra-op threads in the worker (Ray sets ``OMP_NUM_THREADS`` to the one CPU it reserves)."""
        return torch.get_num_threads()

    def play(self, episodes: list[int], weights: dict) -> tuple[list[EpisodeRollout], float]:
        """Play ``episodes`` (at most ``num_envs``) with Q-network ``weights`` (a ``state_dict``).

        Returns:
            The rollouts in episode order and this call's FL rounds per second (wall clock).
        """
        self.actor.q.load_state_dict(weights)
        start = time.perf_counter()
        rollouts = play_rollouts(self.vector, self.actor, episodes, self.planned_episodes, self.seed)
        return rollouts, sum(len(r.steps) for r in rollouts) / (time.perf_counter() - start)


class RayTrainer(Trainer):
    """The learner of a distributed run: a :class:`~agents.trainer.Trainer` whose :meth:`play_episodes`
    gets its episodes from Ray rollout actors (module docstring).

    Args:
        env_config, vdn_config, episodes, seed: as :class:`~agents.trainer.Trainer`.
        options: the cluster (started if needed) and its ``num_workers`` actors (default: one per CPU),
            each with ``worker_gpus`` GPUs and one CPU; ``options.sync``: the reproducible mode.
        num_envs: federations per actor.

    Attributes:
        worker_rates: worker index -> FL rounds per second of its last call.
    """

    def __init__(self, env_config: EnvConfig, vdn_config: VDNConfig, episodes: int, seed: int, options: RayOptions,
                 num_envs: int = 1):
        import ray

        super().__init__(env_config, vdn_config, episodes, seed, num_envs=1)
        cpus = start_ray(options)
        num_workers = options.num_workers or cpus
        actor = ray.remote(RolloutWorker).options(num_cpus=1, num_gpus=options.worker_gpus,
                                                  max_restarts=MAX_RESTARTS, max_task_retries=MAX_RESTARTS)
        self.workers = [actor.remote(env_config, vdn_config, self.episodes, self.seed, num_envs)
                        for _ in range(num_workers)]
        self.num_envs, self.sync = num_envs, options.sync
        self.worker_rates: dict[int, float] = {}
        self._pending: dict = {}
        self._next_episode: int | None = None
        self._weights = None
        self._since_publish = 0

    def worker_pids(self) -> list[int]:
        """The process ids of the rollout actors, in worker order."""
        import ray

        return ray.get([worker.pid.remote() for worker in self.workers])

    def close(self) -> None:
        """End the rollout actors."""
        import ray

        for worker in self.workers:
            ray.kill(worker)

    def play_episodes(self) -> list[EpisodeSummary]:
        """Sync: one iteration (every worker's episodes, consumed in worker order). Async: the episodes of
        the next call to finish. Returns their summaries, TD losses and ``rounds_played`` filled in."""
        return self._iterate() if self.sync else self._next_result()

    def _publish(self) -> None:
        import ray

        self._weights = ray.put({k: v.detach().cpu() for k, v in self.learner.q.state_dict().items()})
        self._since_publish = 0

    def _dispatch(self, worker: int, first: int) -> int:
        """Hand ``worker`` the episodes from ``first`` (up to ``num_envs``); returns how many."""
        episodes = list(range(first, min(first + self.num_envs, self.episodes)))
        if episodes:
            self._pending[self.workers[worker].play.remote(episodes, self._weights)] = worker
        return len(episodes)

    def _iterate(self) -> list[EpisodeSummary]:
        import ray

        self._publish()
        first = self.episode
        for worker in range(len(self.workers)):
            first += self._dispatch(worker, first)
        calls, self._pending = list(self._pending.items()), {}
        return [s for ref, worker in calls for s in self._consume(worker, *ray.get(ref))]

    def _next_result(self) -> list[EpisodeSummary]:
        import ray

        if self._next_episode is None:
            self._publish()
            self._next_episode = self.episode
            for worker in range(len(self.workers)):
                self._next_episode += self._dispatch(worker, self._next_episode)
        [ref], _ = ray.wait(list(self._pending), num_returns=1)
        worker = self._pending.pop(ref)
        summaries = self._consume(worker, *ray.get(ref))
        if self._since_publish >= len(self.workers) * self.num_envs:
            self._publish()
        self._next_episode += self._dispatch(worker, self._next_episode)
        return summaries

    def _consume(self, worker: int, rollouts: list[EpisodeRollout], rounds_per_s: float) -> list[EpisodeSummary]:
        """Store each rollout's transitions step by step, training after every step as the trainer does."""
        self.worker_rates[worker] = rounds_per_s
        summaries = []
        for rollout in rollouts:
            losses = []
            for transitions in rollout.steps:
                for transition in transitions:
                    self.buffer.add(transition)
                self.steps += 1
                losses += self._train()
            summaries.append(dataclasses.replace(rollout.summary, td_losses=losses, rounds_played=self.steps))
        self.episode += len(rollouts)
        self._since_publish += len(rollouts)
        return summaries


def train_vdn_on_ray(env_config: EnvConfig, vdn_config: VDNConfig, episodes: int, seed: int = 0,
                     run_dir: str | Path | None = None, checkpoint_interval: int = 25, progress: bool = True,
                     resume: bool = False, num_envs: int = 1, *, options: RayOptions) -> tuple[Trainer, list]:
    """:func:`~agents.trainer.train_vdn` with the episodes played by Ray rollout actors (:class:`RayTrainer`
    on the cluster of ``options``, reproducible when ``options.sync``).

    Logs what the local run logs, plus ``workers/fl_rounds_per_s/<worker>`` (each actor's FL rounds per
    second in its last call), and writes the same checkpoints; ``resume`` continues from
    ``run_dir/checkpoint.pt`` (a local run's checkpoint too).

    Returns:
        The learner and the summaries of the episodes played by this call, in consumption order.

    Raises:
        ValueError, FileNotFoundError: as :func:`~agents.trainer.train_vdn`.
    """
    if resume and run_dir is None:
        raise ValueError("resume needs a run directory")
    trainer = RayTrainer(env_config, vdn_config, episodes, seed, options, num_envs)
    if resume:
        trainer.restore(load_checkpoint(Path(run_dir) / CHECKPOINT_NAME))
    writer = open_writer(run_dir, trainer.steps if resume else None) if run_dir is not None else None
    summaries, start, start_steps = [], time.perf_counter(), trainer.steps
    bar = tqdm(total=episodes, initial=trainer.episode, desc="VDN on Ray", unit="episode", disable=not progress)
    while trainer.episode < episodes:
        before = trainer.episode
        played = trainer.play_episodes()
        summaries += played
        for summary in played:
            if writer is not None:
                log_episode(writer, summary, (trainer.steps - start_steps) / (time.perf_counter() - start))
            bar.update()
        if writer is not None:
            for worker, rate in trainer.worker_rates.items():
                writer.add_scalar(f"workers/fl_rounds_per_s/{worker}", rate, trainer.steps)
        crossed = trainer.episode // checkpoint_interval > before // checkpoint_interval
        if run_dir is not None and (crossed or trainer.episode == episodes):
            save_checkpoint(Path(run_dir) / CHECKPOINT_NAME, trainer.checkpoint())
    bar.close()
    trainer.close()
    if writer is not None:
        writer.close()
    return trainer, summaries

