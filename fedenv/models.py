"""Model zoo: the networks local training runs on.

``mlp``
    784-200-10 multilayer perceptron with one ReLU hidden layer (our default on CPU).
``lenet5``
    LeNet-5 (LeCun et al., 1998) for 1x28x28 input: conv 5x5 (6, padding 2), ReLU, max-pool 2,
    conv 5x5 (16), ReLU, max-pool 2, fully connected 400-120-84-10 with ReLU; the LeNet of FedMarl's
    MNIST experiments (arXiv 2201.02932, Table 2).
``resnet18``
    torchvision's ResNet-18 (He et al., CVPR 2016) adapted to small grey or colour images as is usual
    for 28x28 / 32x32 input: a 3x3 stride-1 first convolution and no initial max-pool. Has BatchNorm:
    the engine keeps running statistics per client and aggregation averages them (DESIGN.md section 5).
``vgg6``
    A six-layer VGG-style network (Simonyan and Zisserman, ICLR 2015) for CIFAR-10, FedMarl's "VGG6"
    (arXiv 2201.02932, Table 2; its widths are not given there, these are our choice): 3x3 convolutions
    32-M-64-M-128-M-256-M, then 1024-256-10 fully connected, ReLU throughout, no BatchNorm (so every
    client trains through the grouped-convolution path of :mod:`fedenv.batched`).
``lstm``
    LEAF's Shakespeare next-character model (Caldas et al., arXiv 1812.01097): embedding of 8 per
    character, two LSTM layers of 256 units, a linear layer to the 80-character vocabulary, read at the
    last position of the 80-character window. The LSTM is written out with ``nn.Linear`` gates
    (:class:`LSTMLayer`, the equations of ``torch.nn.LSTM``) so that ``torch.func.vmap`` batches it.
"""

from __future__ import annotations

import torch
from torch import nn

MODELS = ("mlp", "lenet5", "resnet18", "vgg6", "lstm")


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
            raise ValueError(
                f"lenet5 expects 28x28 input (mnist5k, mnist, fashion-mnist), got shape {tuple(input_shape)}"
            )
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


def resnet18(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """torchvision's ResNet-18 with a 3x3 stride-1 first convolution for ``input_shape[0]`` channels
    and no initial max-pool; input ``(B, C, H, W)`` with H, W >= 8, output ``(B, num_classes)``."""
    from torchvision.models import resnet18 as torchvision_resnet18

    if len(input_shape) != 3 or min(input_shape[1:]) < 8:
        raise ValueError(f"resnet18 expects (channels, height, width) input of at least 8x8, got {tuple(input_shape)}")
    model = torchvision_resnet18(num_classes=num_classes)
    model.conv1 = nn.Conv2d(input_shape[0], 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()
    return model


VGG6_LAYERS = (32, "M", 64, "M", 128, "M", 256, "M")


def vgg6(input_shape: tuple[int, ...], num_classes: int) -> nn.Sequential:
    """VGG-style stack of :data:`VGG6_LAYERS` for ``(B, C, 32, 32)`` input; output ``(B, num_classes)``."""
    if len(input_shape) != 3 or tuple(input_shape[1:]) != (32, 32):
        raise ValueError(f"vgg6 expects (channels, 32, 32) input (cifar10), got {tuple(input_shape)}")
    layers, channels = [], input_shape[0]
    for item in VGG6_LAYERS:
        if item == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(channels, item, 3, padding=1), nn.ReLU()]
            channels = item
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(channels * 2 * 2, 256), nn.ReLU(),
                         nn.Linear(256, num_classes))


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
        self.layers = nn.ModuleList(LSTMLayer(a, b) for a, b in zip(sizes[:-1], sizes[1:]))
        self.head = nn.Linear(hidden_size, vocab_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embedding(x.long())
        for layer in self.layers:
            h = layer(h)
        return self.head(h[:, -1])


def build_model(name: str, input_shape: tuple[int, ...], num_classes: int, seed: int) -> nn.Module:
    """Build a model of the zoo with seeded initial weights (the global RNG is left untouched).

    Args:
        name: one of :data:`MODELS`.
        input_shape: shape of one input (``(C, H, W)`` images, ``(T,)`` character windows).
        num_classes: number of labels (the vocabulary size for ``lstm``).

    Raises:
        ValueError: unknown model name (the message lists the allowed names), or an input shape the
            model cannot take.
    """
    builders = {"mlp": MLP, "lenet5": LeNet5, "resnet18": resnet18, "vgg6": vgg6,
                "lstm": lambda shape, classes: CharLSTM(classes)}
    if name not in builders:
        raise ValueError(f"unknown model {name!r}; allowed: {', '.join(MODELS)}")
    if name == "lstm" and len(input_shape) != 1:
        raise ValueError(f"model 'lstm' takes character windows (dataset shakespeare), but these inputs have shape "
                         f"{tuple(input_shape)}; for images use mlp, lenet5, resnet18 or vgg6")
    if name != "lstm" and len(input_shape) != 3:
        raise ValueError(f"model {name!r} takes images (C, H, W), but these inputs have shape {tuple(input_shape)} "
                         "(character windows); use --model lstm")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return builders[name](input_shape, num_classes)


def has_batchnorm(model: nn.Module) -> bool:
    """True if the model holds a BatchNorm layer (its training then depends on batch composition)."""
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())


def count_parameters(model: nn.Module) -> int:
    """Number of trainable parameters (what a client uploads)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


PROBE_BATCH = 2
"""Samples in the probe batch of :func:`count_macs` and :func:`count_activations` (BatchNorm refuses a
batch of one in training mode when it sees one value per channel)."""


def _probe(model: nn.Module, input_shape: tuple[int, ...], dtype: torch.dtype, modules: list[nn.Module], hook) -> None:
    """Run ``model`` once on the ``meta`` device (no arithmetic, the model's own tensors untouched) on
    a batch of :data:`PROBE_BATCH` zero inputs of ``dtype`` in training mode, calling
    ``hook(module, output)`` after each of ``modules``; every module's mode is restored afterwards.
    Floating-point weights take the probe's dtype when it is floating too."""
    from torch.func import functional_call

    def meta(t):
        same_kind = t.is_floating_point() and dtype.is_floating_point
        return torch.empty_like(t, device="meta", dtype=dtype if same_kind else t.dtype)

    state = {name: meta(t) for name, t in [*model.named_parameters(), *model.named_buffers()]}
    modes = [(m, m.training) for m in model.modules()]
    handles = [m.register_forward_hook(lambda module, inputs, output: hook(module, output)) for m in modules]
    try:
        model.train()
        functional_call(model, state, (torch.zeros(PROBE_BATCH, *input_shape, dtype=dtype, device="meta"),))
    finally:
        for m, training in modes:
            m.training = training
        for handle in handles:
            handle.remove()


def count_macs(model: nn.Module, input_shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> int:
    """Multiply-accumulates of one forward pass for one sample, counting Linear and Conv2d layers
    (every call: a recurrent layer's per-step gates count once per step).

    Used to scale measured on-device training times from a reference model to another model
    (DESIGN.md section 6). Activations, pooling, embeddings and normalisation are not counted. Found on
    the ``meta`` device: nothing is computed and the model is left as it was.

    Args:
        dtype: dtype of the probe input (integer for character ids).
    """
    total = 0

    def hook(module, output):
        nonlocal total
        if isinstance(module, nn.Linear):
            total += module.in_features * output.numel()
        else:
            total += output.numel() * module.kernel_size[0] * module.kernel_size[1] * module.in_channels // module.groups

    _probe(model, input_shape, dtype, [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))], hook)
    return total // PROBE_BATCH


def count_activations(model: nn.Module, input_shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> int:
    """Values the model's leaf modules output in one training-mode forward pass for one sample (what
    autograd keeps for the backward pass, roughly). Found on the ``meta`` device: nothing is computed
    and the model is left as it was.

    Used to size the chunks of clients the batched engine trains at once on a CPU
    (:func:`fedenv.batched.cpu_chunked`).

    Args:
        dtype: dtype of the probe input (integer for character ids; a floating dtype also stands for
            the weights' dtype).
    """
    total = 0

    def hook(module, output):
        nonlocal total
        total += sum(t.numel() for t in (output if isinstance(output, tuple) else (output,)) if isinstance(t, torch.Tensor))

    _probe(model, input_shape, dtype, [m for m in model.modules() if not list(m.children())], hook)
    return total // PROBE_BATCH
