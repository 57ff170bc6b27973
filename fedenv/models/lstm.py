"""``lstm``: LEAF's Shakespeare next-character model (Caldas et al., arXiv 1812.01097): embedding of 8 per
character, two LSTM layers of 256 units, a linear layer to the 80-character vocabulary, read at the last
position of the 80-character window. The LSTM is written out with ``nn.Linear`` gates
(:class:`LSTMLayer`, the equations of ``torch.nn.LSTM``) so that ``torch.func.vmap`` batches it."""

from __future__ import annotations

import itertools

import torch
from torch import nn

from fedenv.models.spec import ModelSpec


class LSTMLayer(nn.Module):
    """One LSTM layer over a sequence, with the gate equations of ``torch.nn.LSTM``:
    ``i, f, g, o = split(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)``, ``c_t = sigmoid(f) c_{t-1} +
    sigmoid(i) tanh(g)``, ``h_t = sigmoid(o) tanh(c_t)``; zero initial state.

    Input ``(B, T, input_size)``; output ``(B, T, hidden_size)``.
    """

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.hidden_size = hidden_size
        self.input_gates = nn.Linear(input_size, 4 * hidden_size)
        self.hidden_gates = nn.Linear(hidden_size, 4 * hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        projected = self.input_gates(x)  # all time steps at once
        h = x.new_zeros(x.shape[0], self.hidden_size)
        c = torch.zeros_like(h)
        outputs = []
        for t in range(x.shape[1]):
            i, f, g, o = (projected[:, t] + self.hidden_gates(h)).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(h)
        return torch.stack(outputs, dim=1)


class CharLSTM(nn.Module):
    """LEAF's Shakespeare model: input ``(B, T)`` character ids (any numeric dtype), output logits
    ``(B, vocab_size)`` for the character after the window."""

    def __init__(self, vocab_size: int, embedding_dim: int = 8, hidden_size: int = 256, num_layers: int = 2):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        sizes = [embedding_dim] + [hidden_size] * num_layers
        self.layers = nn.ModuleList(LSTMLayer(a, b) for a, b in itertools.pairwise(sizes))
        self.head = nn.Linear(hidden_size, vocab_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embedding(x.long())
        for layer in self.layers:
            h = layer(h)
        return self.head(h[:, -1])


def char_lstm(input_shape: tuple[int, ...], num_classes: int) -> CharLSTM:
    """:class:`CharLSTM` over a vocabulary of ``num_classes`` characters (any window length)."""
    return CharLSTM(num_classes)


LSTM_SPEC = ModelSpec("lstm", char_lstm, input_kind="sequence", reference_input_shape=(80,), reference_num_classes=80,
                      accepts=lambda shape: shape[0] >= 1, accepted="(T,) character windows of T >= 1")
