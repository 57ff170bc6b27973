"""The VDN learner and its training loop: episodes from a rollout source, replay, TD updates, callbacks.

One loop serves every run, in the manner of Stable-Baselines3's ``learn()``: :func:`learn` asks the
:class:`Trainer` for its next episodes, whose steps come from a rollout source (:mod:`agents.rollout`: the
local vector env; :mod:`agents.ray_training`: Ray actors) and are stored and trained on step by step, then
hands each batch to its callbacks (:mod:`agents.callbacks`: TensorBoard, progress, validation and
``best.pt``, checkpoints). A run on Ray therefore validates, starts from ``init_from``, resumes and extends
as a local run does, and with ``--sync`` trains the local run's weights.

A run can be resumed exactly: the checkpoint holds the networks, the optimiser, the replay buffer, the
step and episode counters and every random generator of the loop, and every training episode is reset
with its own seed, so a run killed after a checkpoint and resumed ends with the same weights as an
uninterrupted run. A run can be extended (resumed to more episodes, as SB3's
``learn(reset_num_timesteps=False)``): the exploration schedule keeps the horizon it started with
(``schedule_episodes``), so extending a 20-episode run to 30 gives the weights of a straight 30-episode
run with ``schedule_episodes=20``.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from agents.callbacks import (
    Callback,
    CheckpointCallback,
    ProgressCallback,
    TensorBoardCallback,
    ValidationCallback,
)
from agents.checkpoint import load_checkpoint
from agents.config import VDNConfig
from agents.demonstrations import make_demonstrator
from agents.episodes import EpisodeSummary, RunningEpisode
from agents.mixers import acts_jointly
from agents.policy import GreedyPolicy, acting_networks, variant_name
from agents.ray_training import ray_source
from agents.replay import PrioritizedReplayBuffer, ReplayBuffer
from agents.rollout import (
    TRAINING_TEST_REPORTS,
    LocalSource,
    RolloutSource,
    exploration_epsilon,
    exploration_upload_probability,
)
from agents.rollout import training_seed as training_seed  # re-exported: the seeds of the episodes a Trainer plays
from agents.validation import VALIDATION_SEEDS, check_validation_seeds
from agents.vdn import UpdateLosses, VDNLearner, demonstration_weight
from fedenv.config import EnvConfig
from fedenv.distributed.cluster import RayOptions
from fedenv.env import ClientSelectionEnv
from fedenv.vector import VectorClientSelectionEnv

CHECKPOINT_NAME = "checkpoint.pt"


def check_for_federation(vdn_config: VDNConfig, env_config: EnvConfig) -> None:
    """The checks of ``vdn_config`` that need the federation (:meth:`VDNConfig.validate` makes the others), made
    by :class:`Trainer` and, before anything is written, by ``train_agents.py``.

    Raises:
        ValueError: ``exploration_uploads`` whose ``L`` exceeds ``env_config.num_rounds``; a ``demonstrator``
            that cannot be built for this federation (names it and why:
            :func:`agents.demonstrations.make_demonstrator`).
    """
    if vdn_config.exploration_uploads and vdn_config.exploration_uploads[1] > env_config.num_rounds:
        raise ValueError(f"vdn exploration_uploads={vdn_config.exploration_uploads!r}: L (all upload in the last "
                         f"L rounds) must be at most num_rounds={env_config.num_rounds}")
    if vdn_config.demonstrator:
        try:
            make_demonstrator(vdn_config.demonstrator, env_config)
        except ValueError as error:
            raise ValueError(f"vdn demonstrator={vdn_config.demonstrator!r}: {error}") from None


class Trainer:
    """VDN training state: rollout source, learner, replay buffer, counters and generators.

    Args:
        env_config: the environment. vdn_config: hyperparameters.
        episodes: planned episodes (may grow when a run is extended: :meth:`restore`).
        seed: run seed (training env seeds, network initialisation, exploration, replay sampling).
        num_envs: federations played in lockstep through one batched engine (:mod:`fedenv.vector`; per
            Ray actor with ``ray_options``), each with its own n-step window and episode sums. They play the
            same episode seeds, with the same epsilon per round, as one federation would; while nothing is
            learned and epsilon is 0, the replay buffer receives the same transitions (in another order).
        schedule_episodes: the exploration schedule's horizon in episodes (default: ``episodes``). Epsilon
            anneals by episode: round ``r`` of episode ``e`` is schedule step ``e * num_rounds + r`` of
            ``schedule_episodes * num_rounds`` (:func:`~agents.vdn.linear_epsilon`), which equals the
            environment step count when every episode runs its ``num_rounds`` rounds, and still reaches
            ``exploration_final_eps`` when episodes end early (``target_accuracy``).
        ray_options: play the episodes on Ray actors (:func:`agents.ray_training.ray_source`); None: in
            this process (:class:`~agents.rollout.LocalSource`).
        overlap_learner: the learner's gradient steps run in a second thread while the next batch of
            episodes plays (the actor/learner split of Ape-X, Horgan et al., ICLR 2018, in one process):
            the actor acts with a copy of the Q-network taken when the batch starts, and the gradient steps
            due after each environment step of a batch (the same number as without it) run while the next
            batch plays, sampling the replay buffer as it stood at that batch's start; the last batch's run
            after it. Deterministic given the seed (each thread draws from its own generator), but not the
            weights of the default loop: actions lag the learner by one batch. Local runs only.

    Attributes:
        source: the rollout source (:class:`~agents.rollout.RolloutSource`); :meth:`close` releases it.
        pending_train_steps: with ``overlap_learner``, the environment step counts whose gradient steps
            are still due (run while the next batch plays; kept in the checkpoint), and
            ``pending_train_episodes`` the episode each of those steps belongs to.

    Raises:
        ValueError: ``episodes``, ``seed`` or ``schedule_episodes`` is not an integer; ``overlap_learner``
            with ``ray_options``; ``exploration_uploads`` whose ``L`` exceeds ``num_rounds``; a ``demonstrator``
            that cannot be built for this federation (names it and why).
    """

    def __init__(self, env_config: EnvConfig, vdn_config: VDNConfig, episodes: int, seed: int = 0,
                 num_envs: int = 1, schedule_episodes: int | None = None, ray_options: RayOptions | None = None,
                 overlap_learner: bool = False):
        check_for_federation(vdn_config, env_config)
        if overlap_learner and ray_options is not None:
            raise ValueError("overlap_learner trains beside episodes played in this process; with ray_options the "
                             "Ray actors already play apart from the learner")
        schedule_episodes = episodes if schedule_episodes is None else schedule_episodes
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                   for v in (episodes, seed, schedule_episodes)):
            raise ValueError(f"episodes={episodes!r}, seed={seed!r} and schedule_episodes={schedule_episodes!r} "
                             f"must be integers")
        self.source: RolloutSource = (
            LocalSource(VectorClientSelectionEnv(env_config, num_envs, TRAINING_TEST_REPORTS)) if ray_options is None
            else ray_source(env_config, vdn_config, ray_options, num_envs, int(seed)))
        self.env = self.source.env
        self.vdn_config = vdn_config
        self.episodes, self.seed, self.schedule_episodes = int(episodes), int(seed), int(schedule_episodes)
        self.learner = VDNLearner(len(self.env.feature_names), vdn_config, self.env.device, seed=self.seed,
                                  feature_names=self.env.feature_names)
        shape = (vdn_config.buffer_size, len(self.env.possible_agents), len(self.env.feature_names))
        self.buffer = (PrioritizedReplayBuffer(*shape, vdn_config.prioritized_replay_alpha,
                                               vdn_config.prioritized_replay_beta, vdn_config.prioritized_replay_eps)
                       if vdn_config.prioritized_replay else ReplayBuffer(*shape))
        self.sample_rng = np.random.default_rng([self.seed, 1])
        self.steps = 0
        self.episode = 0
        self.best_eval_return: float | None = None  # best validation team return so far (agents.validation)
        self.overlap_learner = bool(overlap_learner)
        self.pending_train_steps: list[int] = []
        self.pending_train_episodes: list[int] = []
        self._actor_q = copy.deepcopy(self.learner.q) if self.overlap_learner else None
        acting_mixer = self.overlap_learner and acts_jointly(self.learner.mixer)
        self._actor_mixer = copy.deepcopy(self.learner.mixer) if acting_mixer else None
        self._learner_thread = ThreadPoolExecutor(1, thread_name_prefix="vdn-learner") if self.overlap_learner else None

    def play_episodes(self) -> list[EpisodeSummary]:
        """Play the source's next episodes (locally: ``min(num_envs, episodes left)`` side by side), storing
        each environment step's transitions and training after it as configured (with ``overlap_learner``:
        :meth:`_play_beside_learner`). Returns their summaries in episode order, losses, margin weight and
        ``rounds_played`` filled in (:meth:`_finished`)."""
        if self.overlap_learner:
            return self._play_beside_learner()
        losses: dict[int, list[UpdateLosses]] = {}
        ended = []
        for step in self.source.steps(self):
            for transition in step.transitions:
                self.buffer.add(transition)
            self.steps += 1
            losses.setdefault(step.episode, []).extend(self._train_after(self.steps, step.episode))
            if step.summary is not None:
                ended.append((step.episode, self._finished(step.summary, losses[step.episode], self.steps)))
        self.episode += len(ended)
        return [summary for _, summary in sorted(ended, key=lambda item: item[0])]

    def _play_beside_learner(self) -> list[EpisodeSummary]:
        """:meth:`play_episodes` with ``overlap_learner``: the gradient steps of :attr:`pending_train_steps`
        run in the learner thread while this batch plays with the actor's copy of the Q-network; the batch's
        transitions are stored after both end, and its steps become the pending ones (run here at once
        after the run's last batch). The losses of the gradient steps run meanwhile go to the batch's
        first summary."""
        self._actor_q.load_state_dict(self.learner.q.state_dict())
        if self._actor_mixer is not None:
            self._actor_mixer.load_state_dict(self.learner.mixer.state_dict())
        due = list(zip(self.pending_train_steps, self.pending_train_episodes))
        self.pending_train_steps, self.pending_train_episodes = [], []
        training = self._learner_thread.submit(self._train_due, due)
        played, ended = [], []
        try:
            for step in self.source.steps(self):
                played.append(step.transitions)
                self.steps += 1
                self.pending_train_steps.append(self.steps)
                self.pending_train_episodes.append(step.episode)
                if step.summary is not None:
                    ended.append((step.episode, step.summary, self.steps))
        finally:
            losses = training.result()
        for transitions in played:
            for transition in transitions:
                self.buffer.add(transition)
        self.episode += len(ended)
        if self.episode >= self.episodes:
            losses += self._train_due(zip(self.pending_train_steps, self.pending_train_episodes))
            self.pending_train_steps, self.pending_train_episodes = [], []
        ended.sort(key=lambda item: item[0])
        return [self._finished(summary, losses if i == 0 else [], steps) for i, (_, summary, steps) in enumerate(ended)]

    def _finished(self, summary: EpisodeSummary, losses: list[UpdateLosses], rounds_played: int) -> EpisodeSummary:
        """``summary`` with the losses of the gradient steps reported with it, their mean margin weight (with a
        demonstrator and such steps) and the run's FL rounds played when it ended."""
        weighted = bool(self.vdn_config.demonstrator and losses)
        return dataclasses.replace(
            summary, td_losses=[step.td_loss for step in losses], rounds_played=rounds_played,
            margin_losses=[step.margin_loss for step in losses] if weighted else [],
            demonstration_weight=float(np.mean([step.margin_weight for step in losses])) if weighted else None)

    def act(self, r: RunningEpisode) -> np.ndarray:
        """The epsilon-greedy joint action ``(K,)`` of ``r``'s next round with the current Q-network (with
        ``overlap_learner``: the actor's copies of it and of a mixer that acts jointly) and the learner's
        exploration generator, an exploring candidate uploading with
        :func:`~agents.rollout.exploration_upload_probability` (with a demonstrator: playing its action,
        ``r.demo_actions``); sets
        ``r.epsilon`` (:func:`~agents.rollout.exploration_epsilon`)."""
        r.epsilon = exploration_epsilon(r, self.schedule_episodes, self.vdn_config)
        return self.learner.act(r.obs, r.mask, r.epsilon, self._actor_q, self._actor_mixer,
                                exploration_upload_probability(r, self.vdn_config), r.demo_actions)

    def close(self) -> None:
        """Release the rollout source (Ray actors) and the learner thread; the learner's state stays readable."""
        self.source.close()
        if self._learner_thread is not None:
            self._learner_thread.shutdown()

    def _train_due(self, due) -> list[UpdateLosses]:
        """The losses of :meth:`_train_after` for each ``(environment step, episode)`` of ``due``, in order."""
        return [loss for step, episode in due for loss in self._train_after(step, episode)]

    def _train_after(self, step: int, episode: int) -> list[UpdateLosses]:
        """The losses of the gradient steps due after environment step ``step``, a step of episode
        ``episode`` (none before ``learning_starts``; ``gradient_steps`` every ``train_freq`` steps), with a
        demonstrator at that episode's margin weight (:func:`~agents.vdn.demonstration_weight` at schedule step
        ``episode * num_rounds`` of ``schedule_episodes * num_rounds``, the steps epsilon anneals over)."""
        config = self.vdn_config
        if step < config.learning_starts or step % config.train_freq or not len(self.buffer):
            return []
        num_rounds = self.env.config.num_rounds
        margin_weight = demonstration_weight(episode * num_rounds, self.schedule_episodes * num_rounds, config)
        losses = []
        for _ in range(config.gradient_steps):
            batch = self.buffer.sample(config.batch_size, self.sample_rng, self.learner.device)
            losses.append(self.learner.update(batch, margin_weight))
            if batch.index is not None:
                self.buffer.update_priorities(batch.index, self.learner.last_td_errors)
        return losses

    def policy_payload(self) -> dict:
        """What :class:`~agents.policy.GreedyPolicy` needs: weights, configs, observation layout, counters;
        with a mixer (``VDNConfig.mixer``), its weights as ``mixer_state`` (fine-tuning from the file needs
        them, and so does acting with a mixer that acts jointly)."""
        payload = {
            "q_state": self.learner.q.state_dict(),
            "vdn_config": self.vdn_config.to_dict(),
            "env_config": self.env.config.to_dict(),
            "feature_names": list(self.env.feature_names),
            "episodes": self.episode,
            "env_steps": self.steps,
        }
        if self.learner.mixer is not None:
            payload["mixer_state"] = self.learner.mixer.state_dict()
        return payload

    def checkpoint(self) -> dict:
        """Checkpoint payload: :meth:`policy_payload` plus the training state."""
        return {
            **self.policy_payload(),
            "training": {
                "planned_episodes": self.episodes,
                "schedule_episodes": self.schedule_episodes,
                "seed": self.seed,
                "learner": self.learner.state_dict(),
                "buffer": self.buffer.state_dict(),
                "sample_rng": self.sample_rng.bit_generator.state,
                "best_eval_return": self.best_eval_return,
                "pending_train_steps": list(self.pending_train_steps),
                "pending_train_episodes": list(self.pending_train_episodes),
            },
        }

    def restore(self, document: dict) -> None:
        """Continue from a checkpoint (as :func:`~agents.checkpoint.load_checkpoint` returns it) written by
        :meth:`checkpoint` for the same configuration (VDN field names from before the rename included).
        The run may be extended: ``episodes`` may exceed the checkpoint's planned episodes.

        Raises:
            ValueError: the checkpoint was written for another configuration, seed or exploration schedule,
                has played more than ``episodes`` episodes, or has gradient steps due (``overlap_learner``)
                and this trainer has no learner thread.
        """
        training = document.get("training")
        if training is None:
            raise ValueError("the checkpoint holds no training state (written by an older version?)")
        if document["env_config"].to_dict() != self.env.config.to_dict() or document["vdn_config"] != self.vdn_config:
            raise ValueError("the checkpoint was written with another env or VDN configuration")
        if (_schedule_episodes(document), training["seed"]) != (self.schedule_episodes, self.seed):
            raise ValueError(
                f"the checkpoint belongs to a run with seed {training['seed']} whose epsilon anneals over "
                f"{_schedule_episodes(document)} episodes, not seed {self.seed} over {self.schedule_episodes}"
            )
        if training.get("pending_train_steps") and not self.overlap_learner:
            raise ValueError("the checkpoint was written by a run with overlap_learner whose last gradient steps "
                             "are still due: resume it with overlap_learner")
        if document["episodes"] > self.episodes:
            raise ValueError(f"the checkpoint has played {document['episodes']} episodes, more than the "
                             f"{self.episodes} asked for (a run can be extended, not shortened)")
        self.learner.load_state_dict(training["learner"])
        self.buffer.load_state_dict(training["buffer"])
        self.sample_rng.bit_generator.state = training["sample_rng"]
        self.steps, self.episode = int(document["env_steps"]), int(document["episodes"])
        self.best_eval_return = training.get("best_eval_return")
        self.pending_train_steps = [int(s) for s in training.get("pending_train_steps", [])]
        # a checkpoint from before the margin weight's schedule: its steps' episodes are read as the last one played
        self.pending_train_episodes = [int(e) for e in training.get(
            "pending_train_episodes", [max(self.episode - 1, 0)] * len(self.pending_train_steps))]

    def initialise_from(self, document: dict) -> None:
        """Start from another run's Q-network (fine-tuning): online and target networks take its weights,
        and so does the mixer where both runs use the same mixer of the same width (otherwise this run's
        mixer starts fresh); optimiser, buffer, counters and generators stay fresh, so epsilon anneals
        again from ``exploration_initial_eps`` over this run's episodes (set it lower to re-anneal from
        less exploration).

        Raises:
            ValueError: the checkpoint's observation layout, Q-network, hidden widths or input features differ
                from this run's (names the features, networks or widths that differ).
        """
        theirs, ours = list(document["feature_names"]), list(self.env.feature_names)
        if theirs != ours:
            raise ValueError(f"the checkpoint's observation layout differs from this env's: only in the checkpoint "
                             f"{[f for f in theirs if f not in ours]}, only in the env "
                             f"{[f for f in ours if f not in theirs]}; checkpoint order {theirs}, env order {ours}")
        if document["vdn_config"].q_network != self.vdn_config.q_network:
            raise ValueError(f"the checkpoint's Q-network is {document['vdn_config'].q_network!r}, this run's "
                             f"{self.vdn_config.q_network!r} (set --vdn-q-network to match)")
        if tuple(document["vdn_config"].hidden) != tuple(self.vdn_config.hidden):
            raise ValueError(f"the checkpoint's Q-network has hidden widths {tuple(document['vdn_config'].hidden)}, "
                             f"this run {tuple(self.vdn_config.hidden)} (set --vdn-hidden to match)")
        if tuple(document["vdn_config"].input_features) != tuple(self.vdn_config.input_features):
            raise ValueError(f"the checkpoint's Q-network reads the features "
                             f"{list(document['vdn_config'].input_features) or 'all'}, this run's "
                             f"{list(self.vdn_config.input_features) or 'all'} (set --vdn-input-features to match)")
        self.learner.q.load_state_dict(document["q_state"])
        self.learner.target.load_state_dict(document["q_state"])
        if self.learner.mixer is not None and "mixer_state" in document and (
                (document["vdn_config"].mixer, document["vdn_config"].mixing_embed_dim)
                == (self.vdn_config.mixer, self.vdn_config.mixing_embed_dim)):
            self.learner.mixer.load_state_dict(document["mixer_state"])
            self.learner.target_mixer.load_state_dict(document["mixer_state"])

    def greedy_policy(self) -> GreedyPolicy:
        """The current greedy policy (CPU copies of the Q-network and of a mixer that acts jointly,
        :func:`~agents.policy.acting_networks`; building it draws from no global generator)."""
        q, mixer = acting_networks(self.vdn_config, self.env.feature_names, self.learner.q.state_dict(),
                                   None if self.learner.mixer is None else self.learner.mixer.state_dict())
        return GreedyPolicy(q, self.env.feature_names, self.env.config, variant_name(self.vdn_config, self.env.config),
                            mixer)


def _schedule_episodes(document: dict) -> int:
    """The exploration schedule's horizon (episodes) of the run that wrote checkpoint ``document``
    (checkpoints written before runs could be extended: their planned episodes)."""
    training = document["training"]
    return int(training.get("schedule_episodes", training["planned_episodes"]))


def learn(trainer: Trainer, callbacks: Sequence[Callback] = ()) -> list[EpisodeSummary]:
    """Play and train until ``trainer`` has played its ``episodes`` (SB3's ``learn()``): each batch of
    episodes from the trainer's source (:meth:`Trainer.play_episodes`) goes to every callback in order,
    with the batch's FL rounds per second (wall clock). The callbacks' ends run even when training fails.

    Returns:
        The summaries of the episodes played by this call.
    """
    summaries: list[EpisodeSummary] = []
    for callback in callbacks:
        callback.on_training_start(trainer)
    try:
        while trainer.episode < trainer.episodes:
            before, start, start_steps = trainer.episode, time.perf_counter(), trainer.steps
            played = trainer.play_episodes()
            rounds_per_s = (trainer.steps - start_steps) / (time.perf_counter() - start)
            summaries += played
            for callback in callbacks:
                callback.on_episodes_end(trainer, before, played, rounds_per_s)
    finally:
        for callback in callbacks:
            callback.on_training_end(trainer)
    return summaries


def train_vdn(
    env_config: EnvConfig,
    vdn_config: VDNConfig,
    episodes: int,
    seed: int = 0,
    run_dir: str | Path | None = None,
    checkpoint_interval: int = 25,
    progress: bool | str = True,
    resume: bool = False,
    num_envs: int = 1,
    *,
    schedule_episodes: int | None = None,
    eval_interval: int = 0,
    val_seeds: tuple[int, ...] | list[int] = VALIDATION_SEEDS,
    init_from: str | Path | None = None,
    ray_options: RayOptions | None = None,
    overlap_learner: bool = False,
) -> tuple[Trainer, list[EpisodeSummary]]:
    """Train VDN agents until ``episodes`` episodes have been played (:func:`learn` with the callbacks below).

    Writes TensorBoard logs (:mod:`agents.tensorboard_log`) and ``checkpoint.pt`` (atomically, every
    ``checkpoint_interval`` episodes and at the end) under ``run_dir`` when given. With ``resume``,
    training continues from ``run_dir/checkpoint.pt``, possibly to more episodes than first planned (the
    exploration schedule keeps its horizon: :class:`Trainer`), and the TensorBoard events the interrupted
    run wrote after that checkpoint are purged. Every ``eval_interval`` episodes (0: never) the greedy
    policy plays the validation seeds ``val_seeds`` (:mod:`agents.validation`); the best by validation
    team return is kept as ``run_dir/best.pt``. ``num_envs`` federations are played side by side through
    one batched engine. ``progress``: see :func:`agents.progress.progress_mode`. ``init_from``: a
    checkpoint whose Q-network weights start a new run (:meth:`Trainer.initialise_from`). ``ray_options``:
    the episodes are played by Ray actors (:mod:`agents.ray_training`; ``num_envs`` per actor), which are
    ended before this returns; the checkpoints are the local run's, so either kind of run resumes the other.
    ``overlap_learner``: gradient steps in a second thread beside the episodes (:class:`Trainer`).

    Returns:
        The trainer and the summaries of the episodes played by this call.

    Raises:
        ValueError: a negative ``eval_interval``, ``resume`` without ``run_dir`` or with ``init_from``, a
            checkpoint of another run (see :meth:`Trainer.restore`), bad validation seeds, or an ``init_from``
            checkpoint of another layout.
        FileNotFoundError: ``resume`` but no checkpoint in ``run_dir``; no ``init_from`` checkpoint.
    """
    if not isinstance(eval_interval, (int, np.integer)) or eval_interval < 0:
        raise ValueError(f"eval_interval={eval_interval!r} must be an integer >= 0 (0: no validation)")
    if resume and (run_dir is None or init_from is not None):
        raise ValueError("resume needs a run directory and takes the weights from its checkpoint, not init_from")
    val_seeds = check_validation_seeds(val_seeds) if eval_interval else None
    document = load_checkpoint(Path(run_dir) / CHECKPOINT_NAME) if resume else None
    if document is not None and schedule_episodes is None:
        schedule_episodes = _schedule_episodes(document)
    start = load_checkpoint(init_from) if init_from is not None else None
    trainer = Trainer(env_config, vdn_config, episodes, seed, num_envs, schedule_episodes, ray_options,
                      overlap_learner)
    try:
        if document is not None:
            trainer.restore(document)
        elif start is not None:
            trainer.initialise_from(start)
        tensorboard = TensorBoardCallback(run_dir, trainer.steps if resume else None) if run_dir is not None else None
        callbacks = [c for c in (tensorboard, ProgressCallback(progress)) if c is not None]
        if val_seeds is not None:
            validation_env = ClientSelectionEnv(env_config, report_test_accuracy=TRAINING_TEST_REPORTS)
            callbacks.append(ValidationCallback(eval_interval, validation_env, val_seeds, run_dir, tensorboard))
        if run_dir is not None:
            callbacks.append(CheckpointCallback(Path(run_dir) / CHECKPOINT_NAME, checkpoint_interval, tensorboard))
        summaries = learn(trainer, callbacks)
    finally:
        trainer.close()
    return trainer, summaries
