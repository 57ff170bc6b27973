"""Sizes of a model: parameters, multiply-accumulates and activations of one forward pass, BatchNorm."""

from __future__ import annotations

import torch
from torch import nn


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
    (docs/design.md, section 4). Activations, pooling, embeddings and normalisation are not counted. Found on
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
            kernel = module.kernel_size[0] * module.kernel_size[1]
            total += output.numel() * kernel * module.in_channels // module.groups

    _probe(model, input_shape, dtype, [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))], hook)
    return total // PROBE_BATCH


def count_activations(model: nn.Module, input_shape: tuple[int, ...], dtype: torch.dtype = torch.float32) -> int:
    """Values the model's leaf modules output in one training-mode forward pass for one sample (what
    autograd keeps for the backward pass, roughly). Found on the ``meta`` device: nothing is computed
    and the model is left as it was.

    Used to size the chunks of clients the batched engine trains at once on a CPU
    (:func:`fedenv.engine.grad_fns.cpu_chunks.cpu_chunked`).

    Args:
        dtype: dtype of the probe input (integer for character ids; a floating dtype also stands for
            the weights' dtype).
    """
    total = 0

    def hook(module, output):
        nonlocal total
        outputs = output if isinstance(output, tuple) else (output,)
        total += sum(t.numel() for t in outputs if isinstance(t, torch.Tensor))

    _probe(model, input_shape, dtype, [m for m in model.modules() if not list(m.children())], hook)
    return total // PROBE_BATCH
