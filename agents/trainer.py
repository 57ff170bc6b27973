"""The VDN training loop: episodes of the FL environment, replay, TD updates, logs and checkpoints.

A run can be resumed exactly: the checkpoint holds the networks, the optimiser, the replay buffer, the
step and episode counters and every random generator of the loop, and every training episode is reset
with its own seed, so a run killed after a checkpoint and resumed ends with the same weights as an
uninterrupted run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from torch.utils.tensorboard import SummaryWriter
from tqdm.auto import tqdm

from agents.checkpoint import load_checkpoint, save_checkpoint
from agents.config import VDNConfig
from agents.nstep import NStepWindow
from agents.policy import GreedyPolicy
from agents.replay import ReplayBuffer
from agents.vdn import QNetwork, VDNLearner, linear_epsilon
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.vector import VectorClientSelectionEnv, drive_together

TRAINING_SEED_BASE = 10_000
CHECKPOINT_NAME = "checkpoint.pt"


def training_seed(seed: int, episode: int) -> int:
    """Env seed of training episode ``episode`` of run ``seed``: ``10000 + 1000000 * seed + episode``.
    Evaluation uses seeds from 1000 up (held out: never a training seed)."""
    return TRAINING_SEED_BASE + 1_000_000 * seed + episode


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


class Trainer:
    """VDN training state: envs, learner, replay buffer, counters and generators.

    Args:
        env_config: the environment. vdn_config: hyperparameters.
        episodes: planned episodes. Epsilon anneals by episode: round ``r`` of episode ``e`` is schedule
            step ``e * num_rounds + r`` of ``episodes * num_rounds`` (:func:`~agents.vdn.linear_epsilon`),
            which equals the environment step count when every episode runs its ``num_rounds`` rounds, and
            still reaches ``exploration_final_eps`` when episodes end early (``target_accuracy``).
        seed: run seed (training env seeds, network initialisation, exploration, replay sampling).
        num_envs: federations played in lockstep through one batched engine (:mod:`fedenv.vector`),
            each with its own n-step window and episode sums. They play the same episode seeds, with the
            same epsilon per round, as one federation would; while nothing is learned and epsilon is 0,
            the replay buffer receives the same transitions (in another order).

    Raises:
        ValueError: ``episodes`` or ``seed`` is not an integer.
    """

    def __init__(self, env_config: EnvConfig, vdn_config: VDNConfig, episodes: int, seed: int = 0,
                 num_envs: int = 1):
        if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (episodes, seed)):
            raise ValueError(f"episodes={episodes!r} and seed={seed!r} must be integers")
        self.vector = VectorClientSelectionEnv(env_config, num_envs)
        self.env = self.vector.envs[0]
        self.vdn_config = vdn_config
        self.episodes, self.seed = int(episodes), int(seed)
        self.learner = VDNLearner(len(self.env.feature_names), vdn_config, self.env.device, seed=self.seed)
        self.buffer = ReplayBuffer(vdn_config.buffer_size, len(self.env.possible_agents), len(self.env.feature_names))
        self.sample_rng = np.random.default_rng([self.seed, 1])
        self.steps = 0
        self.episode = 0

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
        r.epsilon = linear_epsilon(r.episode * num_rounds + r.rounds, self.episodes * num_rounds, self.vdn_config)
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
                                       r.epsilon,
                                       r.td_losses, self.steps)

    def _train(self) -> list[float]:
        """The TD losses of the gradient steps due after environment step ``self.steps`` (none before
        ``learning_starts``; ``gradient_steps`` every ``train_freq`` steps)."""
        config = self.vdn_config
        if self.steps < config.learning_starts or self.steps % config.train_freq or not len(self.buffer):
            return []
        return [self.learner.update(self.buffer.sample(config.batch_size, self.sample_rng, self.learner.device))
                for _ in range(config.gradient_steps)]

    def checkpoint(self) -> dict:
        """Checkpoint payload: what :class:`~agents.policy.GreedyPolicy` needs, plus the training state."""
        return {
            "q_state": self.learner.q.state_dict(),
            "vdn_config": self.vdn_config.to_dict(),
            "env_config": self.env.config.to_dict(),
            "feature_names": list(self.env.feature_names),
            "episodes": self.episode,
            "env_steps": self.steps,
            "training": {
                "planned_episodes": self.episodes,
                "seed": self.seed,
                "learner": self.learner.state_dict(),
                "buffer": self.buffer.state_dict(),
                "sample_rng": self.sample_rng.bit_generator.state,
            },
        }

    def restore(self, document: dict) -> None:
        """Continue from a checkpoint (as :func:`~agents.checkpoint.load_checkpoint` returns it) written by
        :meth:`checkpoint` for the same configuration (VDN field names from before the rename included).

        Raises:
            ValueError: the checkpoint was written for another configuration or run length.
        """
        training = document.get("training")
        if training is None:
            raise ValueError("the checkpoint holds no training state (written by an older version?)")
        if document["env_config"].to_dict() != self.env.config.to_dict() or document["vdn_config"] != self.vdn_config:
            raise ValueError("the checkpoint was written with another env or VDN configuration")
        if (training["planned_episodes"], training["seed"]) != (self.episodes, self.seed):
            raise ValueError(
                f"the checkpoint belongs to a run of {training['planned_episodes']} episodes with seed "
                f"{training['seed']}, not {self.episodes} episodes with seed {self.seed}"
            )
        self.learner.load_state_dict(training["learner"])
        self.buffer.load_state_dict(training["buffer"])
        self.sample_rng.bit_generator.state = training["sample_rng"]
        self.steps, self.episode = int(document["env_steps"]), int(document["episodes"])

    def greedy_policy(self) -> GreedyPolicy:
        """The current greedy policy (a CPU copy of the Q-network)."""
        q = QNetwork(self.learner.obs_dim, self.vdn_config.hidden)
        q.load_state_dict({k: v.cpu() for k, v in self.learner.q.state_dict().items()})
        return GreedyPolicy(q, self.env.feature_names, self.env.config)


def train_vdn(
    env_config: EnvConfig,
    vdn_config: VDNConfig,
    episodes: int,
    seed: int = 0,
    run_dir: str | Path | None = None,
    checkpoint_interval: int = 25,
    progress: bool = True,
    resume: bool = False,
    num_envs: int = 1,
) -> tuple[Trainer, list[EpisodeSummary]]:
    """Train VDN agents until ``episodes`` episodes have been played.

    Writes TensorBoard logs and ``checkpoint.pt`` (atomically, every ``checkpoint_interval`` episodes
    and at the end) under ``run_dir`` when given. The x-axis of every TensorBoard scalar is the number
    of FL rounds played. With ``resume``, training continues from ``run_dir/checkpoint.pt``.
    ``num_envs`` federations are played side by side through one batched engine.

    Returns:
        The trainer and the summaries of the episodes played by this call.

    Raises:
        ValueError: ``resume`` without ``run_dir``, or a checkpoint of another run (see :meth:`Trainer.restore`).
        FileNotFoundError: ``resume`` but no checkpoint in ``run_dir``.
    """
    trainer = Trainer(env_config, vdn_config, episodes, seed, num_envs)
    if resume:
        if run_dir is None:
            raise ValueError("resume needs a run directory")
        trainer.restore(load_checkpoint(Path(run_dir) / CHECKPOINT_NAME))
    writer = SummaryWriter(str(run_dir)) if run_dir is not None else None
    summaries = []
    start, start_steps = time.perf_counter(), trainer.steps
    bar = tqdm(total=episodes, initial=trainer.episode, desc="VDN", unit="episode", disable=not progress)
    while trainer.episode < episodes:
        before = trainer.episode
        for summary in trainer.play_episodes():
            summaries.append(summary)
            if writer is not None:
                _log(writer, summary, (trainer.steps - start_steps) / (time.perf_counter() - start))
            bar.update()
            bar.set_postfix(ret=f"{summary.team_return:.3f}", acc=f"{summary.final_accuracy:.3f}",
                            lat=f"{summary.total_latency_s:.0f}s", eps=f"{summary.epsilon:.2f}")
        crossed = trainer.episode // checkpoint_interval > before // checkpoint_interval
        if run_dir is not None and (crossed or trainer.episode == episodes):
            save_checkpoint(Path(run_dir) / CHECKPOINT_NAME, trainer.checkpoint())
    bar.close()
    if writer is not None:
        writer.close()
    return trainer, summaries


def _log(writer: SummaryWriter, summary: EpisodeSummary, steps_per_second: float) -> None:
    steps = summary.rounds_played
    writer.add_scalar("charts/episodic_return", summary.team_return, steps)
    writer.add_scalar("charts/epsilon", summary.epsilon, steps)
    writer.add_scalar("charts/SPS", steps_per_second, steps)
    if summary.td_losses:
        writer.add_scalar("losses/td_loss", float(np.mean(summary.td_losses)), steps)
    writer.add_scalar("fl/final_accuracy", summary.final_accuracy, steps)
    writer.add_scalar("fl/total_latency_s", summary.total_latency_s, steps)
    writer.add_scalar("fl/total_comm_mb", summary.total_comm_mb, steps)
    writer.add_scalar("fl/participation_rate", summary.participation_rate, steps)
