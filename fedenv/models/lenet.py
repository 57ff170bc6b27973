"""``lenet5``: LeNet-5 (LeCun et al., 1998) for 1x28x28 input: conv 5x5 (6, padding 2), ReLU, max-pool 2,
conv 5x5 (16), ReLU, max-pool 2, fully connected 400-120-84-10 with ReLU; the LeNet of FedMarl's MNIST
experiments (arXiv 2201.02932, Table 2)."""

from __future__ import annotations

import torch
from torch import nn

from fedenv.models.spec import ModelSpec


class LeNet5(nn.Module):
    """LeNet-5 for ``(B, 1, 28, 28)`` input; output logits ``(B, num_classes)``."""

    sequential_leaves = True
    """forward applies the leaf modules in registration order (:mod:`fedenv.engine.grad_fns.grouped_conv`)."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(input_shape[0], 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


LENET5_SPEC = ModelSpec("lenet5", LeNet5, input_kind="image", reference_input_shape=(1, 28, 28),
                        reference_num_classes=10, accepts=lambda shape: shape[1:] == (28, 28),
                        accepted="(channels, 28, 28) input (mnist5k, mnist, fashion-mnist)")
