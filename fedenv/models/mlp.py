"""``mlp``: 784-200-10 multilayer perceptron with one ReLU hidden layer (our default on CPU)."""

from __future__ import annotations

import torch
from torch import nn

from fedenv.models.spec import ModelSpec


class MLP(nn.Module):
    """Multilayer perceptron ``in -> hidden -> classes`` on flattened input.

    Input ``(B, *input_shape)``; output logits ``(B, num_classes)``.
    """

    def __init__(self, input_shape: tuple[int, ...], num_classes: int, hidden: int = 200):
        super().__init__()
        in_features = int(torch.tensor(input_shape).prod())
        self.net = nn.Sequential(
            nn.Flatten(), nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, num_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


MLP_SPEC = ModelSpec("mlp", MLP, input_kind="image", reference_input_shape=(1, 28, 28), reference_num_classes=10,
                     accepts=lambda shape: True, accepted="(channels, height, width) input")
