"""Client selection in federated learning as a PettingZoo parallel environment (DESIGN.md sections 3-4).

One agent per client. Every round the server draws candidates, each candidate trains one probing epoch
from the global model, and each agent chooses 0 (stop after probing) or 1 (finish the remaining local
epochs and upload). The server aggregates the uploads, evaluates the global model on the test split,
and every agent receives the same team reward (:mod:`fedenv.reward`). After ``num_rounds`` rounds the
episode ends by truncation (a time limit); reaching the optional ``target_accuracy`` ends it by
termination. After the last round no next round exists, so the final observations mark no client as
a candidate.

FedMarl: Zhang, Lin and Zhang, "A multi-agent reinforcement learning approach for efficient client
selection in federated learning", AAAI 2022 (arXiv 2201.02932).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pettingzoo
import torch
from gymnasium import spaces

from fedenv.config import EnvConfig
from fedenv.data import PARTITIONERS, Dataset, load_dataset, split_validation, subsample_test_split
from fedenv.engine import Federation, LocalTrainingConfig, TrainRequest, resolve_device, train_together
from fedenv.models import build_model, count_macs, count_parameters
from fedenv.observation import build_observations, feature_bounds, feature_names
from fedenv.registry import AGGREGATION_RULES
from fedenv.reward import round_latency_s, team_reward
from fedenv.traces import TraceReplay, load_trace

INFO_KEYS = (
    "round", "accuracy", "round_latency_s", "comm_mb", "candidate", "selected", "dropped", "excluded", "kept",
    "aggregation_weight", "online", "idle", "probe_loss", "probe_loss_sq", "probe_latency_s", "upload_latency_s",
    "data_size", "wall_clock_s",
)


class ClientSelectionEnv(pettingzoo.ParallelEnv):
    """PettingZoo ``ParallelEnv`` over a trace-driven FL federation.

    Args:
        config: an :class:`~fedenv.config.EnvConfig` (defaults if omitted).
        **overrides: fields replacing those of ``config``.

    Spaces:
        observation ``Dict(observation=Box(low, high, (2h+7,), float32), action_mask=Box(0, 1, (2,), int8))``
        (layout in :mod:`fedenv.observation`); action ``Discrete(2)``. Non-candidates have mask
        ``[1, 0]``; their action is ignored and counts as 0.

    Infos (per agent, the same keys at reset and every step): ``round`` (rounds completed),
    ``accuracy`` (test accuracy of the global model, fraction), ``round_latency_s`` and ``comm_mb`` (of
    the round just played; 0 at reset), ``candidate`` (a candidate of the coming round), ``online``
    (online when the coming round started), ``selected`` (chose to upload in the round just played),
    ``dropped`` (selected, but missed ``round_deadline_s``: a straggler, not aggregated), ``excluded``
    (uploaded, but left out of aggregation because its model was not finite), ``kept`` and
    ``aggregation_weight`` (the upload was aggregated, with this weight: FedCA reports its ``S_opt``
    here), ``idle`` (nobody was
    online: the round only advanced the clock to the next time a client comes online),
    ``probe_loss`` and ``probe_loss_sq`` (mean and mean square of the per-sample training losses of
    the client's latest probing epoch, nats), ``probe_latency_s`` and ``upload_latency_s`` (latest
    observed), ``data_size`` (samples) and ``wall_clock_s`` (simulated time so far).

    Availability and deadlines (DESIGN.md section 6; FedScale's straggler handling): candidates are
    drawn among the clients the trace marks online at the round's start (all of them if fewer are
    online than ``clients_per_round``). With ``round_deadline_s``, a selected client whose completion
    (decision time = slowest probing candidate, then its remaining epochs and upload) would pass the
    deadline is dropped: its upload is neither aggregated nor counted, and the round latency is
    capped at the deadline.

    Raises:
        ValueError: a configuration value is invalid (the message names the field).
    """

    metadata = {"name": "fedenv_client_selection_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, config: EnvConfig | None = None, **overrides):
        self.config = dataclasses.replace(config or EnvConfig(), **overrides).validate()
        cfg = self.config
        self.render_mode = None
        self.device = resolve_device(cfg.device)
        self.dataset = subsample_test_split(_dataset_on(self.device, cfg.dataset, cfg.data_root, cfg.download),
                                            cfg.test_samples)
        self._train_labels = self.dataset.train_y.cpu().numpy()
        if cfg.partition == "natural" and self.dataset.train_owner is None:
            raise ValueError(
                f"partition='natural' needs a dataset that records users (shakespeare), not {cfg.dataset!r}"
            )
        self.trace = load_trace(cfg.trace)
        if cfg.num_clients > len(self.trace.clients):
            raise ValueError(
                f"num_clients={cfg.num_clients} but trace {cfg.trace!r} holds {len(self.trace.clients)} clients"
            )
        probe_model = build_model(cfg.model, self.dataset.input_shape, self.dataset.num_classes, seed=0)
        self.model_parameters = count_parameters(probe_model)
        self.model_macs = count_macs(probe_model, self.dataset.input_shape, self.dataset.train_x.dtype)
        self.model_bits = 32 * self.model_parameters
        self.upload_mb = self.model_bits / 8 / 1e6
        self.reference_latency_s = self._reference_latency_s()
        self.reward_weights = (cfg.accuracy_weight, cfg.latency_weight, cfg.comm_weight)
        self.local_config = LocalTrainingConfig(cfg.batch_size, cfg.lr, cfg.momentum, cfg.weight_decay, cfg.fedprox_mu)

        self.possible_agents = [f"client_{i}" for i in range(cfg.num_clients)]
        self.agents: list[str] = []
        self.feature_names = feature_names(cfg.history_length)
        low, high = feature_bounds(cfg.history_length)
        self._observation_space = spaces.Dict({
            "observation": spaces.Box(low, high, dtype=np.float32),
            "action_mask": spaces.Box(0, 1, (2,), dtype=np.int8),
        })
        self._action_spaces = {agent: spaces.Discrete(2) for agent in self.possible_agents}
        self.state_space = spaces.Box(np.tile(low, cfg.num_clients), np.tile(high, cfg.num_clients), dtype=np.float32)
        self._root_rng = np.random.default_rng()
        self._done = True
        self._observations = None

    # ------------------------------------------------------------------ spaces

    def observation_space(self, agent: str) -> spaces.Dict:
        """The same ``Dict`` space object for every agent and every call."""
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Discrete:
        """``Discrete(2)``: 0 = stop after probing, 1 = finish local training and upload."""
        return self._action_spaces[agent]

    # ------------------------------------------------------------------ episode

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start an episode. ``seed`` fixes the partition, model initialisation, trace assignment and
        offset, candidate draws and minibatch order; without it the next seed comes from the last one.

        Returns:
            ``(observations, infos)`` dicts keyed by agent.
        """
        return run_alone(self.reset_process(seed))

    def reset_process(self, seed: int | None = None):
        """:meth:`reset` as a process that yields its local training as :class:`TrainRequest` objects and
        receives their results (so that :mod:`fedenv.vector` can batch several federations)."""
        if seed is not None:
            self._root_rng = np.random.default_rng(seed)
            for i, agent in enumerate(self.possible_agents):
                self._action_spaces[agent].seed(seed + i)
        self.episode_seed = int(seed) if seed is not None else int(self._root_rng.integers(2**62))
        cfg = self.config
        streams = np.random.SeedSequence(self.episode_seed).spawn(4)
        partition_rng, trace_rng, self._candidate_rng = (np.random.default_rng(s) for s in streams[:3])
        self._batch_entropy = streams[3].entropy
        self.client_indices, self.validation_indices = self._partition(partition_rng)
        model = build_model(cfg.model, self.dataset.input_shape, self.dataset.num_classes, seed=self.episode_seed)
        self.federation = Federation(model, self.dataset, self.client_indices, self.local_config, self.device,
                                     AGGREGATION_RULES[cfg.aggregation]([len(i) for i in self.client_indices], cfg),
                                     self.validation_indices, cfg.engine)
        self.data_size = np.array([len(i) for i in self.client_indices])
        self.replay = TraceReplay(self.trace, cfg.num_clients, trace_rng, self.model_macs, self.model_bits,
                                  cfg.trace_mode)
        if not np.isfinite(self.replay.wait_s(0.0)):
            raise ValueError(f"trace={cfg.trace!r}: none of the clients drawn for this episode is ever online")
        k, h = cfg.num_clients, cfg.history_length
        self._probe_hist = np.zeros((k, h))
        self._upload_hist = np.zeros((k, h))
        self._probe_loss = np.zeros(k)
        self._last_upload = np.full(k, -1)
        self._selected = np.zeros(k, dtype=bool)
        self._excluded = np.zeros(k, dtype=bool)
        self._dropped = np.zeros(k, dtype=bool)
        self._kept = np.zeros(k, dtype=bool)
        self._weight = np.zeros(k)
        self._probe_loss_sq = np.zeros(k)
        self._epoch_samples = np.zeros(k)
        self.round = 0
        self.wall_clock_s = 0.0
        self.accuracy, _ = self.federation.evaluate()
        self.agents = list(self.possible_agents)
        self._done = False
        yield from self._begin_round()
        self._observations = self._observe()
        return self._observations, self._infos(round_latency_s=0.0, comm_mb=0.0)

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

    def step_process(self, actions: dict):
        """:meth:`step` as a process yielding :class:`TrainRequest` objects (see :meth:`reset_process`).
        Invalid actions raise before the first yield."""
        if self._done:
            raise RuntimeError("the episode is over (or was never started): call reset() before step()")
        cfg = self.config
        chosen = self._parse_actions(actions)
        return self._play_round(chosen)

    def _play_round(self, chosen: np.ndarray):
        cfg = self.config
        candidates = self._candidates
        picked = np.flatnonzero(chosen[candidates])
        selected = candidates[picked]
        upload_kbps, _ = self.replay.bandwidth_kbps(self.round)
        upload_s = self.replay.transfer_s(upload_kbps[selected])
        rest_s = self.replay.compute_s(selected, self._epoch_samples[selected] * (cfg.local_epochs - 1), self.round)
        if len(candidates):
            latency_s = round_latency_s(self._probe_s, rest_s + upload_s)
        else:  # nobody online: the clock advances until a client comes online
            latency_s = self.replay.wait_s(self.wall_clock_s)
        on_time = np.ones(len(selected), dtype=bool)
        if cfg.round_deadline_s is not None and len(candidates):
            on_time = np.max(self._probe_s) + rest_s + upload_s <= cfg.round_deadline_s
            latency_s = min(latency_s, cfg.round_deadline_s)
        completed = selected[on_time]
        usable, kept, weights = completed, completed, np.zeros(0)
        if len(completed):
            start = self._probe_result.rows(picked[on_time])
            result = start
            if cfg.local_epochs > 1:
                result = yield TrainRequest(self.federation, completed, cfg.local_epochs - 1,
                                            self._generators(completed, phase=1), start)
            outcome = self.federation.aggregate(completed, result)
            usable, kept, weights = completed[outcome.usable_rows], completed[outcome.kept_rows], outcome.weights
        comm_mb = self.upload_mb * len(completed)
        previous = self.accuracy
        self.accuracy, _ = self.federation.evaluate()
        reward = team_reward(self.accuracy, previous, latency_s, comm_mb, self.reward_weights, cfg.utility)

        self._upload_hist[completed] = np.roll(self._upload_hist[completed], 1, axis=1)
        self._upload_hist[completed, 0] = upload_s[on_time]
        self._last_upload[completed] = self.round
        self._selected = np.zeros(cfg.num_clients, dtype=bool)
        self._selected[selected] = True
        self._dropped = self._selected.copy()
        self._dropped[completed] = False
        self._excluded = np.zeros(cfg.num_clients, dtype=bool)
        self._excluded[completed] = True
        self._excluded[usable] = False
        self._weight = np.zeros(cfg.num_clients)
        self._weight[kept] = weights
        self._kept = np.zeros(cfg.num_clients, dtype=bool)
        self._kept[kept] = True
        self.round += 1
        self.wall_clock_s += latency_s
        terminated = cfg.target_accuracy is not None and self.accuracy >= cfg.target_accuracy
        truncated = not terminated and self.round >= cfg.num_rounds
        self._done = terminated or truncated
        if self._done:
            self._candidates = np.zeros(0, dtype=np.int64)
        else:
            yield from self._begin_round()
        self._observations = self._observe()
        infos = self._infos(round_latency_s=latency_s, comm_mb=comm_mb, idle=len(candidates) == 0)
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

    # ------------------------------------------------------------------ internals

    def _partition(self, rng: np.random.Generator) -> tuple[list[np.ndarray], np.ndarray]:
        cfg = self.config
        pool, validation = split_validation(self._train_labels, cfg.val_fraction, rng)
        labels = self._train_labels[pool]
        if cfg.partition == "fedmarl":
            kwargs = {"dominant_fraction": cfg.dominant_fraction, "size_exponent": cfg.size_exponent,
                      "min_size": cfg.min_client_size}
        elif cfg.partition == "dirichlet":
            kwargs = {"alpha": cfg.dirichlet_alpha, "min_size": cfg.min_client_size}
        elif cfg.partition == "xclass":
            kwargs = {"classes_per_client": cfg.xclass_classes, "noniid_clients": cfg.xclass_noniid_clients,
                      "samples_per_client": cfg.xclass_samples}
        elif cfg.partition == "natural":
            labels, kwargs = self.dataset.train_owner[pool], {"min_size": cfg.min_client_size}
        else:
            kwargs = {}
        shards = PARTITIONERS[cfg.partition](labels, cfg.num_clients, rng, **kwargs)
        return [pool[s] for s in shards], validation

    def _generators(self, clients: np.ndarray, phase: int) -> list[torch.Generator]:
        generators = []
        for client in clients:
            state = np.random.SeedSequence(self._batch_entropy, spawn_key=(self.round, int(client), phase))
            generators.append(torch.Generator().manual_seed(int(state.generate_state(1, np.uint64)[0] >> 1)))
        return generators

    def _begin_round(self):
        cfg = self.config
        self._online = self.replay.online(self.wall_clock_s)
        available = np.flatnonzero(self._online)
        count = min(cfg.clients_per_round, len(available))
        self._candidates = np.sort(self._candidate_rng.choice(available, count, replace=False)).astype(np.int64)
        if count == 0:
            self._probe_s = np.zeros(0)
            return
        self._probe_result = yield TrainRequest(self.federation, self._candidates, 1,
                                                self._generators(self._candidates, phase=0))
        samples = self._probe_result.samples.to(self._probe_result.loss_sum.device)
        self._probe_loss[self._candidates] = (self._probe_result.loss_sum / samples).cpu().numpy()
        self._probe_loss_sq[self._candidates] = (self._probe_result.loss_sq_sum / samples).cpu().numpy()
        # samples trained per epoch: the client's data size, less a partial batch for BatchNorm models
        self._epoch_samples[self._candidates] = self._probe_result.samples.cpu().numpy()
        _, download_kbps = self.replay.bandwidth_kbps(self.round)
        self._probe_s = self.replay.transfer_s(download_kbps[self._candidates]) + self.replay.compute_s(
            self._candidates, self._epoch_samples[self._candidates], self.round
        )
        self._probe_hist[self._candidates] = np.roll(self._probe_hist[self._candidates], 1, axis=1)
        self._probe_hist[self._candidates, 0] = self._probe_s

    def _reference_latency_s(self) -> float:
        cfg = self.config
        pool_size = len(self._train_labels) * (1.0 - cfg.val_fraction)
        samples = cfg.local_epochs * pool_size / cfg.num_clients
        latencies = [
            self.model_bits / (np.median(c.download_kbps) * 1000.0)
            + c.train_ms_per_sample * self.model_macs / self.trace.reference_macs * samples / 1000.0
            + self.model_bits / (np.median(c.upload_kbps) * 1000.0)
            for c in self.trace.clients
        ]
        return float(np.median(latencies))

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
        cfg = self.config
        is_candidate = np.zeros(cfg.num_clients, dtype=bool)
        is_candidate[self._candidates] = True
        vectors = build_observations(
            probing_loss=self._probe_loss,
            probe_latency_hist_s=self._probe_hist,
            upload_latency_hist_s=self._upload_hist,
            upload_mb=self.upload_mb,
            data_size=self.data_size,
            rounds_since_upload=self.round - self._last_upload,
            round_index=self.round,
            num_rounds=cfg.num_rounds,
            is_candidate=is_candidate,
            global_accuracy=self.accuracy,
            num_classes=self.dataset.num_classes,
            reference_latency_s=self.reference_latency_s,
        )
        return {
            agent: {
                "observation": vectors[i],
                "action_mask": np.array([1, int(is_candidate[i])], dtype=np.int8),
            }
            for i, agent in enumerate(self.possible_agents)
        }

    def _infos(self, round_latency_s: float, comm_mb: float, idle: bool = False) -> dict:
        candidate = np.zeros(self.config.num_clients, dtype=bool)
        candidate[self._candidates] = True
        return {
            agent: {
                "round": self.round,
                "accuracy": float(self.accuracy),
                "round_latency_s": float(round_latency_s),
                "comm_mb": float(comm_mb),
                "candidate": bool(candidate[i]),
                "selected": bool(self._selected[i]),
                "dropped": bool(self._dropped[i]),
                "excluded": bool(self._excluded[i]),
                "kept": bool(self._kept[i]),
                "aggregation_weight": float(self._weight[i]),
                "online": bool(self._online[i]),
                "idle": idle,
                "probe_loss": float(self._probe_loss[i]),
                "probe_loss_sq": float(self._probe_loss_sq[i]),
                "probe_latency_s": float(self._probe_hist[i, 0]),
                "upload_latency_s": float(self._upload_hist[i, 0]),
                "data_size": int(self.data_size[i]),
                "wall_clock_s": float(self.wall_clock_s),
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


@functools.lru_cache(maxsize=4)
def _dataset_on(device: torch.device, name: str, data_root: str | None, download: bool) -> Dataset:
    """The dataset's tensors on ``device``, one copy per device shared by every env in the process."""
    dataset = load_dataset(name, data_root, download)
    return dataclasses.replace(
        dataset, train_x=dataset.train_x.to(device), train_y=dataset.train_y.to(device),
        test_x=dataset.test_x.to(device), test_y=dataset.test_y.to(device),
    )


def run_alone(process):
    """Drive an env process to its end, serving each :class:`TrainRequest` it yields on its own."""
    try:
        request = next(process)
        while True:
            request = process.send(train_together([request])[0])
    except StopIteration as stop:
        return stop.value
