"""Which gradient path a model takes (:func:`batched_grad_fn`)."""

from __future__ import annotations

from torch import nn

from fedenv.config import ENGINES
from fedenv.engine.grad_fns.base import GradFn
from fedenv.engine.grad_fns.cpu_chunks import CPU_CHUNK_BYTES, cpu_chunked
from fedenv.engine.grad_fns.grouped_conv import stackable_layers, stacked_grad_fn
from fedenv.engine.grad_fns.mlp import mlp_grad_fn
from fedenv.engine.grad_fns.vmap import vmap_grad_fn
from fedenv.models import MLP
from fedenv.names import check_known


def batched_grad_fn(model: nn.Module, engine: str = "auto", cpu_chunk_bytes: int | None = CPU_CHUNK_BYTES) -> GradFn:
    """The per-client gradient function for ``model``.

    Args:
        engine: ``auto`` (the MLP fast path, with its SGD step fused into its weight-gradient products,
            or the grouped-convolution path when the model allows one, else vmap), ``unfused`` (as
            ``auto``, with the MLP's SGD step applied after its gradients: equal up to float rounding,
            which an RL run amplifies; the default of earlier releases) or ``vmap`` (always the general
            path, for ablations and benchmarks); see :data:`fedenv.config.ENGINES`.
        cpu_chunk_bytes: activation budget of one chunk of clients for the grouped-convolution path on
            a CPU (:func:`~fedenv.engine.grad_fns.cpu_chunks.cpu_chunked`); None: all clients at once.
            The other paths always take all clients at once: the MLP's activations are small, and for
            ResNet-18 through vmap, chunks of one client gained 5 % while changing the summation order,
            which BatchNorm over a few samples amplifies past 1e-5 from the reference loop.

    Raises:
        ValueError: unknown engine, or ``cpu_chunk_bytes`` < 1.
    """
    check_known(engine, ENGINES, "engine")
    if cpu_chunk_bytes is not None and cpu_chunk_bytes < 1:
        raise ValueError(f"cpu_chunk_bytes={cpu_chunk_bytes!r} must be >= 1 or None")
    if engine == "vmap":
        return vmap_grad_fn(model)
    if isinstance(model, MLP):
        return mlp_grad_fn(model, fused_step=engine == "auto")
    layers = stackable_layers(model)
    if not layers:
        return vmap_grad_fn(model)
    path = stacked_grad_fn(model, layers)
    return path if cpu_chunk_bytes is None else cpu_chunked(path, model, cpu_chunk_bytes)
