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

A mixer is built by a factory registered in :data:`MIXERS`: ``factory(obs_dim, embed_dim) -> nn.Module |
None`` (None: the sum); its module maps ``(q (B, K), candidate (B, K), obs (B, K, d)) -> (B,)``.
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

    def forward(self, q: torch.Tensor, candidate: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
        """``Q_tot`` ``(B,)`` of per-agent values ``q`` ``(B, K)``; non-candidates (``candidate == 0``)
        enter neither the sum nor the state."""
        state = pooled_state(obs, candidate)
        per_agent = torch.cat([obs, state.unsqueeze(1).expand(-1, obs.shape[1], -1)], dim=-1)
        w1 = self.hyper_w1(per_agent).abs() * candidate.unsqueeze(-1)
        hidden = F.elu((q.unsqueeze(-1) * w1).sum(dim=1) + self.hyper_b1(state))
        return (hidden * self.hyper_w2(state).abs()).sum(dim=-1) + self.value(state).squeeze(-1)


MIXERS: Registry = Registry("mixer")
"""Mixer name -> ``factory(obs_dim, embed_dim) -> nn.Module | None`` (``VDNConfig.mixer``)."""
MIXERS.register("vdn", lambda obs_dim, embed_dim: None)
MIXERS.register("qmix", lambda obs_dim, embed_dim: QMixer(obs_dim, embed_dim))
