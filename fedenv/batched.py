"""Per-client gradient functions for the batched engine: one call computes every client's gradient.

All share one contract, ``f(params, buffers, x, y, valid) -> (grads, ce)``: ``params``, ``buffers``
(BatchNorm running statistics; empty for models without) and ``grads`` map names to ``(K, *shape)``
stacked tensors, ``x`` is ``(K, B, *input_shape)``, ``y`` and ``valid`` ``(K, B)``, and ``ce`` ``(K, B)``
the per-sample cross-entropies (0 where padded). The gradient is that of each client's mean loss over
its valid samples; the buffers are updated in place as each client's own training-mode forward pass
would update them. Three implementations, tested against each other and against
the per-client reference loop:

- :func:`vmap_grad_fn`, the general path: ``torch.func.vmap(grad(loss))`` over any module;
- :func:`mlp_grad_fn`, for :class:`~fedenv.models.MLP`: forward and backward written out with batched
  matrix products, no autograd (DESIGN.md section 10: 2.5x faster than vmap on CPU);
- :func:`stacked_grad_fn`, for sequential stacks of Conv2d / ReLU / MaxPool2d / Flatten / Linear (LeNet-5):
  the clients' convolutions become one grouped convolution (``groups = K``) and their linear layers
  one batched matrix product, differentiated by ordinary autograd.

On a CPU, :func:`batched_grad_fn` runs the grouped-convolution path over cache-sized chunks of
clients (:func:`cpu_chunked`).
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

from fedenv.config import ENGINES
from fedenv.models import MLP, count_activations


def _batch_loss(model, params, buffers, x, y, valid):
    logits = functional_call(model, (params, buffers), (x,))
    ce = F.cross_entropy(logits, y, reduction="none") * valid
    return ce.sum() / valid.sum().clamp(min=1), ce


def vmap_grad_fn(model: nn.Module):
    """General path: ``torch.func.vmap(grad(loss))`` over the client dimension.

    Returns:
        ``f(params, buffers, x, y, valid) -> (grads, ce)`` (the contract of the module docstring).
        BatchNorm buffers are stacked per client, so each client's running statistics are updated
        from its own batch only.
    """
    return vmap(grad(lambda p, b, xb, yb, vb: _batch_loss(model, p, b, xb, yb, vb), has_aux=True))


def mlp_grad_fn(model: MLP):
    """Fast path for :class:`~fedenv.models.MLP`: forward and backward written out with batched matrix
    products (``torch.baddbmm``/``bmm``), no autograd. Same contract and results as
    :func:`vmap_grad_fn` (tested against it); about 2x faster on CPU (DESIGN.md section 10)."""
    names = [name for name, m in model.net.named_children() if isinstance(m, nn.Linear)]
    keys = [(f"net.{n}.weight", f"net.{n}.bias") for n in names]

    def f(params, buffers, x, y, valid):
        k, b = y.shape
        activations = [x.reshape(k, b, -1)]
        pre = []
        for i, (w, bias) in enumerate(keys):
            z = torch.baddbmm(params[bias].unsqueeze(1), activations[-1], params[w].transpose(1, 2))
            pre.append(z)
            activations.append(z.clamp(min=0) if i < len(keys) - 1 else z)
        logits = activations.pop()
        log_probs = logits.log_softmax(dim=-1)
        ce = -log_probs.gather(-1, y.unsqueeze(-1)).squeeze(-1) * valid
        g = log_probs.exp()
        g.scatter_add_(-1, y.unsqueeze(-1), -torch.ones_like(g[..., :1]))
        g = g * (valid / valid.sum(dim=1, keepdim=True).clamp(min=1)).unsqueeze(-1)
        grads = {}
        for i in range(len(keys) - 1, -1, -1):
            w, bias = keys[i]
            grads[w] = torch.bmm(g.transpose(1, 2), activations[i])
            grads[bias] = g.sum(dim=1)
            if i:
                g = torch.bmm(g, params[w]) * (pre[i - 1] > 0)
        return grads, ce

    return f


STACKABLE = (nn.Conv2d, nn.ReLU, nn.MaxPool2d, nn.Flatten, nn.Linear)


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
        if isinstance(m, nn.Linear) and (m.bias is None or spatial and not flattened):
            return None
    return leaves


def stacked_grad_fn(model: nn.Module, layers: list[tuple[str, nn.Module]]):
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

    def forward(params, x):
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
                h = h.clamp(min=0)
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

    def f(params, buffers, x, y, valid):
        leaves = {n: p.detach().requires_grad_(True) for n, p in params.items()}
        with torch.enable_grad():
            logits = forward(leaves, x)
            ce = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="none").view_as(y)
            ce = ce * valid
            loss = (ce.sum(dim=1) / valid.sum(dim=1).clamp(min=1)).sum()
            grads = torch.autograd.grad(loss, list(leaves.values()))
        return dict(zip(leaves, grads)), ce.detach()

    return f


CPU_CHUNK_BYTES = 24 * 2**20
"""Default activation budget of one chunk of clients on a CPU (:func:`cpu_chunked`): chosen with
``benchmarks/bench_engine.py --cpu-chunk-mib`` on a CPU with a 32 MiB L3 cache."""


def cpu_chunked(grad_fn, model: nn.Module, chunk_bytes: int = CPU_CHUNK_BYTES):
    """Run ``grad_fn`` on a CPU over chunks of clients whose activations fit in ``chunk_bytes``.

    One computation over all K clients streams every activation through main memory; chunks sized to
    the cache keep them there (LeNet-5, 100 clients x 32 samples: about 1.5x faster per step). Each
    client's gradient does not depend on the others, so the results are those of one call (up to the
    summation order inside the convolutions; tested to 1e-6). On other devices, and when all clients
    fit, ``grad_fn`` runs once.

    Args:
        grad_fn: a function with the contract of the module docstring.
        chunk_bytes: activation budget per chunk, estimated as clients x batch size x
            :func:`fedenv.models.count_activations` x the parameters' element size; at least one client
            per chunk.

    Returns:
        A function with the same contract, ``grad_fn``'s name (via ``functools.wraps``) and the attribute
        ``chunk_bytes``.

    Raises:
        ValueError: ``chunk_bytes`` < 1.
    """
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes={chunk_bytes!r} must be >= 1")
    per_sample = {}  # (input shape, dtype) -> activation values of one sample

    @functools.wraps(grad_fn)
    def f(params, buffers, x, y, valid):
        k, b = y.shape
        if x.device.type != "cpu":
            return grad_fn(params, buffers, x, y, valid)
        key = (tuple(x.shape[2:]), x.dtype)
        if key not in per_sample:
            per_sample[key] = count_activations(model, key[0], x.dtype)
        itemsize = next(iter(params.values())).element_size()
        chunk = max(1, chunk_bytes // (per_sample[key] * b * itemsize))
        if chunk >= k:
            return grad_fn(params, buffers, x, y, valid)
        parts = [grad_fn({n: p[i:i + chunk] for n, p in params.items()},
                         {n: t[i:i + chunk] for n, t in buffers.items()},  # views: updated in place
                         x[i:i + chunk], y[i:i + chunk], valid[i:i + chunk]) for i in range(0, k, chunk)]
        return {n: torch.cat([g[n] for g, _ in parts]) for n in params}, torch.cat([ce for _, ce in parts])

    f.chunk_bytes = chunk_bytes
    return f


def batched_grad_fn(model: nn.Module, engine: str = "auto", cpu_chunk_bytes: int | None = CPU_CHUNK_BYTES):
    """The per-client gradient function for ``model``.

    Args:
        engine: ``auto`` (the MLP fast path or the grouped-convolution path when the model allows one,
            else vmap) or ``vmap`` (always the general path, for ablations and benchmarks).
        cpu_chunk_bytes: activation budget of one chunk of clients for the grouped-convolution path on
            a CPU (:func:`cpu_chunked`); None: all clients at once. The other paths always take all
            clients at once: the MLP's activations are small, and for ResNet-18 through vmap, chunks of
            one client gained 5 % while changing the summation order, which BatchNorm over a few samples
            amplifies past 1e-5 from the reference loop.

    Raises:
        ValueError: unknown engine, or ``cpu_chunk_bytes`` < 1.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine={engine!r} is not known; allowed: {', '.join(ENGINES)}")
    if cpu_chunk_bytes is not None and cpu_chunk_bytes < 1:
        raise ValueError(f"cpu_chunk_bytes={cpu_chunk_bytes!r} must be >= 1 or None")
    if engine == "vmap":
        return vmap_grad_fn(model)
    if isinstance(model, MLP):
        return mlp_grad_fn(model)
    layers = stackable_layers(model)
    if not layers:
        return vmap_grad_fn(model)
    path = stacked_grad_fn(model, layers)
    return path if cpu_chunk_bytes is None else cpu_chunked(path, model, cpu_chunk_bytes)
