"""Rollout sources on Ray (Ray core, https://docs.ray.io): the training episodes of
:func:`agents.trainer.learn` played by W actors, each with ``num_envs`` federations side by side.

The learner (:class:`~agents.trainer.Trainer`: replay buffer, TD updates, callbacks, checkpoints) stays
in this process; only where the federations are played changes, so a run on Ray validates, starts from
``--init-from``, resumes and extends as a local run does, and its checkpoints are the local format.

* ``sync`` (:class:`SyncRaySource`, reproducible): the actors host the federations and the learner plays
  them as its own: every FL round it sends each active federation's joint action, chosen by
  :meth:`~agents.trainer.Trainer.act` with its current weights and exploration generator, and trains after
  each step exactly as locally. Federation ``i`` of a batch of ``W * num_envs`` episodes is federation
  ``i % num_envs`` of actor ``i // num_envs``; with one actor the run trains the weights of the local run
  with the same ``num_envs``. An actor that dies is restarted by Ray (``max_restarts``) and its call
  replayed (``max_task_retries``); every call carries the episode seeds and the joint actions played so
  far, from which a fresh actor replays its federations to the same state (:meth:`FederationWorker.advance`).
* asynchronous (default, :class:`AsyncRaySource`; in the spirit of Ape-X, Horgan et al., ICLR 2018, with
  one learner): every actor plays whole episodes with the learner's latest published Q-network weights
  (:func:`agents.rollout.play_rollouts`: epsilon on the run's schedule by episode index, exploration draws
  seeded by ``(run seed, episode)``); the learner consumes results as they arrive, step by step, and
  publishes its weights after every ``W * num_envs`` consumed episodes. Fast, not reproducible. A dead
  actor's call is replayed with the same episode indices, hence the same seeds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import numpy as np
import torch

from agents.config import VDNConfig
from agents.mixers import acts_jointly
from agents.rollout import TRAINING_TEST_REPORTS, EpisodeRollout, Learner, Step, play, play_rollouts
from agents.vdn import VDNLearner
from fedenv.config import EnvConfig
from fedenv.distributed.cluster import RayOptions, start_ray
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation.rollout import profile_duration_s
from fedenv.vector import VectorClientSelectionEnv, drive_together

MAX_RESTARTS = 4
"""Restarts of a dead rollout actor, and retries of the call it died in."""


class WorkerProcess:
    """What every rollout actor answers about its process."""

    def pid(self) -> int:
        """The worker's process id."""
        return os.getpid()

    def torch_threads(self) -> int:
        """torch's intra-op threads in the worker (Ray sets ``OMP_NUM_THREADS`` to the one CPU it reserves)."""
        return torch.get_num_threads()


class FederationWorker(WorkerProcess):
    """A sync actor: ``num_envs`` federations of ``env_config`` that the learner plays round by round."""

    def __init__(self, env_config: EnvConfig, num_envs: int):
        self.vector = VectorClientSelectionEnv(env_config, num_envs, TRAINING_TEST_REPORTS)
        self._seeds: list[int] | None = None
        self._played: list[int] = []

    def advance(self, seeds: list[int], histories: list[list[np.ndarray]]) -> tuple[dict[int, tuple], float]:
        """Bring federation ``j`` to episode seed ``seeds[j]`` after the joint actions ``histories[j]``
        (each ``(K,)``, in play order).

        Federations one action behind play that action (the learner's next round, all in one batched
        engine); all-empty histories reset every federation; any other state (a restarted actor, a replayed
        call) resets the federations and replays every round with the grouping the learner played it in.

        Returns:
            The latest output of each federation whose history is the longest (reset: ``(observations,
            infos)``; otherwise the ``step`` tuple of its last action), by federation index; and this
            call's FL rounds per second (wall clock).

        Raises:
            ValueError: more seeds than federations, or a history per seed missing.
        """
        if len(seeds) > self.vector.num_envs or len(histories) != len(seeds):
            raise ValueError(f"{len(seeds)} seeds and {len(histories)} histories for {self.vector.num_envs} "
                             f"federations")
        start = time.perf_counter()
        lengths = [len(h) for h in histories]
        longest = max(lengths)
        caught_up = (longest > 0 and self._seeds == list(seeds)
                     and all(0 <= n - p <= 1 for n, p in zip(lengths, self._played)))
        if caught_up:
            outputs = self._step({j: histories[j][-1] for j, n in enumerate(lengths) if n == longest})
            rounds = len(outputs)
        else:
            outputs = self._replay(seeds, histories)
            rounds = sum(lengths)
        self._seeds, self._played = list(seeds), lengths
        return outputs, rounds / max(time.perf_counter() - start, 1e-9)

    def profile_duration_s(self, j: int) -> dict[str, float]:
        """Federation ``j``'s device-profile round-time estimates, s, for the episode it was last reset to
        (:func:`fedenv.evaluation.rollout.profile_duration_s`)."""
        return profile_duration_s(self.vector.envs[j])

    def _replay(self, seeds: list[int], histories: list[list[np.ndarray]]) -> dict[int, tuple]:
        envs = self.vector.envs[: len(seeds)]
        outputs = dict(enumerate(drive_together([env.reset_process(seed) for env, seed in zip(envs, seeds)])))
        for t in range(max(len(h) for h in histories)):
            outputs.update(self._step({j: h[t] for j, h in enumerate(histories) if len(h) > t}))
        longest = max(len(h) for h in histories)
        return {j: output for j, output in outputs.items() if len(histories[j]) == longest}

    def _step(self, actions: dict[int, np.ndarray]) -> dict[int, tuple]:
        agents = self.vector.possible_agents
        outputs = drive_together([self.vector.envs[j].step_process({a: int(x) for a, x in zip(agents, action)})
                                  for j, action in actions.items()])
        return dict(zip(actions, outputs))


class RemoteFederations:
    """:class:`agents.rollout.Federations` on :class:`FederationWorker` actors: federation ``i`` is
    federation ``i % per_worker`` of actor ``i // per_worker``; the actors step their federations in parallel.

    Attributes:
        worker_rates: worker index -> FL rounds per second of its last call.
    """

    def __init__(self, workers: list, per_worker: int):
        self.workers, self.per_worker = workers, per_worker
        self.worker_rates: dict[int, float] = {}
        self._seeds: list[int] = []
        self._histories: list[list[np.ndarray]] = []

    def reset(self, seeds: list[int]) -> list[tuple[dict, dict]]:
        if len(seeds) > len(self.workers) * self.per_worker:
            raise ValueError(f"{len(seeds)} episodes for {len(self.workers)} actors of {self.per_worker} federations")
        self._seeds, self._histories = list(seeds), [[] for _ in seeds]
        started = self._advance(range(len(seeds)))
        return [started[i] for i in range(len(seeds))]

    def profile_duration_s(self, i: int) -> dict[str, float]:
        import ray

        return ray.get(self.workers[i // self.per_worker].profile_duration_s.remote(i % self.per_worker))

    def step(self, actions: dict[int, np.ndarray]) -> dict[int, tuple]:
        for i, action in actions.items():
            self._histories[i].append(np.asarray(action))
        outputs = self._advance(actions)
        return {i: outputs[i] for i in actions}

    def _advance(self, federations) -> dict[int, tuple]:
        import ray

        n = self.per_worker
        calls = {w: self.workers[w].advance.remote(self._seeds[w * n:(w + 1) * n], self._histories[w * n:(w + 1) * n])
                 for w in sorted({i // n for i in federations})}
        outputs = {}
        for w, (returned, rate) in zip(calls, ray.get(list(calls.values()))):
            self.worker_rates[w] = rate
            outputs.update({w * n + j: output for j, output in returned.items()})
        return outputs


class RolloutWorker(WorkerProcess):
    """An asynchronous actor: ``num_envs`` federations and an epsilon-greedy copy of the Q-network (and of a
    mixer that acts jointly)."""

    def __init__(self, env_config: EnvConfig, vdn_config: VDNConfig, seed: int, num_envs: int):
        self.vector = VectorClientSelectionEnv(env_config, num_envs, TRAINING_TEST_REPORTS)
        env = self.vector.envs[0]
        self.actor = VDNLearner(len(env.feature_names), vdn_config, env.device, seed=seed,
                                feature_names=env.feature_names)
        self.seed = seed

    def play(self, episodes: list[int], weights: dict, schedule_episodes: int) -> tuple[list[EpisodeRollout], float]:
        """Play ``episodes`` (at most ``num_envs``) with ``weights`` (``{"q": state_dict, "mixer": state_dict or
        None}``: the Q-network's, and the mixer's where it acts jointly), epsilon on a schedule of
        ``schedule_episodes`` episodes.

        Returns:
            The rollouts in episode order and this call's FL rounds per second (wall clock).
        """
        self.actor.q.load_state_dict(weights["q"])
        if weights["mixer"] is not None:
            self.actor.mixer.load_state_dict(weights["mixer"])
        start = time.perf_counter()
        rollouts = play_rollouts(self.vector.envs, self.actor, episodes, schedule_episodes, self.seed)
        return rollouts, sum(len(r.steps) for r in rollouts) / (time.perf_counter() - start)


def acting_weights(learner: VDNLearner) -> dict:
    """What :meth:`RolloutWorker.play` acts with: CPU copies of ``learner``'s Q-network weights and, where its
    mixer acts jointly (``straggler``), of the mixer's: ``{"q": state_dict, "mixer": state_dict or None}``."""
    def cpu(module):
        return {k: v.detach().cpu() for k, v in module.state_dict().items()}

    return {"q": cpu(learner.q), "mixer": cpu(learner.mixer) if acts_jointly(learner.mixer) else None}


def start_actors(cls: type, options: RayOptions, *args) -> list:
    """``options.num_workers`` actors of ``cls`` (default: one per CPU of the cluster, started if needed),
    each with one CPU and ``options.worker_gpus`` GPUs, restarted and their calls retried on failure.

    Raises:
        ValueError: the cluster cannot place them (:func:`fedenv.distributed.cluster.check_cluster`): Ray
            would wait for ever.
    """
    import ray

    cpus = start_ray(options)
    actor = ray.remote(cls).options(num_cpus=1, num_gpus=options.worker_gpus, max_restarts=MAX_RESTARTS,
                                    max_task_retries=MAX_RESTARTS)
    return [actor.remote(*args) for _ in range(options.num_workers or cpus)]


class RaySource:
    """Ray actors and an environment of the run's configuration in this process (the learner's)."""

    def __init__(self, env_config: EnvConfig, workers: list, num_envs: int):
        self.env = ClientSelectionEnv(env_config)
        self.workers, self.num_envs = workers, num_envs
        self.worker_rates: dict[int, float] = {}

    def worker_pids(self) -> list[int]:
        """The process ids of the actors, in worker order."""
        import ray

        return ray.get([worker.pid.remote() for worker in self.workers])

    def close(self) -> None:
        """End the actors."""
        import ray

        for worker in self.workers:
            ray.kill(worker)


class SyncRaySource(RaySource):
    """The sync mode (module docstring): the next ``min(W * num_envs, episodes left)`` episodes played side by
    side on the actors' federations, with the learner's actions."""

    def steps(self, learner: Learner) -> Iterator[Step]:
        count = max(1, min(len(self.workers) * self.num_envs, learner.episodes - learner.episode))
        episodes = list(range(learner.episode, learner.episode + count))
        federations = RemoteFederations(self.workers, self.num_envs)
        for r, transitions in play(federations, self.env, episodes, learner.seed, learner.vdn_config, learner.act):
            yield Step(r.episode, transitions, r.summary)
        self.worker_rates = federations.worker_rates


class AsyncRaySource(RaySource):
    """The asynchronous mode (module docstring): each call yields the episodes of the next actor call to finish."""

    def __init__(self, env_config: EnvConfig, workers: list, num_envs: int):
        super().__init__(env_config, workers, num_envs)
        self._pending: dict = {}
        self._next_episode: int | None = None
        self._weights = None
        self._since_publish = 0

    def steps(self, learner: Learner) -> Iterator[Step]:
        import ray

        if self._next_episode is None:
            self._publish(learner)
            self._next_episode = learner.episode
            for worker in range(len(self.workers)):
                self._next_episode += self._dispatch(worker, learner)
        [ref], _ = ray.wait(list(self._pending), num_returns=1)
        worker = self._pending.pop(ref)
        rollouts, self.worker_rates[worker] = ray.get(ref)
        for rollout in rollouts:
            for t, transitions in enumerate(rollout.steps):
                yield Step(rollout.episode, transitions, rollout.summary if t == len(rollout.steps) - 1 else None)
        self._since_publish += len(rollouts)
        if self._since_publish >= len(self.workers) * self.num_envs:
            self._publish(learner)
        self._next_episode += self._dispatch(worker, learner)

    def _publish(self, learner: Learner) -> None:
        import ray

        self._weights = ray.put(acting_weights(learner.learner))
        self._since_publish = 0

    def _dispatch(self, worker: int, learner: Learner) -> int:
        """Hand ``worker`` the episodes from the next unplayed one (up to ``num_envs``); returns how many."""
        first = self._next_episode
        episodes = list(range(first, min(first + self.num_envs, learner.episodes)))
        if episodes:
            self._pending[self.workers[worker].play.remote(episodes, self._weights, learner.schedule_episodes)] = worker
        return len(episodes)


def ray_source(env_config: EnvConfig, vdn_config: VDNConfig, options: RayOptions, num_envs: int = 1,
               seed: int = 0) -> RaySource:
    """The rollout source of ``options`` (sync or asynchronous, module docstring) on its cluster (started if
    needed), with ``options.num_workers`` actors of ``num_envs`` federations each; ``seed``: the run seed
    (the asynchronous actors' Q-network copies are built with it, then take the learner's weights)."""
    if options.sync:
        return SyncRaySource(env_config, start_actors(FederationWorker, options, env_config, num_envs), num_envs)
    workers = start_actors(RolloutWorker, options, env_config, vdn_config, seed, num_envs)
    return AsyncRaySource(env_config, workers, num_envs)
