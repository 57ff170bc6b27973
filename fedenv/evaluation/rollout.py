"""Run one policy for one episode and record what happened round by round."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from fedenv.baselines.base import Policy
from fedenv.env import ClientSelectionEnv
from fedenv.simulator import samples_per_epoch


@dataclass
class EpisodeRecord:
    """Per-round record of one episode.

    Attributes:
        policy: policy name; seed: the episode's seed.
        probing: whether the episode's env had the candidates probe before the decision
            (:attr:`fedenv.config.EnvConfig.probing`).
        accuracy: test accuracy after each round, with the initial model's first (length T + 1).
        wall_clock_s: cumulative simulated time after each round, starting at 0 (length T + 1).
        round_latency_s, comm_mb, reward, num_selected: per round (length T).
        checkpoint: the checkpoint the policy was loaded from (a training run), None for fixed policies.
    """

    policy: str
    seed: int
    accuracy: list[float] = field(default_factory=list)
    wall_clock_s: list[float] = field(default_factory=list)
    round_latency_s: list[float] = field(default_factory=list)
    comm_mb: list[float] = field(default_factory=list)
    reward: list[float] = field(default_factory=list)
    num_selected: list[int] = field(default_factory=list)
    probing: bool = True
    checkpoint: str | None = None

    @property
    def final_accuracy(self) -> float:
        return self.accuracy[-1]

    @property
    def total_latency_s(self) -> float:
        return float(sum(self.round_latency_s))

    @property
    def total_comm_mb(self) -> float:
        return float(sum(self.comm_mb))

    @property
    def team_return(self) -> float:
        """Undiscounted sum of the team reward (one agent's return; not summed over agents)."""
        return float(sum(self.reward))

    def rounds_to(self, target: float) -> int | None:
        """First round whose accuracy reaches ``target`` (None if never)."""
        for round_index, accuracy in enumerate(self.accuracy):
            if accuracy >= target:
                return round_index
        return None

    def to_dict(self) -> dict:
        return asdict(self)


def run_episode(env: ClientSelectionEnv, policy: Policy, seed: int, checkpoint: str | None = None) -> EpisodeRecord:
    """Run ``policy`` (loaded from ``checkpoint``, if any) in ``env`` for one episode started with
    ``reset(seed=seed)``; after ``policy.reset(seed)`` the policy is given the clients' device-profile
    estimates (:func:`profile_duration_s`) and the env's probing mode (:meth:`Policy.register_clients`)."""
    observations, infos = env.reset(seed=seed)
    policy.reset(seed)
    policy.register_clients(profile_duration_s(env), env.config.probing)
    first = infos[env.possible_agents[0]]
    record = EpisodeRecord(policy.name, seed, [first["accuracy"]], [first["wall_clock_s"]],
                           probing=env.config.probing, checkpoint=checkpoint)
    while env.agents:
        actions = policy.act(observations, infos)
        observations, rewards, _, _, infos = env.step(actions)
        policy.observe(infos)
        info = infos[env.possible_agents[0]]
        record.accuracy.append(info["accuracy"])
        record.wall_clock_s.append(info["wall_clock_s"])
        record.round_latency_s.append(info["round_latency_s"])
        record.comm_mb.append(info["comm_mb"])
        record.reward.append(rewards[env.possible_agents[0]])
        record.num_selected.append(sum(int(i["selected"]) for i in infos.values()))
    return record


def profile_duration_s(env: ClientSelectionEnv) -> dict[str, float]:
    """``agent -> `` each client's round time estimated from its device profile in the trace, s, for the
    episode ``env`` was last reset to (the episode assigns the trace clients): the download, one local
    epoch of its data (:func:`fedenv.simulator.samples_per_epoch`) and the upload, at its median bandwidth
    and device speed (:meth:`fedenv.traces.TraceReplay.profile_round_s`, as FedScale's client manager
    estimates a client's duration before it has taken part). These are the terms a client's reports
    cover (probing latency: download and first epoch; upload latency), so that an estimate ranks against
    reported latencies like for like (:func:`fedenv.baselines.base.expected_duration_s`)."""
    sim = env.simulator
    samples = samples_per_epoch(sim.clients.data_size, env.config.batch_size, sim.federation.drop_last)
    seconds = sim.replay.profile_round_s(np.asarray(samples))
    return {agent: float(s) for agent, s in zip(env.possible_agents, seconds)}
