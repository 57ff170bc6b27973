"""Value decomposition networks (Sunehag et al., AAMAS 2018) with one Q-network shared by all agents.

``Q_tot(s, a) = sum over candidates n of Q(o_n, a_n)`` (non-candidates have no choice and no term).
Double-Q target (van Hasselt et al., AAAI 2016) over n-step returns:

``y = R^(m) + gamma^m (1 - terminated) sum_{n in next candidates} Q_target(o'_n, argmax_a Q(o'_n, a))``

with masked actions excluded from the argmax; truncation bootstraps, termination does not
(docs/design.md, section 10). Adam, gradient-norm clipping, hard target updates every
``target_update_interval`` gradient steps, epsilon annealed linearly
over the run's episodes (:func:`linear_epsilon`), and so, with a demonstrator and a final weight, the margin
term's weight (:func:`demonstration_weight`).
With ``VDNConfig.mixer`` other than ``vdn`` (:mod:`agents.mixers`), the sums above become the mixer's
``Q_tot`` (the target side through a target copy of the mixer), trained jointly with the Q-network, and
the argmax over next actions is the mixer's greedy joint action (:func:`agents.mixers.greedy_actions`).
With ``VDNConfig.q_network`` other than ``mlp`` (:mod:`agents.networks`), ``Q(o_n, .)`` reads the round's
other candidates too (``deepsets``: a pooled summary of them; ``attention``: self-attention over them).
FedMarl (arXiv 2201.02932) trains its client agents with VDN and one shared MLP.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from agents.config import VDNConfig
from agents.demonstrations import margin_loss
from agents.mixers import MIXERS, greedy_actions
from agents.networks import build_q_network, input_columns
from agents.replay import Batch
from fedenv.models.seeding import SeededDraws

MIXER_SEED_OFFSET = 1 << 32
"""The mixer's weights are drawn from seed ``seed + MIXER_SEED_OFFSET``, apart from the Q-network's."""


def linear_schedule(step: int, total_steps: int, start: float, end: float, fraction: float) -> float:
    """The value at schedule step ``step`` of ``total_steps``: linear from ``start`` to ``end`` over
    ``fraction * total_steps`` steps (at least one), then ``end`` (SB3's
    ``stable_baselines3.common.utils.get_linear_fn``)."""
    progress = min(1.0, step / max(1.0, fraction * total_steps))
    return start + progress * (end - start)


def linear_epsilon(step: int, total_steps: int, config: VDNConfig) -> float:
    """Epsilon at schedule step ``step`` of ``total_steps``: linear from ``exploration_initial_eps`` to
    ``exploration_final_eps`` over ``exploration_fraction * total_steps`` steps, then constant (the
    schedule of SB3's DQN, :func:`linear_schedule`).

    The trainer counts steps by episode (see ``VDNConfig.exploration_fraction``): round ``r`` of episode
    ``e`` is step ``e * num_rounds + r`` of ``episodes * num_rounds``.
    """
    return linear_schedule(step, total_steps, config.exploration_initial_eps, config.exploration_final_eps,
                           config.exploration_fraction)


def demonstration_weight(step: int, total_steps: int, config: VDNConfig) -> float:
    """The margin term's weight at schedule step ``step`` of ``total_steps`` (the steps of
    :func:`linear_epsilon`): ``demonstration_weight`` throughout without a ``demonstration_final_weight``
    (DQfD's constant lambda_2, Hester et al., AAAI 2018); with one, linear from ``demonstration_weight`` to it
    over the ``exploration_fraction`` of the run in which epsilon anneals, then constant (kickstarting's fading
    teacher, Schmitt et al., arXiv 1803.03835, 2018)."""
    if config.demonstration_final_weight is None:
        return config.demonstration_weight
    return linear_schedule(step, total_steps, config.demonstration_weight, config.demonstration_final_weight,
                           config.exploration_fraction)


class UpdateLosses(NamedTuple):
    """One gradient step's losses (:meth:`VDNLearner.update`): ``loss``, the minimised total, is ``td_loss``
    (the mean squared TD error, importance-weighted under prioritised replay) plus ``margin_weight`` times
    ``margin_loss`` (DQfD's large-margin term before its weight, :func:`agents.demonstrations.margin_loss`; both
    0 without a demonstrator). In Q's scaled units (``VDNConfig.reward_scale``), squared for the TD term."""

    loss: float
    td_loss: float
    margin_loss: float
    margin_weight: float


def q_network_columns(config: VDNConfig, obs_dim: int, feature_names: Sequence[str] | None) -> list[int] | None:
    """The observation columns the Q-network of ``config`` reads (:func:`agents.networks.input_columns`), None for
    all of them.

    Raises:
        ValueError: ``config.input_features`` is set and ``feature_names`` is None, or names a feature that is not
            in them; ``feature_names`` is not of length ``obs_dim``.
    """
    if feature_names is not None and len(feature_names) != obs_dim:
        raise ValueError(f"{len(feature_names)} feature names for observations of size {obs_dim}")
    if config.input_features and feature_names is None:
        raise ValueError(f"vdn input_features={list(config.input_features)} needs the observation's feature names")
    return input_columns(feature_names or (), config.input_features)


class VDNLearner:
    """The online and target Q-networks, their optimiser and the TD update.

    Args:
        obs_dim: observation size d. config: hyperparameters. device: torch device.
        seed: seeds the network initialisation and the exploration generator.
        feature_names: the observation layout ``(d,)``, needed where ``config.input_features`` is set (the
            Q-network reads those columns, :func:`agents.networks.input_columns`).

    Raises:
        ValueError: a bad ``config`` (:meth:`VDNConfig.validate`), ``input_features`` without ``feature_names``
            or not in them, or ``feature_names`` not of length ``obs_dim``.
    """

    def __init__(self, obs_dim: int, config: VDNConfig, device: torch.device | str = "cpu", seed: int = 0,
                 feature_names: Sequence[str] | None = None):
        self.config = config.validate()
        self.device = torch.device(device)
        self.obs_dim = obs_dim
        columns = q_network_columns(config, obs_dim, feature_names)
        with SeededDraws(seed):  # the weights of torch.manual_seed(seed); the global RNG is left alone
            self.q = build_q_network(config.q_network, obs_dim, config.hidden, columns).to(self.device)
        self.target = copy.deepcopy(self.q)
        with SeededDraws(seed + MIXER_SEED_OFFSET):  # its own stream: the Q-network is the same with any mixer
            self.mixer = MIXERS[config.mixer](obs_dim, config.mixing_embed_dim)
        self.target_mixer = None
        parameters = list(self.q.parameters())
        if self.mixer is not None:
            self.mixer = self.mixer.to(self.device)
            self.target_mixer = copy.deepcopy(self.mixer)
            parameters += list(self.mixer.parameters())
        self.trained_parameters = parameters
        self.optimizer = torch.optim.Adam(parameters, lr=config.learning_rate)
        self.gradient_steps = 0
        self.last_td_errors: np.ndarray | None = None
        self.rng = np.random.default_rng(seed)

    def act(self, obs: np.ndarray, mask: np.ndarray, epsilon: float, q: nn.Module | None = None,
            mixer: nn.Module | None = None, upload_probability: float = 0.5,
            demo_actions: np.ndarray | None = None) -> np.ndarray:
        """Epsilon-greedy joint action ``(K,)``: the greedy joint action (each agent's argmax, or the mixer's
        joint argmax, :func:`agents.mixers.greedy_actions`), then each agent independently explores with
        probability ``epsilon``: a candidate uploads with probability ``upload_probability`` (0.5: a fair coin;
        :func:`agents.rollout.exploration_upload_probability`), or, given ``demo_actions`` ``(K,)`` (a
        demonstrator's joint action, :mod:`agents.demonstrations`), plays the demonstrator's action; masked
        actions are never chosen. ``q``, ``mixer``: the networks that act (default: the online ones; an actor's
        copies when the learner trains meanwhile)."""
        with torch.no_grad():
            obs_t, mask_t = (torch.as_tensor(x, device=self.device) for x in (obs, mask))
            values = (self.q if q is None else q)(obs_t, mask_t[..., 1])
            actions = greedy_actions(values, mask_t, obs_t, self.mixer if mixer is None else mixer).cpu().numpy()
        explore = self.rng.random(len(actions)) < epsilon
        # the coins are drawn with a demonstrator too, so the generator's stream does not depend on it
        random_actions = (self.rng.random(len(actions)) < upload_probability).astype(np.int64) * (mask[:, 1] > 0)
        if demo_actions is not None:
            random_actions = np.asarray(demo_actions, dtype=np.int64) * (mask[:, 1] > 0)
        return np.where(explore, random_actions, actions)

    def td_target(self, batch: Batch) -> torch.Tensor:
        """``(B,)`` targets ``y`` (module docstring), rewards multiplied by ``reward_scale``."""
        with torch.no_grad():
            next_candidates = batch.next_mask[..., 1]
            q_target = self.target(batch.next_obs, next_candidates)
            if self.config.double_q:
                best = greedy_actions(self.q(batch.next_obs, next_candidates), batch.next_mask, batch.next_obs,
                                      self.mixer)
            else:
                best = greedy_actions(q_target, batch.next_mask, batch.next_obs, self.target_mixer)
            next_q = q_target.gather(-1, best.unsqueeze(-1)).squeeze(-1) * next_candidates
            next_value = (next_q.sum(dim=1) if self.target_mixer is None
                          else self.target_mixer(next_q, next_candidates, batch.next_obs, best))
            return self.config.reward_scale * batch.reward + batch.discount * (1.0 - batch.terminated) * next_value

    def q_tot(self, batch: Batch, values: torch.Tensor | None = None) -> torch.Tensor:
        """``(B,)`` ``Q_tot`` of the taken joint actions: summed over candidates, or mixed by the mixer.
        ``values``: the online network's ``(B, K, 2)`` Q-values of ``batch.obs`` when already computed."""
        values = self.q(batch.obs, batch.mask[..., 1]) if values is None else values
        chosen = values.gather(-1, batch.actions.unsqueeze(-1)).squeeze(-1)
        if self.mixer is None:
            return (chosen * batch.mask[..., 1]).sum(dim=1)
        return self.mixer(chosen * batch.mask[..., 1], batch.mask[..., 1], batch.obs, batch.actions)

    def state_dict(self) -> dict:
        """Networks (the mixer and its target where there is one), optimiser, step counter and
        exploration generator (for exact resumption)."""
        state = {
            "q": self.q.state_dict(), "target": self.target.state_dict(), "optimizer": self.optimizer.state_dict(),
            "gradient_steps": self.gradient_steps, "rng": self.rng.bit_generator.state,
        }
        if self.mixer is not None:
            state.update(mixer=self.mixer.state_dict(), target_mixer=self.target_mixer.state_dict())
        return state

    def load_state_dict(self, state: dict) -> None:
        """Inverse of :meth:`state_dict`."""
        self.q.load_state_dict(state["q"])
        self.target.load_state_dict(state["target"])
        if self.mixer is not None:
            self.mixer.load_state_dict(state["mixer"])
            self.target_mixer.load_state_dict(state["target_mixer"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.gradient_steps = int(state["gradient_steps"])
        self.rng.bit_generator.state = state["rng"]

    def update(self, batch: Batch, margin_weight: float | None = None) -> UpdateLosses:
        """One gradient step on the mean squared TD error (importance-weighted for a batch with ``weight``,
        whose TD errors are then kept in ``last_td_errors`` for the buffer's priorities), plus, with a
        demonstrator, ``margin_weight`` (default: ``demonstration_weight``; the trainer passes the annealed
        weight, :func:`demonstration_weight`) times DQfD's margin loss on the batch's labelled candidates
        (:func:`agents.demonstrations.margin_loss`; Hester et al., AAAI 2018, Eq. 5 with our one n-step TD loss
        in place of their 1-step and n-step terms, and without the L2 term; it acts on each agent's own values,
        also under a mixer that acts jointly); hard
        target update every ``target_update_interval`` gradient steps. Returns the step's losses, each term
        apart (:class:`UpdateLosses`)."""
        values = self.q(batch.obs, batch.mask[..., 1])
        if batch.weight is None:
            td_loss = F.mse_loss(self.q_tot(batch, values), self.td_target(batch))
        else:  # prioritised replay: importance-weighted (agents.replay.PrioritizedReplayBuffer)
            td_error = self.q_tot(batch, values) - self.td_target(batch)
            self.last_td_errors = td_error.detach().cpu().numpy()
            td_loss = torch.mean(batch.weight * td_error ** 2)
        loss, margin, weight = td_loss, torch.zeros(()), 0.0
        if self.config.demonstrator and batch.demo_actions is not None:
            weight = self.config.demonstration_weight if margin_weight is None else margin_weight
            margin = margin_loss(values, batch.mask[..., 1], batch.demo_actions, self.config.demonstration_margin)
            loss = td_loss + weight * margin
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.trained_parameters, self.config.max_grad_norm)
        self.optimizer.step()
        self.gradient_steps += 1
        if self.gradient_steps % self.config.target_update_interval == 0:
            self.target.load_state_dict(self.q.state_dict())
            if self.mixer is not None:
                self.target_mixer.load_state_dict(self.mixer.state_dict())
        return UpdateLosses(float(loss.detach()), float(td_loss.detach()), float(margin.detach()), float(weight))
