"""Fast gradient path for :class:`~fedenv.models.MLP`: forward and backward written out with batched
matrix products, no autograd (docs/design.md, section 13: 2.5x faster than vmap on CPU); its SGD step
is fused into the weight-gradient products."""

from __future__ import annotations

import torch
from torch import nn

from fedenv.engine.grad_fns.base import GradFn
from fedenv.engine.grad_fns.step import sgd_step_of
from fedenv.models import MLP


def mlp_grad_fn(model: MLP, fused_step: bool = False) -> GradFn:
    """Fast path for :class:`~fedenv.models.MLP`: forward and backward written out with batched matrix
    products (``torch.baddbmm``/``bmm``), no autograd. Same contract and results as
    :func:`~fedenv.engine.grad_fns.vmap.vmap_grad_fn` (tested against it); about 2x faster on CPU
    (docs/design.md, section 13).

    With ``fused_step`` the returned function has an ``sgd_step`` (:class:`~fedenv.engine.grad_fns.step.StepFn`) that
    writes each weight's gradient product straight into the weights (``W.baddbmm_(g^T, a, alpha=-lr)``),
    or into the momentum buffer (``beta = momentum``), instead of materialising the gradient; the same
    update as :func:`~fedenv.engine.grad_fns.step.sgd_update` up to float rounding (tested). With weight
    decay or a FedProx term it computes the gradients and calls that update.
    """
    names = [name for name, m in model.net.named_children() if isinstance(m, nn.Linear)]
    keys = [(f"net.{n}.weight", f"net.{n}.bias") for n in names]

    def forward(params, x, y, valid):
        """``(inputs of each layer, pre-activations, ce (K, B), d loss / d logits (K, B, C))``."""
        k, b = y.shape
        activations = [x.reshape(k, b, -1)]
        pre = []
        for i, (w, bias) in enumerate(keys):
            z = torch.baddbmm(params[bias].unsqueeze(1), activations[-1], params[w].transpose(1, 2))
            pre.append(z)
            activations.append(torch.relu(z) if i < len(keys) - 1 else z)
        logits = activations.pop()
        log_probs = logits.log_softmax(dim=-1)
        ce = -log_probs.gather(-1, y.unsqueeze(-1)).squeeze(-1) * valid
        g = log_probs.exp()
        g.scatter_add_(-1, y.unsqueeze(-1), -torch.ones_like(g[..., :1]))
        g.mul_((valid / valid.sum(dim=1, keepdim=True).clamp(min=1)).unsqueeze(-1))
        return activations, pre, ce, g

    def f(params, buffers, x, y, valid):
        activations, pre, ce, g = forward(params, x, y, valid)
        grads = {}
        for i in range(len(keys) - 1, -1, -1):
            w, bias = keys[i]
            grads[w] = torch.bmm(g.transpose(1, 2), activations[i])
            grads[bias] = g.sum(dim=1)
            if i:
                g = torch.ops.aten.threshold_backward(torch.bmm(g, params[w]), pre[i - 1], 0)  # ReLU backward
        return grads, ce

    unfused = sgd_step_of(f)

    def sgd_step(params, momentum, anchor, buffers, x, y, valid, config):
        if config.weight_decay or config.fedprox_mu:
            return unfused(params, momentum, anchor, buffers, x, y, valid, config)
        activations, pre, ce, g = forward(params, x, y, valid)
        for i in range(len(keys) - 1, -1, -1):
            w, bias = keys[i]
            upstream = torch.bmm(g, params[w]) if i else None  # with the weights before this step
            if config.momentum:
                momentum[w].baddbmm_(g.transpose(1, 2), activations[i], beta=config.momentum)
                momentum[bias].mul_(config.momentum).add_(g.sum(dim=1))
                params[w].add_(momentum[w], alpha=-config.lr)
                params[bias].add_(momentum[bias], alpha=-config.lr)
            else:
                params[w].baddbmm_(g.transpose(1, 2), activations[i], alpha=-config.lr)
                params[bias].add_(g.sum(dim=1), alpha=-config.lr)
            if i:
                g = torch.ops.aten.threshold_backward(upstream, pre[i - 1], 0)
        return ce

    if fused_step:
        f.sgd_step = sgd_step
    return f
