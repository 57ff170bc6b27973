"""The VDN training loop: episodes of the FL environment, replay, TD updates, logs and checkpoints.

A run can be resumed exactly: the checkpoint holds the networks, the optimiser, the replay buffer, the
step and episode counters and every random generator of the loop, and every training episode is reset
with its own seed, so a run killed after a checkpoint and resumed ends with the same weights as an
uninterrupted run. A run can be extended (resumed to more episodes, as SB3's
``learn(reset_num_timesteps=False)``): the exploration schedule keeps the horizon it started with
(``schedule_episodes``), so extending a 20-episode run to 30 gives the weights of a straight 30-episode
run with ``schedule_episodes=20``.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from agents.checkpoint import load_checkpoint, save_checkpoint
from agents.config import VDNConfig
from agents.episodes import EpisodeSummary, RunningEpisode, stack_observations
from agents.nstep import NStepWindow
from agents.policy import GreedyPolicy
from agents.progress import Progress
from agents.replay import ReplayBuffer
from agents.tensorboard_log import log_episode, open_writer
from agents.validation import VALIDATION_SEEDS, check_validation_seeds, evaluate_and_keep_best
from agents.vdn import QNetwork, VDNLearner, linear_epsilon
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.models.seeding import SeededDraws
from fedenv.vector import VectorClientSelectionEnv, drive_together

TRAINING_SEED_BASE = 10_000
CHECKPOINT_NAME = "checkpoint.pt"


def training_seed(seed: int, episode: int) -> int:
    """Env seed of training episode ``episode`` of run ``seed``: ``10000 + 1000000 * seed + episode``.
    Evaluation uses seeds from 1000 up (held out: never a training seed)."""
    return TRAINING_SEED_BASE + 1_000_000 * seed + episode


class Trainer:
    """VDN training state: envs, learner, replay buffer, counters and generators.

    Args:
        env_config: the environment. vdn_config: hyperparameters.
        episodes: planned episodes (may grow when a run is extended: :meth:`restore`).
        seed: run seed (training env seeds, network initialisation, exploration, replay sampling).
        num_envs: federations played in lockstep through one batched engine (:mod:`fedenv.vector`),
            each with its own n-step window and episode sums. They play the same episode seeds, with the
            same epsilon per round, as one federation would; while nothing is learned and epsilon is 0,
            the replay buffer receives the same transitions (in another order).
        schedule_episodes: the exploration schedule's horizon in episodes (default: ``episodes``). Epsilon
            anneals by episode: round ``r`` of episode ``e`` is schedule step ``e * num_rounds + r`` of
            ``schedule_episodes * num_rounds`` (:func:`~agents.vdn.linear_epsilon`), which equals the
            environment step count when every episode runs its ``num_rounds`` rounds, and still reaches
            ``exploration_final_eps`` when episodes end early (``target_accuracy``).

    Raises:
        ValueError: ``episodes``, ``seed`` or ``schedule_episodes`` is not an integer.
    """

    def __init__(self, env_config: EnvConfig, vdn_config: VDNConfig, episodes: int, seed: int = 0,
                 num_envs: int = 1, schedule_episodes: int | None = None):
        schedule_episodes = episodes if schedule_episodes is None else schedule_episodes
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                   for v in (episodes, seed, schedule_episodes)):
            raise ValueError(f"episodes={episodes!r}, seed={seed!r} and schedule_episodes={schedule_episodes!r} "
                             f"must be integers")
        self.vector = VectorClientSelectionEnv(env_config, num_envs)
        self.env = self.vector.envs[0]
        self.vdn_config = vdn_config
        self.episodes, self.seed, self.schedule_episodes = int(episodes), int(seed), int(schedule_episodes)
        self.learner = VDNLearner(len(self.env.feature_names), vdn_config, self.env.device, seed=self.seed)
        self.buffer = ReplayBuffer(vdn_config.buffer_size, len(self.env.possible_agents), len(self.env.feature_names))
        self.sample_rng = np.random.default_rng([self.seed, 1])
        self.steps = 0
        self.episode = 0
        self.best_eval_return: float | None = None  # best validation team return so far (agents.validation)

    def play_episodes(self) -> list[EpisodeSummary]:
        """Play the next ``min(num_envs, episodes left)`` training episodes side by side, storing
        transitions and training as configured. Returns their summaries in episode order."""
        config = self.vdn_config
        envs = self.vector.envs[: max(1, min(len(self.vector.envs), self.episodes - self.episode))]
        started = drive_together([env.reset_process(training_seed(self.seed, self.episode + i))
                                  for i, env in enumerate(envs)])
        running = [RunningEpisode(env, self.episode + i, NStepWindow(config.n_step, config.gamma),
                                  *stack_observations(env, observations))
                   for i, (env, (observations, _)) in enumerate(zip(envs, started))]
        while active := [r for r in running if r.env.agents]:
            actions = [self._act(r) for r in active]
            outputs = drive_together([r.env.step_process({a: int(x) for a, x in zip(r.env.possible_agents, action)})
                                      for r, action in zip(active, actions)])
            for r, action, output in zip(active, actions, outputs):
                self._record(r, action, output)
        self.episode += len(envs)
        return [r.summary for r in running]

    def _act(self, r: RunningEpisode) -> np.ndarray:
        num_rounds = self.env.config.num_rounds
        r.epsilon = linear_epsilon(r.episode * num_rounds + r.rounds, self.schedule_episodes * num_rounds,
                                   self.vdn_config)
        return self.learner.act(r.obs, r.mask, r.epsilon)

    def _record(self, r: RunningEpisode, action: np.ndarray, output: tuple) -> None:
        """Store one step of ``r``'s episode, train if due, and summarise the episode when it ends."""
        observations, rewards, terminations, truncations, infos = output
        agent = r.env.possible_agents[0]
        next_obs, next_mask = stack_observations(r.env, observations)
        for transition in r.window.push(r.obs, r.mask, action, rewards[agent], next_obs, next_mask,
                                        terminations[agent], truncations[agent]):
            self.buffer.add(transition)
        r.team_return += rewards[agent]
        r.candidates += int(r.mask[:, 1].sum())
        r.uploads += int((action * r.mask[:, 1]).sum())
        r.obs, r.mask = next_obs, next_mask
        r.rounds += 1
        self.steps += 1
        r.td_losses += self._train()
        if not r.env.agents:
            info = infos[agent]
            r.summary = EpisodeSummary(r.team_return, info["accuracy"], info["wall_clock_s"],
                                       r.uploads * r.env.simulator.model_size_mb, r.uploads / max(1, r.candidates),
                                       r.epsilon, r.td_losses, self.steps)

    def _train(self) -> list[float]:
        """The TD losses of the gradient steps due after environment step ``self.steps`` (none before
        ``learning_starts``; ``gradient_steps`` every ``train_freq`` steps)."""
        config = self.vdn_config
        if self.steps < config.learning_starts or self.steps % config.train_freq or not len(self.buffer):
            return []
        return [self.learner.update(self.buffer.sample(config.batch_size, self.sample_rng, self.learner.device))
                for _ in range(config.gradient_steps)]

    def policy_payload(self) -> dict:
        """What :class:`~agents.policy.GreedyPolicy` needs: weights, configs, observation layout, counters."""
        return {
            "q_state": self.learner.q.state_dict(),
            "vdn_config": self.vdn_config.to_dict(),
            "env_config": self.env.config.to_dict(),
            "feature_names": list(self.env.feature_names),
            "episodes": self.episode,
            "env_steps": self.steps,
        }

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
            },
        }

    def restore(self, document: dict) -> None:
        """Continue from a checkpoint (as :func:`~agents.checkpoint.load_checkpoint` returns it) written by
        :meth:`checkpoint` for the same configuration (VDN field names from before the rename included).
        The run may be extended: ``episodes`` may exceed the checkpoint's planned episodes.

        Raises:
            ValueError: the checkpoint was written for another configuration, seed or exploration schedule,
                or has played more than ``episodes`` episodes.
        """
        training = document.get("training")
        if training is None:
            raise ValueError("the checkpoint holds no training state (written by an older version?)")
        if document["env_config"].to_dict() != self.env.config.to_dict() or document["vdn_config"] != self.vdn_config:
            raise ValueError("the checkpoint was written with another env or VDN configuration")
        if (schedule_episodes(document), training["seed"]) != (self.schedule_episodes, self.seed):
            raise ValueError(
                f"the checkpoint belongs to a run with seed {training['seed']} whose epsilon anneals over "
                f"{schedule_episodes(document)} episodes, not seed {self.seed} over {self.schedule_episodes}"
            )
        if document["episodes"] > self.episodes:
            raise ValueError(f"the checkpoint has played {document['episodes']} episodes, more than the "
                             f"{self.episodes} asked for (a run can be extended, not shortened)")
        self.learner.load_state_dict(training["learner"])
        self.buffer.load_state_dict(training["buffer"])
        self.sample_rng.bit_generator.state = training["sample_rng"]
        self.steps, self.episode = int(document["env_steps"]), int(document["episodes"])
        self.best_eval_return = training.get("best_eval_return")

    def initialise_from(self, document: dict) -> None:
        """Start from another run's Q-network (fine-tuning): online and target networks take its weights;
        optimiser, buffer, counters and generators stay fresh.

        Raises:
            ValueError: the checkpoint's observation layout or hidden widths differ from this run's (names
                the features or widths that differ).
        """
        theirs, ours = list(document["feature_names"]), list(self.env.feature_names)
        if theirs != ours:
            raise ValueError(f"the checkpoint's observation layout differs from this env's: only in the checkpoint "
                             f"{[f for f in theirs if f not in ours]}, only in the env "
                             f"{[f for f in ours if f not in theirs]}; checkpoint order {theirs}, env order {ours}")
        if tuple(document["vdn_config"].hidden) != tuple(self.vdn_config.hidden):
            raise ValueError(f"the checkpoint's Q-network has hidden widths {tuple(document['vdn_config'].hidden)}, "
                             f"this run {tuple(self.vdn_config.hidden)} (set --vdn-hidden to match)")
        self.learner.q.load_state_dict(document["q_state"])
        self.learner.target.load_state_dict(document["q_state"])

    def greedy_policy(self) -> GreedyPolicy:
        """The current greedy policy (a CPU copy of the Q-network; building it draws from no global generator)."""
        with SeededDraws(0):  # its initial weights are overwritten below
            q = QNetwork(self.learner.obs_dim, self.vdn_config.hidden)
        q.load_state_dict({k: v.cpu() for k, v in self.learner.q.state_dict().items()})
        return GreedyPolicy(q, self.env.feature_names, self.env.config)


def schedule_episodes(document: dict) -> int:
    """The exploration schedule's horizon (episodes) of the run that wrote checkpoint ``document``
    (checkpoints written before runs could be extended: their planned episodes)."""
    training = document["training"]
    return int(training.get("schedule_episodes", training["planned_episodes"]))


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
) -> tuple[Trainer, list[EpisodeSummary]]:
    """Train VDN agents until ``episodes`` episodes have been played.

    Writes TensorBoard logs (:mod:`agents.tensorboard_log`) and ``checkpoint.pt`` (atomically, every
    ``checkpoint_interval`` episodes and at the end) under ``run_dir`` when given. With ``resume``,
    training continues from ``run_dir/checkpoint.pt``, possibly to more episodes than first planned (the
    exploration schedule keeps its horizon: :class:`Trainer`), and the TensorBoard events the interrupted
    run wrote after that checkpoint are purged. Every ``eval_interval`` episodes (0: never) the greedy
    policy plays the validation seeds ``val_seeds`` (:mod:`agents.validation`); the best by validation
    team return is kept as ``run_dir/best.pt``. ``num_envs`` federations are played side by side through
    one batched engine. ``progress``: see :func:`agents.progress.progress_mode`. ``init_from``: a
    checkpoint whose Q-network weights start a new run (:meth:`Trainer.initialise_from`).

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
    trainer = _start(env_config, vdn_config, episodes, seed, num_envs, run_dir, resume, schedule_episodes, init_from)
    validation = (ClientSelectionEnv(env_config), check_validation_seeds(val_seeds)) if eval_interval else None
    writer = open_writer(run_dir, trainer.steps if resume else None) if run_dir is not None else None
    report = Progress(episodes, trainer.episode, progress)
    summaries = []
    try:
        while trainer.episode < episodes:
            before, start, start_steps = trainer.episode, time.perf_counter(), trainer.steps
            played = trainer.play_episodes()
            rounds_per_s = (trainer.steps - start_steps) / (time.perf_counter() - start)
            for count, summary in enumerate(played, start=before + 1):
                summaries.append(summary)
                if writer is not None:
                    log_episode(writer, summary, rounds_per_s)
                report.update(count, summary, rounds_per_s)
            if validation is not None and _crossed(before, trainer.episode, eval_interval):
                evaluate_and_keep_best(trainer, *validation, writer, run_dir)
            if run_dir is not None and (_crossed(before, trainer.episode, checkpoint_interval)
                                        or trainer.episode == episodes):
                writer.flush()  # every event up to the checkpoint is on disk before it: a resume misses none
                save_checkpoint(Path(run_dir) / CHECKPOINT_NAME, trainer.checkpoint())
    finally:
        report.close()
        if writer is not None:
            writer.close()
    return trainer, summaries


def _start(env_config, vdn_config, episodes, seed, num_envs, run_dir, resume, schedule, init_from) -> Trainer:
    """A new trainer, restored from ``run_dir``'s checkpoint or initialised from ``init_from`` (:func:`train_vdn`)."""
    if not resume:
        trainer = Trainer(env_config, vdn_config, episodes, seed, num_envs, schedule)
        if init_from is not None:
            trainer.initialise_from(load_checkpoint(init_from))
        return trainer
    if run_dir is None or init_from is not None:
        raise ValueError("resume needs a run directory and takes the weights from its checkpoint, not init_from")
    document = load_checkpoint(Path(run_dir) / CHECKPOINT_NAME)
    trainer = Trainer(env_config, vdn_config, episodes, seed, num_envs,
                      schedule_episodes(document) if schedule is None else schedule)
    trainer.restore(document)
    return trainer


def _crossed(before: int, after: int, interval: int) -> bool:
    """Whether a multiple of ``interval`` lies in ``(before, after]``."""
    return after // interval > before // interval
