"""Chunking: a gradient function run over chunks of clients, cache-sized on a CPU and within 32-bit indexing on
other devices."""

from __future__ import annotations

import functools

import torch
from torch import nn

from fedenv.engine.grad_fns.base import GradFn
from fedenv.engine.grad_fns.step import sgd_step_of
from fedenv.models import count_activations

CPU_CHUNK_BYTES = 24 * 2**20
"""Default activation budget of one chunk of clients on a CPU (:func:`cpu_chunked`): chosen with
``benchmarks/bench_engine.py --cpu-chunk-mib`` on a CPU with a 32 MiB L3 cache."""
INDEX_LIMIT = 2**31 - 1
"""Most elements one activation tensor of a chunk may hold off a CPU: CUDA's convolution kernels index with 32-bit
integers and refuse a larger tensor (``canUse32BitIndexMath``; seen with LeNet-5 at 16,384 candidates x 32
samples in one grouped convolution on an H200)."""


def cpu_chunked(grad_fn: GradFn, model: nn.Module, chunk_bytes: int = CPU_CHUNK_BYTES) -> GradFn:
    """Run ``grad_fn`` on a CPU over chunks of clients whose activations fit in ``chunk_bytes``.

    One computation over all K clients streams every activation through main memory; chunks sized to
    the cache keep them there (LeNet-5, 100 clients x 32 samples: about 1.5x faster per step). Each
    client's gradient does not depend on the others, so the results are those of one call (up to the
    summation order inside the convolutions; tested to 1e-6). On other devices a chunk takes as many clients
    as keep all of one sample's activations (their sum over the layers, a conservative bound on the largest
    tensor) times the batch within :data:`INDEX_LIMIT` elements: 4,473 LeNet-5 clients x 32 samples, where one
    grouped convolution over all clients would fail past about 14,000. When all clients fit, ``grad_fn`` runs
    once.

    Args:
        grad_fn: a :class:`~fedenv.engine.grad_fns.base.GradFn`.
        chunk_bytes: activation budget per chunk, estimated as clients x batch size x
            :func:`fedenv.models.count_activations` x the parameters' element size; at least one client
            per chunk.

    Returns:
        A function with the same contract, ``grad_fn``'s name (via ``functools.wraps``), the attribute
        ``chunk_bytes`` and an ``sgd_step`` (:class:`~fedenv.engine.grad_fns.step.StepFn`) that steps
        each chunk's clients as soon as their gradients are there (while they are in the cache; the
        chunks' gradients are never joined).

    Raises:
        ValueError: ``chunk_bytes`` < 1.
    """
    if chunk_bytes < 1:
        raise ValueError(f"chunk_bytes={chunk_bytes!r} must be >= 1")
    per_sample = {}  # (input shape, dtype) -> activation values of one sample

    def clients_per_chunk(params, x, y) -> int:
        """Clients per chunk: within ``chunk_bytes`` on a CPU, within :data:`INDEX_LIMIT` elements elsewhere."""
        b = y.shape[1]
        key = (tuple(x.shape[2:]), x.dtype)
        if key not in per_sample:  # a layer's output, or the input, holds at most all of one sample's values
            per_sample[key] = max(count_activations(model, key[0], x.dtype), x[0, 0].numel())
        if x.device.type != "cpu":
            return max(1, INDEX_LIMIT // (per_sample[key] * b))
        itemsize = next(iter(params.values())).element_size()
        return max(1, chunk_bytes // (per_sample[key] * b * itemsize))

    @functools.wraps(grad_fn)
    def f(params, buffers, x, y, valid):
        k, chunk = y.shape[0], clients_per_chunk(params, x, y)
        if chunk >= k:
            return grad_fn(params, buffers, x, y, valid)
        parts = [grad_fn({n: p[i:i + chunk] for n, p in params.items()},
                         {n: t[i:i + chunk] for n, t in buffers.items()},  # views: updated in place
                         x[i:i + chunk], y[i:i + chunk], valid[i:i + chunk]) for i in range(0, k, chunk)]
        return {n: torch.cat([g[n] for g, _ in parts]) for n in params}, torch.cat([ce for _, ce in parts])

    inner_step = sgd_step_of(grad_fn)

    def sgd_step(params, momentum, anchor, buffers, x, y, valid, config):
        k, chunk = y.shape[0], clients_per_chunk(params, x, y)
        if chunk >= k:
            return inner_step(params, momentum, anchor, buffers, x, y, valid, config)
        ce = []
        for i in range(0, k, chunk):
            rows = slice(i, i + chunk)  # views: every update lands in the caller's tensors
            ce.append(inner_step({n: p[rows] for n, p in params.items()}, {n: m[rows] for n, m in momentum.items()},
                                 {n: a[rows] if a.dim() == params[n].dim() else a for n, a in anchor.items()},
                                 {n: t[rows] for n, t in buffers.items()}, x[rows], y[rows], valid[rows], config))
        return torch.cat(ce)

    f.sgd_step = sgd_step
    f.chunk_bytes = chunk_bytes
    return f
