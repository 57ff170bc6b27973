"""Model zoo: the networks local training runs on.

``mlp``
    784-200-10 multilayer perceptron with one ReLU hidden layer (our default on CPU).
``lenet5``
    LeNet-5 (LeCun et al., 1998) for 1x28x28 input: conv 5x5 (6, padding 2), ReLU, max-pool 2,
    conv 5x5 (16), ReLU, max-pool 2, fully connected 400-120-84-10 with ReLU; the LeNet of FedMarl's
    MNIST experiments (arXiv 2201.02932, Table 2).
"""

from __future__ import annotations

import torch
from torch import nn

MODELS = ("mlp", "lenet5")


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


class LeNet5(nn.Module):
    """LeNet-5 for ``(B, 1, 28, 28)`` input; output logits ``(B, num_classes)``."""

    sequential_leaves = True  # forward applies the leaf modules in registration order (fedenv.batched)

    def __init__(self, input_shape: tuple[int, ...], num_classes: int):
        super().__init__()
        if tuple(input_shape[1:]) != (28, 28):
            raise ValueError(f"lenet5 expects 28x28 input, got shape {tuple(input_shape)}")
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


def build_model(name: str, input_shape: tuple[int, ...], num_classes: int, seed: int) -> nn.Module:
    """Build a model of the zoo with seeded initial weights (the global RNG is left untouched).

    Raises:
        ValueError: unknown model name (the message lists the allowed names).
    """
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; allowed: {', '.join(MODELS)}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MLP(input_shape, num_classes) if name == "mlp" else LeNet5(input_shape, num_classes)


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters (what a client uploads)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def count_macs(model: nn.Module, input_shape: tuple[int, ...]) -> int:
    """Multiply-accumulates of one forward pass for one sample, counting Linear and Conv2d layers.

    Used to scale measured on-device training times from a reference model to another model
    (DESIGN.md section 6). Activations, pooling and normalisation are not counted.
    """
    total = 0

    def hook(module, inputs, output):
        nonlocal total
        if isinstance(module, nn.Linear):
            total += module.in_features * module.out_features
        elif isinstance(module, nn.Conv2d):
            kernel = module.kernel_size[0] * module.kernel_size[1] * module.in_channels // module.groups
            total += output[0].numel() * kernel

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]
    try:
        with torch.no_grad():
            model(torch.zeros(1, *input_shape))
    finally:
        for handle in handles:
            handle.remove()
    return total
