"""Client selection in federated learning as a PettingZoo parallel environment (docs/design.md sections 3-4).

One agent per client. Every round the server draws candidates, each candidate trains one probing epoch
from the global model, and each agent chooses 0 (stop after probing) or 1 (finish the remaining local
epochs and upload). With ``probing=False`` (pre-selection baselines) nobody trains before the decision:
the agents see what each candidate reported when it last took part (zeros before), and the selected
clients download, train all local epochs and upload (:mod:`fedenv.simulator`). The server aggregates
the uploads, scores the global model on its validation split (what the reward and the observation use,
by default; ``EnvConfig.reward_accuracy_split``) and on the test split (reported in the infos only), and
every agent receives the same team reward (:mod:`fedenv.reward`). After ``num_rounds`` rounds the
episode ends by truncation (a time limit); reaching the optional ``target_accuracy`` ends it by
termination. After the last round no next round exists, so the final observations mark no client as a
candidate.

FedMarl: Zhang, Lin and Zhang, "A multi-agent reinforcement learning approach for efficient client
selection in federated learning", AAAI 2022 (arXiv 2201.02932).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pettingzoo
from gymnasium import spaces

from fedenv.config import EnvConfig
from fedenv.engine import EnvProcess
from fedenv.latency import expected_round_s
from fedenv.names import check_known
from fedenv.observation import build_observations, feature_bounds, feature_names, layout_options
from fedenv.reward import charged_traffic_mb, team_reward
from fedenv.round_records import RoundOutcome
from fedenv.simulator import FederationSimulator, run_alone

INFO_KEYS = (
    "round", "validation_accuracy", "test_accuracy", "round_latency_s", "upload_mb", "download_mb", "traffic_mb",
    "candidate", "selected", "dropped", "excluded", "kept",
    "aggregation_weight", "online", "idle", "probe_loss", "probe_loss_sq", "probe_latency_s", "upload_latency_s",
    "data_size", "wall_clock_s",
)

TEST_ACCURACY_REPORTS = ("every_round", "episode_end")
"""When the infos carry ``test_accuracy``: after reset and every round, or only on an episode's last step
(NaN before it; what training needs, one test-split evaluation per episode instead of ``num_rounds + 1``)."""

REPORT_ONLY_INFO_KEYS = ("test_accuracy",)
"""Info keys for reports only: :func:`policy_infos` leaves them out of what a policy is shown."""


def policy_infos(infos: dict) -> dict:
    """``infos`` (``agent -> info``) without :data:`REPORT_ONLY_INFO_KEYS`: what a policy may read (the test
    split's accuracy is for reports, docs/design.md section 3)."""
    return {agent: {k: v for k, v in info.items() if k not in REPORT_ONLY_INFO_KEYS} for agent, info in infos.items()}


class ClientSelectionEnv(pettingzoo.ParallelEnv):
    """PettingZoo ``ParallelEnv`` over a trace-driven FL federation (:class:`~fedenv.simulator.FederationSimulator`).

    Args:
        config: an :class:`~fedenv.config.EnvConfig` (defaults if omitted).
        report_test_accuracy: one of :data:`TEST_ACCURACY_REPORTS`: ``"every_round"`` (default) or
            ``"episode_end"`` (``test_accuracy`` is NaN in the infos before the episode's last step, and
            the test split is scored once per episode unless the reward uses it). Nothing else changes:
            the test split feeds neither reward nor observation by default.
        **overrides: fields replacing those of ``config``.

    Spaces:
        observation ``Dict(observation=Box(low, high, (2h+7,), float32), action_mask=Box(0, 1, (2,), int8))``
        (layout in :mod:`fedenv.observation`); action ``Discrete(2)``. Non-candidates have mask
        ``[1, 0]``; their action is ignored and counts as 0.

    Infos (per agent, the same keys at reset and every step): ``round`` (rounds completed),
    ``validation_accuracy`` (accuracy of the global model on the server's validation split, fraction; NaN
    with ``val_fraction=0``) and ``test_accuracy`` (on the test split: for reporting; a policy or learner
    that reads it sees test labels, so :func:`~fedenv.evaluation.run_episode` shows policies
    :func:`policy_infos`, the infos without it), ``round_latency_s``, ``upload_mb``, ``download_mb`` and
    ``traffic_mb`` (of the round just played: its latency, the MB the clients uploaded in total, the MB of
    the global model sent to clients, every candidate with probing and the selected clients without,
    and the two summed; 0 at reset), ``candidate`` (a candidate of the
    coming round), ``online`` (online when the coming round started), ``selected`` (chose to upload in
    the round just played), ``dropped`` (selected, but missed ``round_deadline_s``: a straggler, not
    aggregated), ``excluded`` (uploaded, but left out of aggregation because its model was not finite),
    ``kept`` and ``aggregation_weight`` (the upload was aggregated, with this weight: FedCA reports its
    ``S_opt`` here), ``idle`` (nobody was online: the round only advanced the clock to the next time a
    client comes online), ``probe_loss`` and ``probe_loss_sq`` (mean and mean square of the per-sample
    training losses of the client's latest probing epoch, nats; without probing, of the first local
    epoch of its latest completed round), ``probe_latency_s`` and
    ``upload_latency_s`` (latest observed), ``data_size`` (samples) and ``wall_clock_s`` (simulated time
    so far).

    Attributes:
        simulator: the :class:`~fedenv.simulator.FederationSimulator` playing the rounds (its
            ``federation``, ``replay`` and ``clients`` state are public).
        feature_names: names of the observation features, in order.

    Raises:
        ValueError: a configuration value is invalid (the message names the field), or an unknown
            ``report_test_accuracy``.
    """

    metadata = {"name": "fedenv_client_selection_v1", "render_modes": [], "is_parallelizable": True}

    def __init__(self, config: EnvConfig | None = None, *, report_test_accuracy: str = "every_round", **overrides):
        check_known(report_test_accuracy, TEST_ACCURACY_REPORTS, "report_test_accuracy")
        self.report_test_accuracy = report_test_accuracy
        self.config = dataclasses.replace(config or EnvConfig(), **overrides).validate()
        cfg = self.config
        self.render_mode = None
        self.simulator = FederationSimulator(cfg)
        self.device = self.simulator.device
        self.reward_weights = (cfg.accuracy_weight, cfg.latency_weight, cfg.comm_weight)
        self.possible_agents = [f"client_{i}" for i in range(cfg.num_clients)]
        self.agents: list[str] = []
        self.feature_names = feature_names(**layout_options(cfg))
        low, high = feature_bounds(**layout_options(cfg))
        self._observation_space = spaces.Dict({
            "observation": spaces.Box(low, high, dtype=np.float32),
            "action_mask": spaces.Box(0, 1, (2,), dtype=np.int8),
        })
        self._action_spaces = {agent: spaces.Discrete(2) for agent in self.possible_agents}
        self.state_space = spaces.Box(np.tile(low, cfg.num_clients), np.tile(high, cfg.num_clients), dtype=np.float32)
        self._root_rng = np.random.default_rng()
        self._done = True
        self._observations = None
        self._last: RoundOutcome | None = None
        self._profile_round_s: np.ndarray | None = None

    def observation_space(self, agent: str) -> spaces.Dict:
        """The same ``Dict`` space object for every agent and every call."""
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Discrete:
        """``Discrete(2)``: 0 = stop after probing, 1 = finish local training and upload."""
        return self._action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start an episode. ``seed`` fixes the partition, model initialisation, trace assignment and
        offset, candidate draws and minibatch order; without it the next seed comes from the last one.

        Returns:
            ``(observations, infos)`` dicts keyed by agent.
        """
        return run_alone(self.reset_process(seed))

    def reset_process(self, seed: int | None = None) -> EnvProcess[tuple[dict, dict]]:
        """:meth:`reset` as a process that yields its local training as :class:`~fedenv.engine.TrainRequest` objects and
        receives their results (so that :mod:`fedenv.vector` can batch several federations)."""
        if seed is not None:
            self._root_rng = np.random.default_rng(seed)
            for i, agent in enumerate(self.possible_agents):
                self._action_spaces[agent].seed(seed + i)
        episode_seed = int(seed) if seed is not None else int(self._root_rng.integers(2**62))
        self._last = None
        yield from self.simulator.reset_process(episode_seed)
        self._profile_round_s = self.simulator.profile_round_s() if self.config.observation_estimates else None
        self.agents = list(self.possible_agents)
        self._done = False
        self._observations = self._observe()
        return self._observations, self._infos()

    def step(self, actions: dict):
        """Run the rest of the round for the selected candidates, aggregate, evaluate and probe the next
        round's candidates.

        Args:
            actions: ``agent -> 0 | 1`` (int, numpy integer or 0-d array); a missing agent means 0.

        Returns:
            ``(observations, rewards, terminations, truncations, infos)``, each keyed by every agent.

        Raises:
            RuntimeError: the episode is over (call ``reset()``).
            ValueError: an action outside {0, 1} or for an unknown agent (names the agent).
        """
        return run_alone(self.step_process(actions))

    def step_process(self, actions: dict) -> EnvProcess[tuple]:
        """:meth:`step` as a process yielding :class:`~fedenv.engine.TrainRequest` objects (see :meth:`reset_process`).
        Invalid actions raise before the first yield."""
        if self._done:
            raise RuntimeError("the episode is over (or was never started): call reset() before step()")
        return self._play(self._parse_actions(actions))

    def _play(self, chosen: np.ndarray) -> EnvProcess[tuple]:
        cfg, sim = self.config, self.simulator
        outcome = yield from sim.play_round_process(chosen)
        self._last = outcome
        traffic_mb = charged_traffic_mb(outcome.upload_mb, outcome.download_mb, cfg.reward_traffic)
        reward = team_reward(outcome.reward_accuracy, outcome.previous_reward_accuracy, outcome.latency_s, traffic_mb,
                             self.reward_weights, cfg.utility)
        terminated = cfg.target_accuracy is not None and outcome.reward_accuracy >= cfg.target_accuracy
        truncated = not terminated and sim.round >= cfg.num_rounds
        self._done = terminated or truncated
        if self._done:
            sim.end_episode()
        else:
            yield from sim.begin_round_process()
        self._observations = self._observe()
        infos = self._infos()
        agents = self.agents
        if self._done:
            self.agents = []
        return (
            self._observations,
            {a: float(reward) for a in agents},
            {a: bool(terminated) for a in agents},
            {a: bool(truncated) for a in agents},
            infos,
        )

    def state(self) -> np.ndarray:
        """All agents' observation vectors concatenated, float32 ``(K * (2h + 7),)`` (for centralised critics)."""
        if self._observations is None:
            raise RuntimeError("call reset() before state()")
        return np.concatenate([self._observations[a]["observation"] for a in self.possible_agents])

    def close(self) -> None:
        """Nothing to release."""

    def _parse_actions(self, actions: dict) -> np.ndarray:
        if not isinstance(actions, dict):
            raise ValueError(f"actions must be a dict agent -> 0 or 1, got {type(actions).__name__}")
        chosen = np.zeros(self.config.num_clients, dtype=bool)
        index = {agent: i for i, agent in enumerate(self.possible_agents)}
        for agent, value in actions.items():
            if agent not in index:
                raise ValueError(f"action for unknown agent {agent!r}; agents are client_0..client_{len(index) - 1}")
            chosen[index[agent]] = _action_value(agent, value) == 1
        return chosen

    def _observe(self) -> dict:
        cfg, sim = self.config, self.simulator
        is_candidate = np.zeros(cfg.num_clients, dtype=bool)
        is_candidate[sim.candidates] = True
        vectors = build_observations(
            probing_loss=sim.clients.probe_loss,
            probe_latency_hist_s=sim.clients.probe_latency_hist_s,
            upload_latency_hist_s=sim.clients.upload_latency_hist_s,
            model_size_mb=sim.model_size_mb,
            data_size=sim.clients.data_size,
            rounds_since_upload=sim.round - sim.clients.last_upload_round,
            round_index=sim.round,
            num_rounds=cfg.num_rounds,
            is_candidate=is_candidate,
            global_accuracy=sim.reward_accuracy,
            num_classes=sim.dataset.num_classes,
            reference_latency_s=sim.reference_latency_s,
            context=cfg.observation_context,
            normalised=cfg.observation_normalised,
            expected_round_s=(expected_round_s(sim.clients.probe_latency_hist_s[:, 0],
                                               sim.clients.upload_latency_hist_s[:, 0], self._profile_round_s)
                              if cfg.observation_estimates else None),
        )
        return {
            agent: {
                "observation": vectors[i],
                "action_mask": np.array([1, int(is_candidate[i])], dtype=np.int8),
            }
            for i, agent in enumerate(self.possible_agents)
        }

    def _round_flags(self) -> dict[str, np.ndarray]:
        """Per-client flags and weights of the last round played (all False/0 at reset)."""
        k, last = self.config.num_clients, self._last
        flags = {name: np.zeros(k, dtype=bool) for name in ("selected", "dropped", "excluded", "kept")}
        weight = np.zeros(k)
        if last is not None:
            flags["selected"][last.selected] = True
            flags["dropped"][np.setdiff1d(last.selected, last.completed)] = True
            flags["excluded"][np.setdiff1d(last.completed, last.usable)] = True
            flags["kept"][last.kept] = True
            weight[last.kept] = last.weights
        return {**flags, "aggregation_weight": weight}

    def _infos(self) -> dict:
        sim, last = self.simulator, self._last
        candidate = np.zeros(self.config.num_clients, dtype=bool)
        candidate[sim.candidates] = True
        flags = self._round_flags()
        clients = sim.clients
        test_accuracy = (float(sim.test_accuracy) if self._done or self.report_test_accuracy == "every_round"
                         else float("nan"))
        return {
            agent: {
                "round": sim.round,
                "validation_accuracy": float(sim.validation_accuracy),
                "test_accuracy": test_accuracy,
                "round_latency_s": float(last.latency_s) if last else 0.0,
                "upload_mb": float(last.upload_mb) if last else 0.0,
                "download_mb": float(last.download_mb) if last else 0.0,
                "traffic_mb": float(last.upload_mb + last.download_mb) if last else 0.0,
                "candidate": bool(candidate[i]),
                "selected": bool(flags["selected"][i]),
                "dropped": bool(flags["dropped"][i]),
                "excluded": bool(flags["excluded"][i]),
                "kept": bool(flags["kept"][i]),
                "aggregation_weight": float(flags["aggregation_weight"][i]),
                "online": bool(clients.online[i]),
                "idle": bool(last.idle) if last else False,
                "probe_loss": float(clients.probe_loss[i]),
                "probe_loss_sq": float(clients.probe_loss_sq[i]),
                "probe_latency_s": float(clients.probe_latency_hist_s[i, 0]),
                "upload_latency_s": float(clients.upload_latency_hist_s[i, 0]),
                "data_size": int(clients.data_size[i]),
                "wall_clock_s": float(sim.wall_clock_s),
            }
            for i, agent in enumerate(self.possible_agents)
        }


def _action_value(agent: str, value) -> int:
    if isinstance(value, np.ndarray):
        if value.shape != ():
            raise ValueError(f"action for {agent} must be a scalar 0 or 1, got an array of shape {value.shape}")
        value = value.item()
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value not in (0, 1):
        raise ValueError(f"action for {agent} must be 0 or 1 (int, numpy integer or 0-d array), got {value!r}")
    return int(value)


def parallel_env(config: EnvConfig | None = None, **overrides) -> ClientSelectionEnv:
    """Build the environment: ``fedenv.parallel_env(num_clients=10, ...)`` (fields of :class:`EnvConfig`)."""
    return ClientSelectionEnv(config, **overrides)
