"""LeNet-5 (LeCun et al., 1998) for 28x28 input, in two variants:

- ``lenet5``: conv 5x5 (6, padding 2), ReLU, max-pool 2, conv 5x5 (16), ReLU, max-pool 2, fully connected
  400-120-84-10 with ReLU; the LeNet of FedMarl's MNIST experiments (arXiv 2201.02932, Table 2);
  416,520 multiply-accumulates per sample.
- ``lenet5-classic``: the same without the first convolution's padding (28 -> 24 -> pool 12 -> conv 8 ->
  pool 4), fully connected 256-120-84-10; the LeNet-5 most FL code trains on 28x28 MNIST; 281,640
  multiply-accumulates per sample.
"""

from __future__ import annotations

import torch
from torch import nn

from fedenv.models.spec import ModelSpec


class LeNet5(nn.Module):
    """LeNet-5 for ``(B, 1, 28, 28)`` input; output logits ``(B, num_classes)``."""

    # forward applies the leaf modules in registration order (fedenv.engine.grad_fns.grouped_conv)
    sequential_leaves = True

    first_padding = 2
    """Zero padding of the first convolution (2 keeps 28x28; 0 in :class:`LeNet5Classic`)."""

    def __init__(self, input_shape: tuple[int, ...], num_classes: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(input_shape[0], 6, 5, padding=self.first_padding), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        )
        side = ((input_shape[1] + 2 * self.first_padding - 4) // 2 - 4) // 2  # 5 (padded) or 4 (classic)
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(16 * side * side, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class LeNet5Classic(LeNet5):
    """LeNet-5 without padding in the first convolution (``lenet5-classic``, module docstring) for
    ``(B, 1, 28, 28)`` input; output logits ``(B, num_classes)``."""

    first_padding = 0


LENET5_SPEC = ModelSpec("lenet5", LeNet5, input_kind="image", reference_input_shape=(1, 28, 28),
                        reference_num_classes=10, accepts=lambda shape: shape[1:] == (28, 28),
                        accepted="(channels, 28, 28) input (mnist5k, mnist, fashion-mnist)")

LENET5_CLASSIC_SPEC = ModelSpec("lenet5-classic", LeNet5Classic, input_kind="image", reference_input_shape=(1, 28, 28),
                                reference_num_classes=10, accepts=lambda shape: shape[1:] == (28, 28),
                                accepted="(channels, 28, 28) input (mnist5k, mnist, fashion-mnist)")
