"""Q-networks shared by all agents: ``(obs (..., K, d), candidate (..., K)) -> Q (..., K, 2)``.

``mlp``: each agent's values from its own observation alone, ``Q(o_n, .)``; the default, FedMarl's
shared MLP (arXiv 2201.02932) and the network of every result before the set network.

``deepsets``: each agent's values from its own observation and a pooled summary of the round's
candidates, permutation-equivariant over the candidate set (DeepSets, Zaheer et al., NeurIPS 2017,
Eq. 4 and Lemma 3: ``f(x)_n = rho(phi(x_n), pool_m phi(x_m))``; the local-plus-global concatenation
of PointNet's segmentation network, Qi et al., CVPR 2017, Fig. 2)::

    e_n  = relu(W_phi o_n + b_phi)                                  (H1,)  H1 = hidden[0]
    p    = [mean over candidates m of e_m, max over candidates m of e_m]   (2 H1,)
    Q_n  = rho([e_n, p])                                            (2,)   rho: MLP of widths hidden[1:]

``attention``: the pool is learned attention (one residual multi-head self-attention block over the
candidates, the multihead attention block ``MAB(X, X)`` of the Set Transformer, Lee et al., ICML 2019,
Eq. 6-8, without its layer norms)::

    e_n  = relu(W_phi o_n + b_phi)                                  (H1,)
    h_n  = e_n + MultiheadAttention(query e_n, keys and values e_m of the candidates m)   (H1,), 4 heads
    Q_n  = rho(h_n)                                                 (2,)   rho: MLP of widths hidden[1:]

In both set networks the pool runs over the candidates only (non-candidates neither enter it nor have a
choice), so an agent decides knowing the round's other candidates (the slowest of them through the max or
the attention weights; not how many: mean, max and attention do not count), and one network serves any
number of clients and candidates: the pool has the same size for every K. Acting stays per agent (each
candidate's argmax of its own ``Q_n``), so it works under every mixer of :mod:`agents.mixers`.

A network is built by a factory registered in :data:`Q_NETWORKS`: ``factory(obs_dim, hidden) ->
nn.Module`` (``VDNConfig.q_network``, ``VDNConfig.hidden``). With ``VDNConfig.input_features`` it reads only
those columns of each observation (:class:`InputSelection`, :func:`input_columns`): an ablation of the
observation that leaves the environment, the replay buffer and the mixers' state as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from fedenv.registry import Registry


def mlp(width: int, hidden: Sequence[int], out: int) -> nn.Sequential:
    """Linear layers of widths ``hidden`` with ReLU between, from ``width`` inputs to ``out`` outputs."""
    layers = []
    for size in hidden:
        layers += [nn.Linear(width, size), nn.ReLU()]
        width = size
    layers.append(nn.Linear(width, out))
    return nn.Sequential(*layers)


def pooled_state(x: torch.Tensor, candidate: torch.Tensor) -> torch.Tensor:
    """``(..., K, f)`` per-agent features, ``(..., K)`` candidate mask -> ``(..., 2f)`` their mean and
    max over the candidates (zeros for a round without candidates)."""
    weight = candidate.to(x.dtype).unsqueeze(-1)
    count = weight.sum(dim=-2).clamp(min=1.0)
    mean = (x * weight).sum(dim=-2) / count
    maximum = x.masked_fill(weight <= 0, float("-inf")).amax(dim=-2)
    maximum = torch.where(torch.isfinite(maximum), maximum, torch.zeros_like(maximum))
    return torch.cat([mean, maximum], dim=-1)


class QNetwork(nn.Module):
    """``mlp``: the per-agent MLP ``o_n -> Q(o_n, .)`` (module docstring); ``candidate`` is not read."""

    def __init__(self, obs_dim: int, hidden: Sequence[int]):
        super().__init__()
        self.net = mlp(obs_dim, hidden, 2)

    def forward(self, obs: torch.Tensor, candidate: torch.Tensor) -> torch.Tensor:
        """``(..., K, d)``, ``(..., K)`` -> ``(..., K, 2)``."""
        return self.net(obs)


class DeepSetsQNetwork(nn.Module):
    """``deepsets``: the permutation-equivariant set network of the module docstring.

    Args:
        obs_dim: observation size d. hidden: ``hidden[0]`` is the embedding width H1 of ``phi``, the
            rest the widths of ``rho``'s hidden layers (``(64, 64)``: ``phi`` d -> 64, ``rho`` 192 -> 64 -> 2).
    """

    def __init__(self, obs_dim: int, hidden: Sequence[int]):
        super().__init__()
        embed, *rest = hidden
        self.phi = nn.Sequential(nn.Linear(obs_dim, embed), nn.ReLU())
        self.rho = mlp(3 * embed, rest, 2)

    def forward(self, obs: torch.Tensor, candidate: torch.Tensor) -> torch.Tensor:
        """``(..., K, d)``, ``(..., K)`` candidate mask (1: a candidate) -> ``(..., K, 2)``."""
        embedding = self.phi(obs)
        pool = pooled_state(embedding, candidate).unsqueeze(-2).expand(*embedding.shape[:-1], -1)
        return self.rho(torch.cat([embedding, pool], dim=-1))


class AttentionQNetwork(nn.Module):
    """``attention``: the candidates' self-attention network of the module docstring.

    Args:
        obs_dim: observation size d. hidden: ``hidden[0]`` is the embedding width H1 (a multiple of
            ``num_heads``), the rest the widths of ``rho``'s hidden layers. num_heads: attention heads (4).

    Raises:
        ValueError: ``hidden[0]`` is not a multiple of ``num_heads``.
    """

    def __init__(self, obs_dim: int, hidden: Sequence[int], num_heads: int = 4):
        super().__init__()
        embed, *rest = hidden
        if embed % num_heads:
            raise ValueError(f"attention Q-network: the embedding width hidden[0]={embed} must be a multiple of "
                             f"its {num_heads} heads")
        self.phi = nn.Sequential(nn.Linear(obs_dim, embed), nn.ReLU())
        self.attention = nn.MultiheadAttention(embed, num_heads, batch_first=True)
        self.rho = mlp(embed, rest, 2)

    def forward(self, obs: torch.Tensor, candidate: torch.Tensor) -> torch.Tensor:
        """``(..., K, d)``, ``(..., K)`` candidate mask (1: a candidate) -> ``(..., K, 2)``."""
        lead, k = obs.shape[:-2], obs.shape[-2]
        embedding = self.phi(obs.reshape(-1, k, obs.shape[-1]))
        ignored = candidate.reshape(-1, k) <= 0
        ignored = ignored & ~ignored.all(dim=-1, keepdim=True)  # no candidates: attend to all (values unused)
        attended, _ = self.attention(embedding, embedding, embedding, key_padding_mask=ignored, need_weights=False)
        return self.rho(embedding + attended).reshape(*lead, k, 2)


Q_NETWORKS: Registry = Registry("Q-network")
"""Q-network name -> ``factory(obs_dim, hidden) -> nn.Module`` (``VDNConfig.q_network``)."""
Q_NETWORKS.register("mlp", QNetwork)
Q_NETWORKS.register("deepsets", DeepSetsQNetwork)
Q_NETWORKS.register("attention", AttentionQNetwork)


class InputSelection(nn.Module):
    """Feeds ``network`` only the observation columns ``columns``: ``(obs (..., K, d), candidate (..., K)) ->
    network(obs[..., columns], candidate)``. The columns are a buffer left out of the state dict, so the weights
    are ``network``'s own (under the prefix ``network.``)."""

    def __init__(self, columns: Sequence[int], network: nn.Module):
        super().__init__()
        self.register_buffer("columns", torch.as_tensor(list(columns), dtype=torch.long), persistent=False)
        self.network = network

    def forward(self, obs: torch.Tensor, candidate: torch.Tensor) -> torch.Tensor:
        """``(..., K, d)``, ``(..., K)`` -> ``(..., K, 2)``."""
        return self.network(obs.index_select(-1, self.columns), candidate)


def output_layer(network: nn.Module) -> nn.Linear:
    """The layer of ``network`` that writes the Q-values: its last ``nn.Linear`` in registration order (the last
    layer of ``mlp``'s net and of the set networks' ``rho``, inside :class:`InputSelection` too).

    Raises:
        ValueError: ``network`` has no ``nn.Linear``.
    """
    layers = [module for module in network.modules() if isinstance(module, nn.Linear)]
    if not layers:
        raise ValueError(f"{type(network).__name__} has no nn.Linear layer to write its Q-values")
    return layers[-1]


def input_columns(feature_names: Sequence[str], input_features: Sequence[str]) -> list[int] | None:
    """The columns of the observation layout ``feature_names`` that the Q-network reads: those of
    ``input_features`` in the layout's order, or None (every column) where ``input_features`` is empty.

    Raises:
        ValueError: a name of ``input_features`` that is not in the layout (names it and lists the layout's).
    """
    if not input_features:
        return None
    unknown = [name for name in input_features if name not in feature_names]
    if unknown:
        raise ValueError(f"vdn input_features {unknown} are not features of the observation; its features: "
                         f"{', '.join(feature_names)}")
    return [i for i, name in enumerate(feature_names) if name in set(input_features)]


def build_q_network(name: str, obs_dim: int, hidden: Sequence[int], columns: Sequence[int] | None = None) -> nn.Module:
    """The registered Q-network ``name`` for observations of size ``obs_dim``, reading only ``columns``
    (:class:`InputSelection`; :func:`input_columns`) where given.

    Raises:
        ValueError: ``name`` is not registered (lists the registered names), or a column outside
            ``[0, obs_dim)``.
    """
    factory = Q_NETWORKS.get(name)
    if columns is None:
        return factory(obs_dim, hidden)
    if not columns or min(columns) < 0 or max(columns) >= obs_dim:
        raise ValueError(f"Q-network input columns {list(columns)} must be one or more of 0..{obs_dim - 1}")
    return InputSelection(columns, factory(len(columns), hidden))
