"""The VDN training loop: episodes of the FL environment, replay, TD updates, logs and checkpoints."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from torch.utils.tensorboard import SummaryWriter
from tqdm.auto import tqdm

from agents.checkpoint import save_checkpoint
from agents.policy import GreedyPolicy
from agents.replay import ReplayBuffer
from agents.vdn import VDNConfig, VDNLearner, linear_epsilon
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv

TRAINING_SEED_BASE = 10_000


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
class TrainingLog:
    """Per-episode summaries of a run (team return: the shared reward summed over rounds, not over agents)."""

    team_return: list[float] = field(default_factory=list)
    final_accuracy: list[float] = field(default_factory=list)
    total_latency_s: list[float] = field(default_factory=list)
    total_comm_mb: list[float] = field(default_factory=list)


def train_vdn(
    env_config: EnvConfig,
    vdn_config: VDNConfig,
    episodes: int,
    seed: int = 0,
    run_dir: str | Path | None = None,
    checkpoint_interval: int = 25,
    progress: bool = True,
) -> tuple[VDNLearner, TrainingLog]:
    """Train VDN agents for ``episodes`` episodes.

    Writes TensorBoard logs and ``checkpoint.pt`` (atomically, every ``checkpoint_interval`` episodes
    and at the end) under ``run_dir`` when given. The x-axis of every TensorBoard scalar is the number
    of FL rounds played.

    Returns:
        The learner and the per-episode log.
    """
    env = ClientSelectionEnv(env_config)
    learner = VDNLearner(len(env.feature_names), vdn_config, env.device, seed=seed)
    buffer = ReplayBuffer(vdn_config.buffer_size, len(env.possible_agents), len(env.feature_names),
                          vdn_config.n_step, vdn_config.gamma)
    sample_rng = np.random.default_rng([seed, 1])
    total_steps = episodes * env_config.num_rounds
    writer = SummaryWriter(str(run_dir)) if run_dir is not None else None
    log = TrainingLog()
    steps = 0
    start = time.perf_counter()
    bar = tqdm(range(episodes), desc="VDN", unit="episode", disable=not progress)
    for episode in bar:
        observations, _ = env.reset(seed=training_seed(seed, episode))
        obs, mask = stack_observations(env, observations)
        episode_return, losses, candidates, uploads = 0.0, [], 0, 0
        while env.agents:
            epsilon = linear_epsilon(steps, total_steps, vdn_config)
            actions = learner.act(obs, mask, epsilon)
            observations, rewards, terminations, truncations, infos = env.step(
                {agent: int(a) for agent, a in zip(env.possible_agents, actions)}
            )
            next_obs, next_mask = stack_observations(env, observations)
            agent = env.possible_agents[0]
            reward = rewards[agent]
            buffer.add(obs, mask, actions, reward, next_obs, next_mask, terminations[agent], truncations[agent])
            candidates += int(mask[:, 1].sum())
            uploads += int((actions * mask[:, 1]).sum())
            obs, mask = next_obs, next_mask
            episode_return += reward
            steps += 1
            if steps >= vdn_config.learning_starts and steps % vdn_config.train_interval == 0:
                for _ in range(vdn_config.gradient_steps):
                    losses.append(learner.update(buffer.sample(vdn_config.batch_size, sample_rng, learner.device)))
        info = infos[env.possible_agents[0]]
        log.team_return.append(episode_return)
        log.final_accuracy.append(info["accuracy"])
        log.total_latency_s.append(info["wall_clock_s"])
        log.total_comm_mb.append(uploads * env.upload_mb)
        if writer is not None:
            writer.add_scalar("charts/episodic_return", episode_return, steps)
            writer.add_scalar("charts/epsilon", epsilon, steps)
            writer.add_scalar("charts/SPS", steps / (time.perf_counter() - start), steps)
            if losses:
                writer.add_scalar("losses/td_loss", float(np.mean(losses)), steps)
            writer.add_scalar("fl/final_accuracy", info["accuracy"], steps)
            writer.add_scalar("fl/total_latency_s", info["wall_clock_s"], steps)
            writer.add_scalar("fl/total_comm_mb", log.total_comm_mb[-1], steps)
            writer.add_scalar("fl/participation_rate", uploads / max(1, candidates), steps)
        bar.set_postfix(ret=f"{episode_return:.3f}", acc=f"{info['accuracy']:.3f}",
                        lat=f"{info['wall_clock_s']:.0f}s", eps=f"{epsilon:.2f}")
        if run_dir is not None and ((episode + 1) % checkpoint_interval == 0 or episode + 1 == episodes):
            save_checkpoint(Path(run_dir) / "checkpoint.pt", checkpoint_payload(learner, env, episode + 1, steps))
    if writer is not None:
        writer.close()
    return learner, log


def checkpoint_payload(learner: VDNLearner, env: ClientSelectionEnv, episodes: int, steps: int) -> dict:
    """What a checkpoint holds: weights, configs, observation layout and progress counters."""
    return {
        "q_state": learner.q.state_dict(),
        "vdn_config": learner.config.to_dict(),
        "env_config": env.config.to_dict(),
        "feature_names": list(env.feature_names),
        "episodes": episodes,
        "env_steps": steps,
    }


def greedy_policy(learner: VDNLearner, env_config: EnvConfig, feature_names: list[str]) -> GreedyPolicy:
    """The learner's current greedy policy (a CPU copy of the Q-network)."""
    q = type(learner.q)(learner.obs_dim, tuple(learner.config.hidden))
    q.load_state_dict({k: v.cpu() for k, v in learner.q.state_dict().items()})
    return GreedyPolicy(q, feature_names, env_config)
