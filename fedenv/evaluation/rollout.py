"""Run one policy for one episode and record what happened round by round."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field

from fedenv.baselines.base import Policy
from fedenv.config import EVALUATION_SPLITS
from fedenv.env import ClientSelectionEnv, policy_infos


@dataclass
class EpisodeRecord:
    """Per-round record of one episode.

    Attributes:
        policy: policy name; seed: the episode's seed.
        probing: whether the episode's env had the candidates probe before the decision
            (:attr:`fedenv.config.EnvConfig.probing`).
        test_accuracy: test accuracy after each round, with the initial model's first (length T + 1): what
            the reports score (final accuracy, rounds to a target).
        validation_accuracy: accuracy on the server's validation split, likewise (NaN without one): what
            the reward used by default (``EnvConfig.reward_accuracy_split``).
        wall_clock_s: cumulative simulated time after each round, starting at 0 (length T + 1).
        round_latency_s, upload_mb, download_mb, reward, num_selected: per round (length T); ``upload_mb``
            and ``download_mb`` are the round's total upload and download, MB.
        checkpoint: the checkpoint the policy was loaded from (a training run), None for fixed policies.
    """

    policy: str
    seed: int
    test_accuracy: list[float] = field(default_factory=list)
    validation_accuracy: list[float] = field(default_factory=list)
    wall_clock_s: list[float] = field(default_factory=list)
    round_latency_s: list[float] = field(default_factory=list)
    upload_mb: list[float] = field(default_factory=list)
    download_mb: list[float] = field(default_factory=list)
    reward: list[float] = field(default_factory=list)
    num_selected: list[int] = field(default_factory=list)
    probing: bool = True
    checkpoint: str | None = None

    @property
    def final_accuracy(self) -> float:
        """Test accuracy after the last round."""
        return self.test_accuracy[-1]

    @property
    def total_latency_s(self) -> float:
        return float(sum(self.round_latency_s))

    @property
    def total_upload_mb(self) -> float:
        return float(sum(self.upload_mb))

    @property
    def total_download_mb(self) -> float:
        return float(sum(self.download_mb))

    @property
    def total_traffic_mb(self) -> float:
        """Upload and download together, MB."""
        return self.total_upload_mb + self.total_download_mb

    @property
    def team_return(self) -> float:
        """Undiscounted sum of the team reward (one agent's return; not summed over agents)."""
        return float(sum(self.reward))

    def accuracy_on(self, split: str) -> list[float]:
        """:attr:`validation_accuracy` or :attr:`test_accuracy` by ``split`` (a name of
        :data:`~fedenv.config.EVALUATION_SPLITS`).

        Raises:
            ValueError: unknown ``split``.
        """
        if split not in EVALUATION_SPLITS:
            raise ValueError(f"split={split!r} is not known; allowed: {', '.join(EVALUATION_SPLITS)}")
        return self.validation_accuracy if split == "validation" else self.test_accuracy

    def rounds_to(self, target: float) -> int | None:
        """First round whose test accuracy reaches ``target`` (None if never)."""
        for round_index, accuracy in enumerate(self.test_accuracy):
            if accuracy >= target:
                return round_index
        return None

    def to_dict(self) -> dict:
        return asdict(self)


def policy_steps(env: ClientSelectionEnv, policy: Policy, seed: int,
                 shown: Callable[[dict], dict] = policy_infos) -> Iterator[tuple[dict | None, dict, dict | None, dict]]:
    """Drive ``policy`` through one episode of ``env`` started with ``reset(seed=seed)``, as every runner of a
    fixed or learned policy does: after ``policy.reset(seed)`` the policy is given the clients' device-profile
    estimates (:func:`profile_duration_s`) and the env's probing mode (:meth:`Policy.register_clients`); each
    round an oracle (``policy.looks_ahead``) is given the round's :func:`candidate_round_s`, the policy acts on
    the observations and ``shown(infos)`` (by default :func:`~fedenv.env.policy_infos`, the infos without the
    test accuracy), the env steps and the policy observes ``shown`` of the new infos.

    Yields:
        ``(actions, observations, rewards, infos)``, keyed by agent: first the reset's, with ``actions`` and
        ``rewards`` None, then each round's, ``actions`` those played on the previous observations. ``infos``
        are the env's, in full.
    """
    observations, infos = env.reset(seed=seed)
    policy.reset(seed)
    policy.register_clients(profile_duration_s(env), env.config.probing)
    yield None, observations, None, infos
    while env.agents:
        if policy.looks_ahead:
            policy.look_ahead(candidate_round_s(env))
        actions = policy.act(observations, shown(infos))
        observations, rewards, _, _, infos = env.step(actions)
        policy.observe(shown(infos))
        yield actions, observations, rewards, infos


def run_episode(env: ClientSelectionEnv, policy: Policy, seed: int, checkpoint: str | None = None) -> EpisodeRecord:
    """Run ``policy`` (loaded from ``checkpoint``, if any) in ``env`` for one episode started with
    ``reset(seed=seed)``, driven by :func:`policy_steps` (the policy is shown the infos without the test
    accuracy, which only the record keeps)."""
    steps = policy_steps(env, policy, seed)
    _, _, _, infos = next(steps)
    first = infos[env.possible_agents[0]]
    record = EpisodeRecord(policy.name, seed, [first["test_accuracy"]], [first["validation_accuracy"]],
                           [first["wall_clock_s"]], probing=env.config.probing, checkpoint=checkpoint)
    for _, _, rewards, infos in steps:
        info = infos[env.possible_agents[0]]
        record.test_accuracy.append(info["test_accuracy"])
        record.validation_accuracy.append(info["validation_accuracy"])
        record.wall_clock_s.append(info["wall_clock_s"])
        record.round_latency_s.append(info["round_latency_s"])
        record.upload_mb.append(info["upload_mb"])
        record.download_mb.append(info["download_mb"])
        record.reward.append(rewards[env.possible_agents[0]])
        record.num_selected.append(sum(int(i["selected"]) for i in infos.values()))
    return record


def profile_duration_s(env: ClientSelectionEnv) -> dict[str, float]:
    """``{agent: seconds}``, each client's round time estimated from its device profile in the trace, for the
    episode ``env`` was last reset to (:meth:`fedenv.simulator.FederationSimulator.profile_round_s`: the
    download, one local epoch of its data and the upload, as FedScale's client manager estimates a client's
    duration before it has taken part), so that an estimate ranks against reported latencies like for like
    (:func:`fedenv.baselines.base.expected_duration_s`)."""
    return {agent: float(s) for agent, s in zip(env.possible_agents, env.simulator.profile_round_s())}


def candidate_round_s(env: ClientSelectionEnv) -> dict[str, float]:
    """``{candidate: seconds}``, the time each would add to the coming round of ``env`` if selected, read ahead from the
    trace (:meth:`fedenv.simulator.FederationSimulator.candidate_round_s`): what an oracle policy
    (:attr:`fedenv.baselines.Policy.looks_ahead`) is given, never an observation."""
    simulator = env.simulator
    return {env.possible_agents[int(i)]: float(s) for i, s in zip(simulator.candidates, simulator.candidate_round_s())}
