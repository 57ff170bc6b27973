"""Grouped-convolution gradient path for sequential stacks of Conv2d / ReLU / MaxPool2d / Flatten / Linear
(LeNet-5): the clients' convolutions become one grouped convolution (``groups = K``) and their linear
layers one batched matrix product, differentiated by ordinary autograd."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from fedenv.engine.grad_fns.base import GradFn

STACKABLE = (nn.Conv2d, nn.ReLU, nn.MaxPool2d, nn.Flatten, nn.Linear)
"""Leaf module types the grouped-convolution path computes."""


def stackable_layers(model: nn.Module) -> list[tuple[str, nn.Module]] | None:
    """The model's leaf modules in registration order, if :func:`stacked_grad_fn` computes the model
    exactly from them; else None (the model then takes the vmap path).

    That is: the forward applies the leaves in registration order (an ``nn.Sequential``, or a model
    whose class sets ``sequential_leaves = True``, as LeNet-5 does); all are :data:`STACKABLE`;
    convolutions have zero padding, ``groups=1`` and a bias; linear layers have a bias; a Flatten
    flattens whole samples (``start_dim=1, end_dim=-1``); max-pools do not return indices;
    convolutions and max-pools come before any Flatten, and a Linear after them comes after a Flatten.
    """
    if not (isinstance(model, nn.Sequential) or getattr(model, "sequential_leaves", False)):
        return None
    leaves = [(name, m) for name, m in model.named_modules() if not list(m.children())]
    if not leaves or not all(isinstance(m, STACKABLE) for _, m in leaves):
        return None
    spatial = flattened = False
    for _, m in leaves:
        if isinstance(m, (nn.Conv2d, nn.MaxPool2d)):
            if flattened:
                return None
            spatial = True
        if isinstance(m, nn.Conv2d) and (m.padding_mode != "zeros" or m.groups != 1 or m.bias is None):
            return None
        if isinstance(m, nn.MaxPool2d) and m.return_indices:
            return None
        if isinstance(m, nn.Flatten):
            if (m.start_dim, m.end_dim) != (1, -1):
                return None
            flattened = True
        if isinstance(m, nn.Linear) and (m.bias is None or (spatial and not flattened)):
            return None
    return leaves


def _grouped_forward(layers: list[tuple[str, nn.Module]], params: dict[str, torch.Tensor],
                     x: torch.Tensor) -> torch.Tensor:
    """Logits ``(K, B, C)`` of K stacked clients on their inputs ``x`` ``(K, B, *sample)``."""
    k, b = x.shape[:2]
    h, grouped = x, False  # (K, B, *sample) until the first convolution or max-pool
    for name, layer in layers:
        if isinstance(layer, (nn.Conv2d, nn.MaxPool2d)) and not grouped:
            memory_format = torch.channels_last if h.device.type == "cpu" else torch.contiguous_format
            h = h.transpose(0, 1).reshape(b, -1, *h.shape[3:]).contiguous(memory_format=memory_format)
            grouped = True
        if isinstance(layer, nn.Conv2d):
            weight = params[f"{name}.weight"]
            h = F.conv2d(h, weight.reshape(-1, *weight.shape[2:]), params[f"{name}.bias"].reshape(-1),
                         layer.stride, layer.padding, layer.dilation, groups=k)
        elif isinstance(layer, nn.ReLU):
            h = torch.relu(h)
        elif isinstance(layer, nn.MaxPool2d):
            h = F.max_pool2d(h, layer.kernel_size, layer.stride, layer.padding, layer.dilation, layer.ceil_mode)
        elif isinstance(layer, nn.Flatten):  # to (K, B, features), features in (C, H, W) order
            h = h.reshape(b, k, -1).transpose(0, 1) if grouped else h.reshape(k, b, -1)
            grouped = False
        else:  # Linear on the last dimension of (K, B, ..., in)
            out = torch.baddbmm(params[f"{name}.bias"].unsqueeze(1), h.reshape(k, -1, h.shape[-1]),
                                params[f"{name}.weight"].transpose(1, 2))
            h = out.reshape(*h.shape[:-1], out.shape[-1])
    return h


def stacked_grad_fn(model: nn.Module, layers: list[tuple[str, nn.Module]]) -> GradFn:
    """Grouped-convolution path (see the module docstring) for the layers of :func:`stackable_layers`.

    Convolutions and max-pools run on ``(B, K*C, H, W)``, on a CPU in channels-last memory order:
    oneDNN's grouped convolution and max-pool are 2-3x faster on it than on NCHW at LeNet-5's few
    channels per client (measured with ``benchmarks/bench_engine.py``; not measured on a GPU, which
    keeps NCHW). A ReLU directly followed by a max-pool is run as max-pool then ReLU (the same
    function, since ReLU is monotonic): the ReLU then touches a quarter of the activations.
    """
    layers = list(layers)
    for i in range(len(layers) - 1):
        if isinstance(layers[i][1], nn.ReLU) and isinstance(layers[i + 1][1], nn.MaxPool2d):
            layers[i], layers[i + 1] = layers[i + 1], layers[i]

    def f(params, buffers, x, y, valid):
        leaves = {n: p.detach().requires_grad_(True) for n, p in params.items()}
        with torch.enable_grad():
            logits = _grouped_forward(layers, leaves, x)
            ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="none").view_as(y)
            ce = ce * valid
            loss = (ce.sum(dim=1) / valid.sum(dim=1).clamp(min=1)).sum()
            grads = torch.autograd.grad(loss, list(leaves.values()))
        return dict(zip(leaves, grads)), ce.detach()

    return f
