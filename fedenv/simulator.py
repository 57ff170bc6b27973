"""The FL round simulation under the environment (docs/design.md, "One round").

:class:`FederationSimulator` plays the server side of one federation, one round at a time, with no
notion of agents: every round it draws candidates among the clients the trace marks online, has them
train the probing epoch, and, once told which candidates finish, trains their remaining epochs, drops
stragglers past the deadline, aggregates the uploads and evaluates the global model. With
``EnvConfig.probing=False`` (pre-selection policies) nobody trains before the decision: the policy sees
what each candidate reported when it last took part, and only the selected clients download, train all
local epochs and upload; their first epoch's loss and latency become their new report. What each client
has reported lives in a :class:`~fedenv.round_records.ClientStates` record; what a round did is a
:class:`~fedenv.round_records.RoundOutcome`.
:class:`fedenv.env.ClientSelectionEnv` wraps it in the PettingZoo API (spaces, actions, observations,
rewards, infos), as PettingZoo's ``multiwalker.py`` wraps ``multiwalker_base.py``.

Local training is not run here but requested: the ``*_process`` methods are generators that yield
:class:`~fedenv.engine.TrainRequest` objects and receive their results, so that several federations
can be served by one batched computation (:mod:`fedenv.vector`); :func:`run_alone` serves one.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import torch

from fedenv.config import EnvConfig
from fedenv.data import Dataset, load_dataset, split_validation, subsample_split
from fedenv.data.partition.common import check_shards
from fedenv.engine import (
    EnvProcess,
    Federation,
    LocalTrainingConfig,
    TrainRequest,
    TrainResult,
    resolve_device,
    train_together,
)
from fedenv.latency import capped_latency_s, full_round_s, on_time, round_latency_s
from fedenv.models import build_model, count_macs, count_parameters
from fedenv.registry import AGGREGATION_RULES, PARTITIONERS
from fedenv.round_records import ClientStates, RoundOutcome, push_history
from fedenv.traces import TraceReplay, load_trace, reference_round_latency_s, require_clients

BITS_PER_PARAMETER = 32
"""Uploads and downloads carry float32 weights (no compression)."""


class FederationSimulator:
    """One federation's rounds: candidates, probing, local training, deadline, aggregation, evaluation.

    Args:
        config: a validated :class:`~fedenv.config.EnvConfig`.

    Attributes (after :meth:`reset_process`): ``federation`` (the engine's server state), ``replay``
    (the trace replay), ``clients`` (:class:`ClientStates`), ``candidates`` (the current round's,
    sorted ids), ``round`` (rounds completed), ``wall_clock_s`` (simulated time, s),
    ``validation_accuracy`` and ``test_accuracy`` (the global model's accuracy on the server's validation
    split, NaN without one, and on the test split), ``reward_accuracy`` (the one of the two that
    ``config.reward_accuracy_split`` names: what the reward and the observation see), ``client_indices`` and
    ``validation_indices`` (the partition).
    Fixed per configuration: ``dataset``, ``trace``, ``device``, ``model_parameters``, ``model_macs``
    (per sample), ``model_size_mb`` (one model transfer) and ``reference_latency_s``.

    Raises:
        ValueError: the dataset lacks what the partitioner needs, the trace has too few clients, or the
            reward scores a validation split that ``val_fraction`` leaves empty.
    """

    def __init__(self, config: EnvConfig):
        self.config = cfg = config
        self.device = resolve_device(cfg.device)
        dataset = _dataset_on(self.device, cfg.dataset, cfg.data_root, cfg.download)
        self.dataset = subsample_split(subsample_split(dataset, "train", cfg.train_samples), "test", cfg.test_samples)
        self._train_labels = self.dataset.train_y.cpu().numpy()
        self.trace = load_trace(cfg.trace)
        require_clients(self.trace, cfg.num_clients, repr(cfg.trace))
        probe_model = build_model(cfg.model, self.dataset.input_shape, self.dataset.num_classes, seed=0)
        _, validation = self._partition(np.random.default_rng(0))  # a partition this dataset cannot serve is refused
        if cfg.reward_accuracy_split == "validation" and len(validation) == 0:
            raise ValueError(f"val_fraction={cfg.val_fraction} holds out no sample of the {len(self._train_labels)} "
                             "training samples, but reward_accuracy_split='validation' scores the reward on them: "
                             "raise val_fraction or set reward_accuracy_split='test'")
        self.model_parameters = count_parameters(probe_model)
        self.model_macs = count_macs(probe_model, self.dataset.input_shape, self.dataset.train_x.dtype)
        self.model_bits = BITS_PER_PARAMETER * self.model_parameters
        self.model_size_mb = self.model_bits / 8 / 1e6
        self.reference_latency_s = self._reference_latency_s()
        self.local_config = LocalTrainingConfig(cfg.batch_size, cfg.lr, cfg.momentum, cfg.weight_decay, cfg.fedprox_mu)
        self.candidates = np.zeros(0, dtype=np.int64)

    def reset_process(self, seed: int) -> EnvProcess[None]:
        """Start an episode from ``seed``: partition, model initialisation, trace assignment and offsets,
        candidate draws and minibatch orders all derive from it; then probe the first round's candidates.

        Raises:
            ValueError: none of the trace clients drawn for this episode is ever online.
        """
        cfg = self.config
        self.episode_seed = int(seed)
        streams = np.random.SeedSequence(self.episode_seed).spawn(4)
        partition_rng, trace_rng, self._candidate_rng = (np.random.default_rng(s) for s in streams[:3])
        self._batch_entropy = streams[3].entropy
        self.client_indices, self.validation_indices = self._partition(partition_rng)
        model = build_model(cfg.model, self.dataset.input_shape, self.dataset.num_classes, seed=self.episode_seed)
        rule = AGGREGATION_RULES[cfg.aggregation]([len(i) for i in self.client_indices], cfg)
        self.federation = Federation(model, self.dataset, self.client_indices, self.local_config, self.device,
                                     rule, self.validation_indices, cfg.engine)
        self.replay = TraceReplay(self.trace, cfg.num_clients, trace_rng, self.model_macs, self.model_bits,
                                  cfg.trace_mode)
        if not np.isfinite(self.replay.wait_s(0.0)):
            raise ValueError(f"trace={cfg.trace!r}: none of the clients drawn for this episode is ever online")
        self.clients = ClientStates.fresh(np.array([len(i) for i in self.client_indices]), cfg.history_length)
        self.round = 0
        self.wall_clock_s = 0.0
        self._score()
        yield from self.begin_round_process()

    def profile_round_s(self) -> np.ndarray:
        """``(K,)`` each client's round time estimated from its device profile, s, for the current episode (which
        assigns the trace clients): the download, one local epoch of its data (:func:`samples_per_epoch`) and
        the upload, at its median bandwidth and device speed (:meth:`fedenv.traces.TraceReplay.profile_round_s`,
        as FedScale's client manager estimates a client's duration before it has taken part). These are the
        terms a client's reports cover (probing latency: download and first epoch; upload latency), so an
        estimate ranks against reported latencies like for like (:func:`fedenv.latency.expected_round_s`)."""
        samples = samples_per_epoch(self.clients.data_size, self.config.batch_size, self.federation.drop_last)
        return self.replay.profile_round_s(np.asarray(samples))

    def begin_round_process(self) -> EnvProcess[None]:
        """Set the round's learning rate (``lr * lr_decay**round``), draw the round's candidates among the
        online clients and, with ``config.probing``, train their probing epoch (without it nobody trains
        before the decision)."""
        cfg, clients = self.config, self.clients
        self.federation.config = dataclasses.replace(self.local_config, lr=cfg.lr * cfg.lr_decay**self.round)
        clients.online = self.replay.online(self.wall_clock_s)
        available = np.flatnonzero(clients.online)
        count = min(cfg.clients_per_round, len(available))
        self.candidates = np.sort(self._candidate_rng.choice(available, count, replace=False)).astype(np.int64)
        self._probe_s = np.zeros(0)
        if count == 0 or not cfg.probing:
            return
        self._probe_result, self._probe_s = yield from self._probe_process(self.candidates)

    def _probe_process(self, clients: np.ndarray) -> EnvProcess[tuple[TrainResult, np.ndarray]]:
        """Train ``clients``' first local epoch from the global model and record what they report: loss
        statistics, samples per epoch and probing latency (download + that epoch).

        Returns:
            The training result and the ``(len(clients),)`` probing latencies, s.
        """
        states = self.clients
        result = yield TrainRequest(self.federation, clients, 1, self.minibatch_generators(clients, phase=0))
        samples = result.samples.to(result.loss_sum.device)
        states.probe_loss[clients] = (result.loss_sum / samples).cpu().numpy()
        states.probe_loss_sq[clients] = (result.loss_sq_sum / samples).cpu().numpy()
        states.epoch_samples[clients] = result.samples.cpu().numpy()
        _, download_kbps = self.replay.bandwidth_kbps(self.round)
        probe_s = self.replay.transfer_s(download_kbps[clients]) + self.replay.compute_s(
            clients, states.epoch_samples[clients], self.round
        )
        push_history(states.probe_latency_hist_s, clients, probe_s)
        return result, probe_s

    def candidate_round_s(self) -> np.ndarray:
        """``(C,)`` the time each of this round's candidates (:attr:`candidates`, in that order) would add to the
        round if selected, s, read ahead from the trace replay before anyone decides: without probing its whole
        round (download, every local epoch, upload: :func:`~fedenv.latency.full_round_s`), with probing its
        remaining epochs and upload after the probing phase. The round's latency is the probing phase (the
        slowest candidate's probe; none without probing) plus the largest of these over the selected clients
        (:func:`~fedenv.latency.round_latency_s`; before a round deadline caps it). No client reports these times
        before the round: they serve oracle diagnostics (:class:`fedenv.baselines.OracleFastestPolicy`), never
        an observation."""
        cfg, candidates = self.config, self.candidates
        upload_kbps, _ = self.replay.bandwidth_kbps(self.round)
        upload_s = self.replay.transfer_s(upload_kbps[candidates])
        if cfg.probing:
            rest_samples = self.clients.epoch_samples[candidates] * (cfg.local_epochs - 1)
            return self.replay.compute_s(candidates, rest_samples, self.round) + upload_s
        return full_round_s(*self._first_epoch_s(candidates), cfg.local_epochs, upload_s)

    def end_episode(self) -> None:
        """No next round: no client is a candidate any more."""
        self.candidates = np.zeros(0, dtype=np.int64)

    def play_round_process(self, chosen: np.ndarray) -> EnvProcess[RoundOutcome]:
        """Finish the round: the chosen candidates train their remaining epochs (all ``local_epochs``
        without probing) and upload, stragglers past the deadline are dropped, the uploads are
        aggregated and the global model evaluated.

        Args:
            chosen: ``(K,)`` bool; only candidates count.

        Returns:
            The :class:`RoundOutcome` (the next round is not begun: see :meth:`begin_round_process`).
        """
        cfg, candidates = self.config, self.candidates
        picked = np.flatnonzero(chosen[candidates])
        selected = candidates[picked]
        upload_kbps, _ = self.replay.bandwidth_kbps(self.round)
        upload_s = self.replay.transfer_s(upload_kbps[selected])
        if not len(candidates):
            arrived, latency_s = np.zeros(0, dtype=bool), self.replay.wait_s(self.wall_clock_s)
        else:
            finish_s = self.candidate_round_s()[picked]
            arrived = on_time(self._probe_s, finish_s, cfg.round_deadline_s)
            latency_s = capped_latency_s(round_latency_s(self._probe_s, finish_s), cfg.round_deadline_s,
                                         self._probe_s)
        completed = selected[arrived]
        usable, kept, weights = completed, completed, np.zeros(0)
        if len(completed):
            result = yield from self._finish_process(completed, picked[arrived])
            aggregated = self.federation.aggregate(completed, result)
            usable, kept = completed[aggregated.usable_rows], completed[aggregated.kept_rows]
            weights = aggregated.weights
        previous = self.reward_accuracy
        self._score()
        push_history(self.clients.upload_latency_hist_s, completed, upload_s[arrived])
        self.clients.last_upload_round[completed] = self.round
        self.round += 1
        self.wall_clock_s += latency_s
        downloads = len(candidates) if cfg.probing else len(selected)
        return RoundOutcome(candidates, selected, completed, usable, kept, np.asarray(weights), float(latency_s),
                            self.model_size_mb * len(completed), self.model_size_mb * downloads,
                            self.reward_accuracy, previous, len(candidates) == 0)

    def _score(self) -> None:
        """Score the global model on the validation split (NaN without one); the reward's accuracy is the
        split ``config.reward_accuracy_split`` names. The test split is scored when :attr:`test_accuracy`
        is first read after the model changed (reports only: a training episode reads it at its end)."""
        has_validation = len(self.federation.validation_y) > 0
        self.validation_accuracy = self.federation.evaluate("validation")[0] if has_validation else float("nan")
        self._test_accuracy: float | None = None
        self.reward_accuracy = (self.test_accuracy if self.config.reward_accuracy_split == "test"
                                else self.validation_accuracy)

    @property
    def test_accuracy(self) -> float:
        """Accuracy (fraction) of the current global model on the test split, scored once per model."""
        if self._test_accuracy is None:
            self._test_accuracy = self.federation.evaluate("test")[0]
        return self._test_accuracy

    def _first_epoch_s(self, clients: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(download_s, epoch_s)`` of ``clients`` this round, s: model download and one local epoch of
        :func:`samples_per_epoch` samples (what a client that never trained would process)."""
        _, download_kbps = self.replay.bandwidth_kbps(self.round)
        samples = samples_per_epoch(self.clients.data_size[clients], self.config.batch_size,
                                    self.federation.drop_last)
        return self.replay.transfer_s(download_kbps[clients]), self.replay.compute_s(clients, samples, self.round)

    def _finish_process(self, completed: np.ndarray, rows: np.ndarray) -> EnvProcess[TrainResult]:
        """The completed clients' models after all local epochs: from their probing results (``rows`` of
        them), or, without probing, from a first epoch trained now (:meth:`_probe_process`, so that they
        report its loss and latency) and then the remaining ``local_epochs - 1``: the minibatch orders,
        and so the models, are those of probing mode."""
        cfg = self.config
        if cfg.probing:
            result = self._probe_result.rows(rows)
        else:
            result, _ = yield from self._probe_process(completed)
        if cfg.local_epochs > 1:
            result = yield TrainRequest(self.federation, completed, cfg.local_epochs - 1,
                                        self.minibatch_generators(completed, phase=1), result)
        return result

    def _partition(self, rng: np.random.Generator) -> tuple[list[np.ndarray], np.ndarray]:
        cfg = self.config
        pool, validation = split_validation(self._train_labels, cfg.val_fraction, rng)
        owners = None if self.dataset.train_owner is None else self.dataset.train_owner[pool]
        shards = PARTITIONERS[cfg.partition](self._train_labels[pool], owners, cfg.num_clients, rng, cfg)
        return [pool[s] for s in check_shards(cfg.partition, shards, cfg.num_clients)], validation

    def minibatch_generators(self, clients: np.ndarray, phase: int) -> list[torch.Generator]:
        """One CPU generator per client of ``clients`` fixing its minibatch order in the current round and
        ``phase`` (0: the probing epoch or, without probing, the first epoch; 1: the remaining epochs); each
        derives from the episode seed, the round, the client id and the phase only."""
        generators = []
        for client in clients:
            state = np.random.SeedSequence(self._batch_entropy, spawn_key=(self.round, int(client), phase))
            generators.append(torch.Generator().manual_seed(int(state.generate_state(1, np.uint64)[0] >> 1)))
        return generators

    def _reference_latency_s(self) -> float:
        """The observation's latency scale: :func:`fedenv.traces.reference_round_latency_s` for a client of
        mean size (the client pool over ``num_clients``) training ``local_epochs`` epochs."""
        cfg = self.config
        samples = cfg.local_epochs * len(self._train_labels) * (1.0 - cfg.val_fraction) / cfg.num_clients
        return reference_round_latency_s(self.trace, self.model_macs, self.model_bits, samples)


def samples_per_epoch(data_size: np.ndarray, batch_size: int, drop_last: bool) -> np.ndarray:
    """Samples a client visits in one local epoch: all ``data_size`` of them, less the last partial
    batch when ``drop_last`` (models with BatchNorm, :func:`fedenv.engine.schedule.make_schedule`).

    Args:
        data_size: ``(S,)`` int training samples per client. batch_size: minibatch size B >= 1.

    Returns:
        ``(S,)`` int samples per epoch.
    """
    data_size = np.asarray(data_size)
    return data_size - data_size % batch_size if drop_last else data_size


@functools.lru_cache(maxsize=4)
def _dataset_on(device: torch.device, name: str, data_root: str | None, download: bool) -> Dataset:
    """The dataset's tensors on ``device``, one copy per device shared by every env in the process."""
    dataset = load_dataset(name, data_root, download)
    return dataclasses.replace(
        dataset, train_x=dataset.train_x.to(device), train_y=dataset.train_y.to(device),
        test_x=dataset.test_x.to(device), test_y=dataset.test_y.to(device),
    )


def run_alone(process: EnvProcess):
    """Drive a simulation process to its end, serving each :class:`TrainRequest` it yields on its own.

    Returns:
        The process's return value.
    """
    try:
        request = next(process)
        while True:
            request = process.send(train_together([request])[0])
    except StopIteration as stop:
        return stop.value
