import functools

import numpy as np
import pytest
import torch

from fedenv.data import load_dataset, partition_fedmarl
from fedenv.engine import (
    Federation,
    LocalTrainingConfig,
    batched_grad_fn,
    make_schedule,
    train_batched,
    train_reference,
)
from fedenv.models import build_model


@functools.cache
def mnist5k():
    return load_dataset("mnist5k")


def generators(n, base=0):
    return [torch.Generator().manual_seed(base + i) for i in range(n)]


def round_inputs(model_name, config, num_clients=6, epochs=2):
    """A federation of small, unequal clients (padded steps happen), its schedule and stacked start."""
    data = mnist5k()
    shards = partition_fedmarl(data.train_y.numpy(), num_clients, np.random.default_rng(0))
    shards = [s[: 40 + 15 * i] for i, s in enumerate(shards)]
    fed = Federation(build_model(model_name, (1, 28, 28), 10, seed=0), data, shards, config, torch.device("cpu"))
    schedule = make_schedule(fed.client_indices, epochs, config.batch_size, generators(num_clients))
    params = {n: p.unsqueeze(0).repeat(num_clients, *[1] * p.dim()) for n, p in fed.global_params.items()}
    momentum = {n: torch.zeros_like(p) for n, p in params.items()}
    return fed, schedule, params, momentum


CONFIGS = [
    LocalTrainingConfig(batch_size=16, lr=0.05),
    LocalTrainingConfig(batch_size=16, lr=0.02, momentum=0.9, weight_decay=1e-3, fedprox_mu=0.1),
]


@pytest.mark.parametrize("engine", ["auto", "vmap"])
@pytest.mark.parametrize("model_name", ["mlp", "lenet5", "lenet5-classic"])
@pytest.mark.parametrize("config", CONFIGS)
def test_batched_round_equals_the_reference_loop(model_name, config, engine):
    fed, schedule, params, momentum = round_inputs(model_name, config)
    args = (fed.model, params, momentum, fed.global_params, fed.train_x, fed.train_y, schedule, config)
    batched = train_batched(*args, grad_fn=batched_grad_fn(fed.model, engine))
    reference = train_reference(*args)
    for name in params:
        assert torch.allclose(batched.params[name], reference.params[name], atol=1e-5, rtol=0), name
        assert torch.allclose(batched.momentum[name], reference.momentum[name], atol=1e-5, rtol=0), name
        assert not torch.equal(batched.params[name], params[name])  # it did train
    assert torch.allclose(batched.loss_sum.cpu(), reference.loss_sum.cpu(), rtol=1e-5)
    assert torch.allclose(batched.loss_sq_sum.cpu(), reference.loss_sq_sum.cpu(), rtol=1e-5)
    assert batched.samples.tolist() == [2 * len(i) for i in fed.client_indices]


def test_momentum_without_decay_or_prox_takes_the_fused_mlp_step_and_equals_the_reference_loop():
    config = LocalTrainingConfig(batch_size=16, lr=0.02, momentum=0.9)
    fed, schedule, params, momentum = round_inputs("mlp", config)
    order = torch.tensor([5, 0, 3, 1, 4, 2])  # not sorted by size: the result is unsorted at the end
    schedule = type(schedule)(schedule.index[:, order], schedule.valid[:, order])
    args = (fed.model, params, momentum, fed.global_params, fed.train_x, fed.train_y, schedule, config)
    batched, reference = train_batched(*args), train_reference(*args)
    for name in params:
        assert torch.allclose(batched.params[name], reference.params[name], atol=1e-5, rtol=0), name
        assert torch.allclose(batched.momentum[name], reference.momentum[name], atol=1e-5, rtol=0), name
    assert torch.allclose(batched.loss_sum, reference.loss_sum, rtol=1e-5)
    assert torch.allclose(batched.loss_sq_sum, reference.loss_sq_sum, rtol=1e-5)


def test_without_momentum_the_given_buffers_are_returned_and_the_losses_follow_the_clients():
    fed, schedule, params, momentum = round_inputs("lenet5-classic", CONFIGS[0], num_clients=4)
    order = torch.tensor([2, 0, 3, 1])
    schedule = type(schedule)(schedule.index[:, order], schedule.valid[:, order])
    args = (fed.model, params, momentum, fed.global_params, fed.train_x, fed.train_y, schedule, CONFIGS[0])
    batched, reference = train_batched(*args), train_reference(*args)
    assert batched.momentum is momentum
    assert torch.allclose(batched.loss_sum, reference.loss_sum, rtol=1e-5)
    assert batched.samples.tolist() == reference.samples.tolist()


@pytest.mark.parametrize("gather_bytes", [1, 16 * 784 * 4 * 3, 2**30],
                         ids=["one-step-blocks", "few-steps", "one-block"])
def test_minibatches_are_each_steps_active_clients_samples_however_many_steps_are_gathered_at_once(
        monkeypatch, gather_bytes):
    from fedenv.engine import local_sgd

    fed, schedule, _, _ = round_inputs("mlp", CONFIGS[0])
    _, active = local_sgd._longest_first(schedule)
    active[1] = 0  # a step nobody computes is skipped
    monkeypatch.setattr(local_sgd, "GATHER_BYTES", gather_bytes)
    items = list(local_sgd._minibatches(fed.train_x, fed.train_y, schedule.index, active))
    assert [(step, n) for step, n, _, _ in items] == [(s, n) for s, n in enumerate(active) if n]
    for step, n, xs, ys in items:
        assert torch.equal(xs, fed.train_x[schedule.index[step, :n]])
        assert torch.equal(ys, fed.train_y[schedule.index[step, :n]])


def test_clients_in_any_order_get_the_results_of_the_sorted_order_and_inputs_stay_untouched():
    fed, schedule, params, momentum = round_inputs("mlp", CONFIGS[1], num_clients=4)
    before = {n: p.clone() for n, p in params.items()}
    order = torch.tensor([3, 1, 0, 2])  # the largest client (3) first, the others not by size
    shuffled = type(schedule)(schedule.index[:, order], schedule.valid[:, order])
    args = (fed.model, params, momentum, fed.global_params, fed.train_x, fed.train_y)
    whole = train_batched(*args, schedule, CONFIGS[1])
    permuted = train_batched(*args, shuffled, CONFIGS[1])
    for name in params:
        assert torch.allclose(permuted.params[name], whole.params[name][order], atol=1e-6), name
        assert torch.equal(params[name], before[name]), name
    assert torch.allclose(permuted.loss_sum, whole.loss_sum[order])
    assert permuted.samples.tolist() == whole.samples[order].tolist()


def test_buffers_must_match_the_model():
    fed, schedule, params, momentum = round_inputs("mlp", CONFIGS[0], num_clients=2)
    with pytest.raises(ValueError, match=r"buffers \[\] must be passed stacked per client; got \['bn'\]"):
        train_batched(fed.model, params, momentum, fed.global_params, fed.train_x, fed.train_y, schedule,
                      CONFIGS[0], buffers={"bn": torch.zeros(2)})
