import pytest
import torch
from torch import nn

from fedenv.engine import LocalTrainingConfig
from fedenv.engine.grad_fns import (
    batched_grad_fn,
    cpu_chunked,
    mlp_grad_fn,
    sgd_step_of,
    sgd_update,
    stackable_layers,
    stacked_grad_fn,
    vmap_grad_fn,
)
from fedenv.models import count_activations
from tests.test_engine_local_sgd import CONFIGS, round_inputs


def last_step(model_name):
    """Inputs of the last step of a round (some clients padded there)."""
    fed, schedule, params, _ = round_inputs(model_name, CONFIGS[0])
    step = schedule.index.shape[0] - 1
    valid = schedule.valid[step].float()
    return fed, params, fed.train_x[schedule.index[step]], fed.train_y[schedule.index[step]], valid


@pytest.mark.parametrize("model_name", ["mlp", "lenet5", "lenet5-classic"])
def test_fast_path_gradients_equal_vmap_gradients(model_name):
    fed, params, x, y, valid = last_step(model_name)
    assert (valid.sum(1) < 16).any()
    fast_fn = mlp_grad_fn(fed.model) if model_name == "mlp" else stacked_grad_fn(fed.model, stackable_layers(fed.model))
    fast, fast_loss = fast_fn(params, {}, x, y, valid)
    general, general_loss = vmap_grad_fn(fed.model)(params, {}, x, y, valid)
    assert fast_loss.shape == (6, 16) and (fast_loss[valid == 0] == 0).all()
    for name in params:
        assert torch.allclose(fast[name], general[name], atol=1e-6), name
    assert torch.allclose(fast_loss, general_loss, atol=1e-5)
    assert batched_grad_fn(fed.model).__qualname__.startswith(("mlp_grad_fn", "stacked_grad_fn"))


@pytest.mark.parametrize("layers, input_shape, classes", [
    # channels-last activations flattened, then a ReLU before the first Linear
    ([nn.Conv2d(2, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.ReLU(), nn.Linear(36, 5)], (2, 8, 8), 5),
    # ends flattened, no Linear: the logits are the features in (C, H, W) order
    ([nn.Conv2d(2, 3, 3, padding=1), nn.MaxPool2d(2), nn.Flatten()], (2, 4, 4), 12),
    # no images at all
    ([nn.Linear(7, 6), nn.ReLU(), nn.Linear(6, 4)], (7,), 4),
    # a Linear on the last dimension of a (2, 7) sample, then a Flatten
    ([nn.Linear(7, 6), nn.ReLU(), nn.Flatten(), nn.Linear(12, 4)], (2, 7), 4),
    # a Flatten first, on samples that are not (C, H, W)
    ([nn.Flatten(), nn.Linear(12, 4)], (3, 4), 4),
    # strided, dilated and padded convolution; ceil-mode pooling with padding
    ([nn.Conv2d(3, 4, 3, stride=2, padding=2, dilation=2), nn.ReLU(), nn.MaxPool2d(3, 2, 1, ceil_mode=True),
      nn.Flatten(), nn.Linear(36, 5)], (3, 9, 9), 5),
], ids=["conv-flatten-relu-linear", "conv-flatten", "linear-only", "linear-on-2d-samples", "flatten-2d-samples",
        "strided-dilated-ceil"])
def test_grouped_convolution_path_equals_vmap_on_other_stacks(layers, input_shape, classes):
    model = nn.Sequential(*layers)
    gen = torch.Generator().manual_seed(0)
    params = {n: p.detach() + 0.1 * torch.randn(3, *p.shape, generator=gen) for n, p in model.named_parameters()}
    x = torch.randn(3, 5, *input_shape, generator=gen)
    y = torch.randint(0, classes, (3, 5), generator=gen)
    valid = torch.tensor([[1.0] * 5, [1.0] * 3 + [0.0] * 2, [1.0] * 5])
    layers_found = stackable_layers(model)
    assert layers_found is not None
    fast, fast_loss = stacked_grad_fn(model, layers_found)(params, {}, x, y, valid)
    general, general_loss = vmap_grad_fn(model)(params, {}, x, y, valid)
    for name in params:
        assert torch.allclose(fast[name], general[name], atol=1e-6), name
    assert torch.allclose(fast_loss, general_loss, atol=1e-6)


@pytest.mark.parametrize("layers", [
    [nn.Conv2d(1, 2, 3, padding=1, padding_mode="reflect"), nn.Flatten(), nn.Linear(32, 3)],
    [nn.Conv2d(2, 2, 3, groups=2), nn.Flatten(), nn.Linear(8, 3)],
    [nn.Conv2d(1, 2, 3, bias=False), nn.Flatten(), nn.Linear(8, 3)],
    [nn.Flatten(), nn.Linear(16, 3, bias=False)],
    [nn.Conv2d(1, 2, 3), nn.Flatten(start_dim=2), nn.Linear(4, 3)],
    [nn.MaxPool2d(2, return_indices=True)],
    [nn.Conv2d(1, 2, 3), nn.Linear(2, 3)],  # a Linear on the width of images
    [nn.Flatten(), nn.ReLU(), nn.MaxPool2d(2)],
], ids=["reflect-padding", "grouped-conv", "conv-without-bias", "linear-without-bias", "partial-flatten",
        "pool-indices", "linear-on-images", "pool-after-flatten"])
def test_stacks_the_grouped_convolution_path_cannot_compute_take_the_vmap_path(layers):
    model = nn.Sequential(*layers)
    assert stackable_layers(model) is None
    assert batched_grad_fn(model).__qualname__.startswith("vmap_grad_fn")


def test_vmap_engine_forces_the_general_path_and_unknown_engines_are_rejected():
    fed, _, _, _, _ = last_step("mlp")
    assert batched_grad_fn(fed.model, "vmap").__qualname__.startswith("vmap_grad_fn")
    assert hasattr(batched_grad_fn(fed.model, "auto"), "sgd_step")  # the default engine fuses the MLP's step
    assert not hasattr(batched_grad_fn(fed.model, "unfused"), "sgd_step")
    with pytest.raises(ValueError, match="engine='jit' is not known; allowed: auto, unfused, vmap"):
        batched_grad_fn(fed.model, "jit")


@pytest.mark.parametrize("model_name", ["mlp", "lenet5"])
def test_cpu_chunks_of_clients_give_the_gradients_of_one_call(model_name):
    fed, params, x, y, valid = last_step(model_name)
    per_client = count_activations(fed.model, (1, 28, 28)) * 16 * 4  # bytes of one client's batch of 16
    one_call = batched_grad_fn(fed.model, cpu_chunk_bytes=10**12)
    whole, whole_loss = one_call(params, {}, x, y, valid)
    chunk_sizes = []

    def counted(*args):
        chunk_sizes.append(args[2].shape[0])
        return one_call(*args)

    parts, parts_loss = cpu_chunked(counted, fed.model, chunk_bytes=2 * per_client + 1)(params, {}, x, y, valid)
    assert chunk_sizes == [2, 2, 2]
    for name in params:
        assert torch.allclose(parts[name], whole[name], atol=1e-6), name
    assert torch.allclose(parts_loss, whole_loss, atol=1e-6)
    with pytest.raises(ValueError, match="cpu_chunk_bytes=0 must be >= 1"):
        batched_grad_fn(fed.model, cpu_chunk_bytes=0)
    with pytest.raises(ValueError, match="chunk_bytes=0 must be >= 1"):
        cpu_chunked(one_call, fed.model, chunk_bytes=0)


def test_off_a_cpu_chunks_keep_every_activation_tensor_within_32_bit_indexing():
    # LeNet-5 per sample, by hand: conv 6x28x28 = 4704, ReLU 4704, pool 1176, conv 16x10x10 = 1600, ReLU 1600,
    # pool 400, flatten 400, 120, 120, 84, 84, 10: 15,002 values; x 32 samples = 480,064 per client, and
    # (2**31 - 1) // 480,064 = 4473 clients per chunk (CUDA's convolutions index with 32-bit integers)
    fed, params, _, _, _ = last_step("lenet5")
    k, b = 10_000, 32
    x = torch.empty(k, b, 1, 28, 28, device="meta")
    y, valid = torch.empty(k, b, dtype=torch.long, device="meta"), torch.empty(k, b, device="meta")
    params = {n: p[0].to("meta").expand(k, *p.shape[1:]) for n, p in params.items()}
    chunk_sizes = []

    def counted(params, buffers, x, y, valid):
        chunk_sizes.append(x.shape[0])
        return {n: torch.empty_like(p) for n, p in params.items()}, torch.empty(x.shape[:2], device="meta")

    grads, loss = cpu_chunked(counted, fed.model)(params, {}, x, y, valid)
    assert chunk_sizes == [4473, 4473, 1054]
    assert loss.shape == (k, b) and all(grads[n].shape == params[n].shape for n in params)


def test_cpu_chunks_update_each_clients_batchnorm_statistics_in_place():
    # the module is float32, the clients' weights float64 (the chunk estimate must not mind)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 3))
    gen = torch.Generator().manual_seed(0)
    params = {n: p.detach().double() + 0.1 * torch.randn(4, *p.shape, generator=gen, dtype=torch.float64)
              for n, p in model.named_parameters()}
    buffers = {n: (b.double() if b.is_floating_point() else b).unsqueeze(0).repeat(4, *[1] * b.dim())
               for n, b in model.named_buffers()}
    x = torch.randn(4, 5, 1, 4, 4, generator=gen, dtype=torch.float64)
    y, valid = torch.randint(0, 3, (4, 5), generator=gen), torch.ones(4, 5, dtype=torch.float64)
    whole_buffers = {n: b.clone() for n, b in buffers.items()}
    whole, _ = vmap_grad_fn(model)(params, whole_buffers, x, y, valid)
    chunk_bytes = count_activations(model, (1, 4, 4), torch.float64) * 5 * 8  # one client per chunk
    parts, _ = cpu_chunked(vmap_grad_fn(model), model, chunk_bytes)(params, buffers, x, y, valid)
    for name in params:
        assert torch.allclose(parts[name], whole[name], atol=1e-12), name
    for name, chunked in buffers.items():
        assert torch.equal(chunked, whole_buffers[name]), name
    assert buffers["1.num_batches_tracked"].tolist() == [1, 1, 1, 1]
    assert not torch.equal(buffers["1.running_mean"][0], buffers["1.running_mean"][1])


FLOAT32_EPS = torch.finfo(torch.float32).eps
STEP_CONFIGS = [
    LocalTrainingConfig(batch_size=16, lr=0.05),
    LocalTrainingConfig(batch_size=16, lr=0.02, momentum=0.9),
    LocalTrainingConfig(batch_size=16, lr=0.02, momentum=0.9, weight_decay=1e-3, fedprox_mu=0.1),
]


def stepped(step, params, config, x, y, valid, anchor):
    """Two steps of ``step`` from copies of ``params`` and a nonzero momentum: ``(params, momentum, ce)``."""
    params = {n: p.clone() for n, p in params.items()}
    momentum = {n: torch.full_like(p, 0.01) for n, p in params.items()}
    ces = [step(params, momentum, anchor, {}, x, y, valid, config) for _ in range(2)]
    return params, momentum, torch.stack(ces)


@pytest.mark.parametrize("config", STEP_CONFIGS, ids=["plain", "momentum", "decay-prox"])
def test_fused_mlp_step_equals_gradients_then_the_sgd_update(config):
    fed, params, x, y, valid = last_step("mlp")
    grad_fn = mlp_grad_fn(fed.model, fused_step=True)
    anchor = {n: p[0] * 0.5 for n, p in params.items()}

    def unfused(params, momentum, anchor, buffers, x, y, valid, config):
        grads, ce = grad_fn(params, buffers, x, y, valid)
        sgd_update(params, grads, momentum, anchor, config)
        return ce

    fused = stepped(grad_fn.sgd_step, params, config, x, y, valid, anchor)
    plain = stepped(unfused, params, config, x, y, valid, anchor)
    for name in params:
        # equal up to float32 rounding: a few units in the last place of values up to about 1.5
        assert torch.allclose(fused[0][name], plain[0][name], atol=1e-7, rtol=4 * FLOAT32_EPS), name
        assert torch.allclose(fused[1][name], plain[1][name], atol=1e-7, rtol=4 * FLOAT32_EPS), name
        assert not torch.equal(fused[0][name], params[name])
    assert torch.allclose(fused[2], plain[2], atol=1e-6)
    assert sgd_step_of(grad_fn) is grad_fn.sgd_step
    assert not hasattr(mlp_grad_fn(fed.model), "sgd_step")  # the default engine keeps gradients, then the update


def test_cpu_chunked_step_updates_each_chunk_as_one_call_updates_all():
    fed, params, x, y, valid = last_step("lenet5")
    per_client = count_activations(fed.model, (1, 28, 28)) * 16 * 4
    whole = batched_grad_fn(fed.model, cpu_chunk_bytes=None)
    chunked = batched_grad_fn(fed.model, cpu_chunk_bytes=2 * per_client + 1)  # 3 chunks of 2 clients
    anchor = {n: p * 0.5 for n, p in params.items()}  # one anchor per client: sliced per chunk
    config = STEP_CONFIGS[2]
    by_chunks = stepped(sgd_step_of(chunked), params, config, x, y, valid, anchor)
    at_once = stepped(sgd_step_of(whole), params, config, x, y, valid, anchor)
    for name in params:
        assert torch.allclose(by_chunks[0][name], at_once[0][name], atol=1e-6), name
        assert torch.allclose(by_chunks[1][name], at_once[1][name], atol=1e-6), name
    assert torch.allclose(by_chunks[2], at_once[2], atol=1e-6)
