"""Mixers: how the per-agent values ``Q(o_n, a_n)`` of a round's candidates combine into ``Q_tot``.

``vdn``: the plain sum (Sunehag et al., AAMAS 2018), no parameters; the default.

``qmix``: monotonic mixing conditioned on the round's state (Rashid et al., ICML 2018, Eq. 5-7; the
structure of PyMARL's ``src/modules/mixers/qmix.py``: hypernetworks give the mixing weights, taken in
absolute value, an ELU hidden layer, a state-dependent bias and a state value ``V(s)``)::

    s       = [mean over candidates of o_n, max over candidates of o_n]          (2d,)
    W1_n    = |hyper_w1([o_n, s])|                                               (E,)
    hidden  = elu(sum over candidates n of Q_n W1_n + hyper_b1(s))               (E,)
    Q_tot   = hidden . |hyper_w2(s)| + V(s)

Unlike PyMARL's mixer, whose first hypernetwork outputs one weight row per agent slot (``n_agents * E``),
the first-layer weights here come from one hypernetwork applied to each candidate's own observation
with the pooled state, so one mixer serves any number of clients and candidates and is invariant to
their order. ``dQ_tot / dQ_n >= 0`` for every candidate (nonnegative weights, increasing ELU), so the
greedy joint action is each agent's own argmax (the IGM property QMIX rests on) and acting needs no
mixer. Because ``W1_n`` depends on ``o_n`` and on the pooled state, the mixer can weight the slowest
candidate alone, which the sum cannot: the round's latency is a maximum over the selected clients.

``straggler``: the VDN sum plus a learned straggler term, the largest latency cost among the clients that
upload (the issue's "VDN plus a learned straggler term"; the round's latency is a maximum over the
selected clients, FedMarl Eq. 1 and our ``fedenv.latency``)::

    c_n     = softplus(cost(o_n)) >= 0                       (a two-layer MLP of o_n, width E)
    Q_tot   = sum over candidates n of Q_n(a_n) - max over uploading candidates n of c_n   (0: none uploads)

The maximum couples the candidates: an upload's worth depends on who else uploads, so each agent's own
argmax is not the greedy joint action (no IGM). The server runs every agent, so the greedy joint action is
found exactly instead (:meth:`StragglerMixer.greedy`): with candidates sorted by ``c_n``, the best joint action
whose costliest upload is candidate ``j`` uploads ``j`` and every cheaper candidate whose
``Q_n(1) - Q_n(0) > 0``; the best of these K sets and of no upload is the argmax, O(K log K). Acting, the TD
target's argmax and evaluation all use it.

A mixer is built by a factory registered in :data:`MIXERS`: ``factory(obs_dim, embed_dim) -> nn.Module |
None`` (None: the sum); its module maps ``(q (B, K), candidate (B, K), obs (B, K, d), actions (B, K)) ->
(B,)``, ``q`` holding each candidate's value of its action ``actions``. A mixer whose greedy joint action
is not each agent's argmax has a method ``greedy(q_values (B, K, 2), mask (B, K, 2), obs) -> (B, K)``;
:func:`greedy_actions` uses it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from agents.networks import pooled_state
from fedenv.registry import Registry


class QMixer(nn.Module):
    """Monotonic state-conditioned mixer (module docstring).

    Args:
        obs_dim: observation size d. embed_dim: mixing width E (PyMARL's ``mixing_embed_dim``, 32).
        hypernet_embed: hidden width of the two-layer first hypernetwork (PyMARL's ``hypernet_embed``, 64).
    """

    def __init__(self, obs_dim: int, embed_dim: int = 32, hypernet_embed: int = 64):
        super().__init__()
        state_dim = 2 * obs_dim
        self.hyper_w1 = nn.Sequential(nn.Linear(obs_dim + state_dim, hypernet_embed), nn.ReLU(),
                                      nn.Linear(hypernet_embed, embed_dim))
        self.hyper_b1 = nn.Linear(state_dim, embed_dim)
        self.hyper_w2 = nn.Linear(state_dim, embed_dim)
        self.value = nn.Sequential(nn.Linear(state_dim, embed_dim), nn.ReLU(), nn.Linear(embed_dim, 1))

    def forward(self, q: torch.Tensor, candidate: torch.Tensor, obs: torch.Tensor,
                actions: torch.Tensor) -> torch.Tensor:
        """``Q_tot`` ``(B,)`` of per-agent values ``q`` ``(B, K)``; non-candidates (``candidate == 0``)
        enter neither the sum nor the state. ``actions`` is unused: QMIX reads the joint action only
        through ``q``."""
        state = pooled_state(obs, candidate)
        per_agent = torch.cat([obs, state.unsqueeze(1).expand(-1, obs.shape[1], -1)], dim=-1)
        w1 = self.hyper_w1(per_agent).abs() * candidate.unsqueeze(-1)
        hidden = F.elu((q.unsqueeze(-1) * w1).sum(dim=1) + self.hyper_b1(state))
        return (hidden * self.hyper_w2(state).abs()).sum(dim=-1) + self.value(state).squeeze(-1)


class StragglerMixer(nn.Module):
    """VDN's sum minus a learned straggler cost, the largest among the uploading candidates (module docstring).

    Args:
        obs_dim: observation size d. embed_dim: hidden width E of the cost network.
    """

    def __init__(self, obs_dim: int, embed_dim: int = 32):
        super().__init__()
        self.cost = nn.Sequential(nn.Linear(obs_dim, embed_dim), nn.ReLU(), nn.Linear(embed_dim, 1))

    def costs(self, obs: torch.Tensor) -> torch.Tensor:
        """Each client's straggler cost ``c_n = softplus(cost(o_n))`` ``(..., K)``, >= 0, in Q units."""
        return F.softplus(self.cost(obs)).squeeze(-1)

    def forward(self, q: torch.Tensor, candidate: torch.Tensor, obs: torch.Tensor,
                actions: torch.Tensor) -> torch.Tensor:
        """``Q_tot`` ``(B,)``: the sum of the candidates' values ``q`` ``(B, K)`` minus the largest cost among
        the candidates whose action is 1 (0 when none uploads)."""
        uploads = (actions > 0) & (candidate > 0)
        slowest = torch.where(uploads, self.costs(obs), torch.zeros_like(q)).amax(dim=1)
        return (q * candidate).sum(dim=1) - slowest

    def greedy(self, q_values: torch.Tensor, mask: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
        """The joint action ``(B, K)`` maximising ``Q_tot`` exactly, for values ``q_values`` ``(B, K, 2)``
        and action masks ``mask`` ``(B, K, 2)`` (action 0 is always allowed, as in the env): the best of
        "no upload" and, for each candidate ``j``, "``j`` uploads with every candidate of lower cost whose
        gain ``Q_n(1) - Q_n(0)`` is positive" (module docstring)."""
        allowed = mask[..., 1] > 0
        gain = q_values[..., 1] - q_values[..., 0]
        cost = torch.where(allowed, self.costs(obs), torch.full_like(gain, float("inf")))
        order = cost.argsort(dim=1, stable=True)
        gain_sorted, cost_sorted = gain.gather(1, order), cost.gather(1, order)
        allowed_sorted = allowed.gather(1, order)
        positive = torch.where(allowed_sorted, gain_sorted.clamp(min=0.0), torch.zeros_like(gain_sorted))
        cheaper = positive.cumsum(dim=1) - positive  # the positive gains of the candidates before j
        value = torch.where(allowed_sorted, gain_sorted + cheaper - cost_sorted,
                            torch.full_like(gain_sorted, float("-inf")))
        best_value, best = value.max(dim=1)
        rank = torch.arange(gain.shape[1], device=gain.device).expand_as(gain)
        chosen_sorted = (rank == best.unsqueeze(1)) | ((rank < best.unsqueeze(1)) & (positive > 0))
        chosen_sorted &= (best_value > 0).unsqueeze(1)  # else no upload beats every set
        actions = torch.zeros_like(chosen_sorted).scatter(1, order, chosen_sorted)
        return actions.long()


def masked_argmax(q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Argmax over the last dimension among allowed actions (``mask > 0``)."""
    return q.masked_fill(mask <= 0, float("-inf")).argmax(dim=-1)


def greedy_actions(q_values: torch.Tensor, mask: torch.Tensor, obs: torch.Tensor,
                   mixer: nn.Module | None) -> torch.Tensor:
    """The greedy joint action ``(..., K)`` of values ``q_values`` ``(..., K, 2)`` under ``mixer``: each
    agent's own masked argmax (VDN, QMIX: the IGM property), or the mixer's exact joint argmax where it has
    one (``greedy``; the straggler mixer)."""
    if mixer is None or not hasattr(mixer, "greedy"):
        return masked_argmax(q_values, mask)
    if q_values.dim() == 2:  # one round (K, 2)
        return mixer.greedy(q_values.unsqueeze(0), mask.unsqueeze(0), obs.unsqueeze(0)).squeeze(0)
    return mixer.greedy(q_values, mask, obs)


def acts_jointly(mixer: nn.Module | None) -> bool:
    """Whether acting greedily needs ``mixer`` (its greedy joint action is not each agent's argmax)."""
    return mixer is not None and hasattr(mixer, "greedy")


MIXERS: Registry = Registry("mixer")
"""Mixer name -> ``factory(obs_dim, embed_dim) -> nn.Module | None`` (``VDNConfig.mixer``)."""
MIXERS.register("vdn", lambda obs_dim, embed_dim: None)
MIXERS.register("qmix", lambda obs_dim, embed_dim: QMixer(obs_dim, embed_dim))
MIXERS.register("straggler", lambda obs_dim, embed_dim: StragglerMixer(obs_dim, embed_dim))
