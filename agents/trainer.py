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
from agents.policy import GreedyPolicy
from agents.replay import ReplayBuffer
from agents.vdn import QNetwork, VDNConfig, VDNLearner, linear_epsilon
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


class Trainer:
    """VDN training state: envs, learner, replay buffer, counters and generators.

    Args:
        env_config: the environment. vdn_config: hyperparameters.
        episodes: planned episodes (epsilon anneals over ``episodes * num_rounds`` steps).
        seed: run seed (training env seeds, network initialisation, exploration, replay sampling).
        num_envs: federations played in lockstep through one batched engine (:mod:`fedenv.vector`);
            transitions enter the replay buffer, and training steps run, exactly as if the episodes
            were played one after another.
    """

    def __init__(self, env_config: EnvConfig, vdn_config: VDNConfig, episodes: int, seed: int = 0,
                 num_envs: int = 1):
        self.vector = VectorClientSelectionEnv(env_config, num_envs)
        self.env = self.vector.envs[0]
        self.vdn_config = vdn_config
        self.episodes, self.seed = episodes, seed
        self.learner = VDNLearner(len(self.env.feature_names), vdn_config, self.env.device, seed=seed)
        self.buffer = ReplayBuffer(vdn_config.buffer_size, len(self.env.possible_agents),
                                   len(self.env.feature_names), vdn_config.n_step, vdn_config.gamma)
        self.sample_rng = np.random.default_rng([seed, 1])
        self.total_steps = episodes * env_config.num_rounds
        self.steps = 0
        self.episode = 0

    def play_episodes(self) -> list[EpisodeSummary]:
        """Play the next ``min(num_envs, episodes left)`` training episodes side by side, storing
        transitions and training as configured."""
        config = self.vdn_config
        envs = self.vector.envs[: max(1, min(len(self.vector.envs), self.episodes - self.episode))]
        started = drive_together([env.reset_process(training_seed(self.seed, self.episode + i))
                                  for i, env in enumerate(envs)])
        state = [stack_observations(env, observations) for env, (observations, _) in zip(envs, started)]
        totals = [{"return": 0.0, "candidates": 0, "uploads": 0, "losses": [], "epsilon": 0.0} for _ in envs]
        summaries = [None] * len(envs)
        agent = self.env.possible_agents[0]
        while any(env.agents for env in envs):
            actions = [None] * len(envs)
            for i, env in enumerate(envs):
                if env.agents:
                    totals[i]["epsilon"] = linear_epsilon(self.steps, self.total_steps, config)
                    actions[i] = self.learner.act(*state[i], totals[i]["epsilon"])
            outputs = drive_together([
                env.step_process({a: int(x) for a, x in zip(env.possible_agents, actions[i])})
                for i, env in enumerate(envs) if actions[i] is not None
            ])
            for i, output in zip([i for i in range(len(envs)) if actions[i] is not None], outputs):
                observations, rewards, terminations, truncations, infos = output
                obs, mask = state[i]
                next_obs, next_mask = stack_observations(envs[i], observations)
                self.buffer.add(obs, mask, actions[i], rewards[agent], next_obs, next_mask,
                                terminations[agent], truncations[agent])
                totals[i]["return"] += rewards[agent]
                totals[i]["candidates"] += int(mask[:, 1].sum())
                totals[i]["uploads"] += int((actions[i] * mask[:, 1]).sum())
                state[i] = (next_obs, next_mask)
                self.steps += 1
                if self.steps >= config.learning_starts and self.steps % config.train_interval == 0 and len(self.buffer):
                    for _ in range(config.gradient_steps):
                        batch = self.buffer.sample(config.batch_size, self.sample_rng, self.learner.device)
                        totals[i]["losses"].append(self.learner.update(batch))
                if not envs[i].agents:
                    info, t = infos[agent], totals[i]
                    summaries[i] = EpisodeSummary(t["return"], info["accuracy"], info["wall_clock_s"],
                                                  t["uploads"] * envs[i].simulator.model_size_mb,
                                                  t["uploads"] / max(1, t["candidates"]), t["epsilon"], t["losses"],
                                                  self.steps)
        self.episode += len(envs)
        return summaries

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
        """Continue from a checkpoint written by :meth:`checkpoint` for the same configuration.

        Raises:
            ValueError: the checkpoint was written for another configuration or run length.
        """
        training = document.get("training")
        if training is None:
            raise ValueError("the checkpoint holds no training state (written by an older version?)")
        if document["env_config"] != self.env.config.to_dict() or document["vdn_config"] != self.vdn_config.to_dict():
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
        q = QNetwork(self.learner.obs_dim, tuple(self.vdn_config.hidden))
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
