"""Per-client gradient functions of the batched engine: one call computes every client's gradient.

All follow one contract, :class:`~fedenv.engine.grad_fns.base.GradFn`. Three paths, tested against each
other and against the per-client reference loop:

- :func:`vmap_grad_fn` (:mod:`.vmap`), the general path: ``torch.func.vmap(grad(loss))`` over any module;
- :func:`mlp_grad_fn` (:mod:`.mlp`), for :class:`~fedenv.models.MLP`: forward and backward written out
  with batched matrix products, no autograd (docs/design.md, section 13: 2.5x faster than vmap on CPU);
- :func:`stacked_grad_fn` (:mod:`.grouped_conv`), for sequential stacks of Conv2d / ReLU / MaxPool2d /
  Flatten / Linear (LeNet-5): the clients' convolutions become one grouped convolution (``groups = K``)
  and their linear layers one batched matrix product, differentiated by ordinary autograd.

:func:`batched_grad_fn` (:mod:`.choose`) picks the path for a model; on a CPU it runs the
grouped-convolution path over cache-sized chunks of clients (:func:`cpu_chunked`, :mod:`.cpu_chunks`).
:func:`sgd_step_of` (:mod:`.step`) turns a gradient function into the SGD step the engine runs.
"""

from fedenv.engine.grad_fns.base import GradFn
from fedenv.engine.grad_fns.choose import batched_grad_fn
from fedenv.engine.grad_fns.cpu_chunks import CPU_CHUNK_BYTES, cpu_chunked
from fedenv.engine.grad_fns.grouped_conv import STACKABLE, stackable_layers, stacked_grad_fn
from fedenv.engine.grad_fns.mlp import mlp_grad_fn
from fedenv.engine.grad_fns.step import StepFn, sgd_step_of, sgd_update
from fedenv.engine.grad_fns.vmap import vmap_grad_fn

__all__ = [
    "CPU_CHUNK_BYTES", "STACKABLE", "GradFn", "StepFn", "batched_grad_fn", "cpu_chunked", "mlp_grad_fn", "sgd_step_of",
    "sgd_update", "stackable_layers", "stacked_grad_fn", "vmap_grad_fn",
]
