import numpy as np
import pytest
import torch
from torch import nn

from fedenv.aggregators import fedavg_weights, weighted_average
from fedenv.data import load_dataset, partition_fedmarl
from fedenv.batched import batched_grad_fn, cpu_chunked, mlp_grad_fn, stackable_layers, stacked_grad_fn, vmap_grad_fn
from fedenv.federation import Federation, LocalTrainingConfig, make_schedule, train_batched, train_reference
from fedenv.models import build_model, count_activations, count_macs, count_parameters


def generators(n, base=0):
    return [torch.Generator().manual_seed(base + i) for i in range(n)]


@pytest.fixture(scope="module")
def mnist5k():
    return load_dataset("mnist5k")


def round_inputs(data, model_name, config, num_clients=6, epochs=2):
    shards = partition_fedmarl(data.train_y.numpy(), num_clients, np.random.default_rng(0))
    shards = [s[: 40 + 15 * i] for i, s in enumerate(shards)]  # small and unequal: padded steps happen
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
@pytest.mark.parametrize("model_name", ["mlp", "lenet5"])
@pytest.mark.parametrize("config", CONFIGS)
def test_batched_round_equals_the_reference_loop(mnist5k, model_name, config, engine):
    fed, schedule, params, momentum = round_inputs(mnist5k, model_name, config)
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


@pytest.mark.parametrize("model_name", ["mlp", "lenet5"])
def test_fast_path_gradients_equal_vmap_gradients(mnist5k, model_name):
    fed, schedule, params, _ = round_inputs(mnist5k, model_name, CONFIGS[0])
    step = schedule.index.shape[0] - 1  # the last step: some clients padded
    valid = schedule.valid[step].float()
    assert (valid.sum(1) < 16).any()
    x, y = fed.train_x[schedule.index[step]], fed.train_y[schedule.index[step]]
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


@pytest.mark.parametrize("model_name", ["mlp", "lenet5"])
def test_cpu_chunks_of_clients_give_the_gradients_of_one_call(mnist5k, model_name):
    fed, schedule, params, _ = round_inputs(mnist5k, model_name, CONFIGS[0])
    step = schedule.index.shape[0] - 1  # the last step: some clients padded
    valid = schedule.valid[step].float()
    x, y = fed.train_x[schedule.index[step]], fed.train_y[schedule.index[step]]
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
    for name in buffers:
        assert torch.equal(buffers[name], whole_buffers[name]), name
    assert buffers["1.num_batches_tracked"].tolist() == [1, 1, 1, 1]
    assert not torch.equal(buffers["1.running_mean"][0], buffers["1.running_mean"][1])


def test_schedule_visits_each_sample_once_per_epoch():
    clients = [np.arange(10), np.arange(100, 103)]
    schedule = make_schedule(clients, epochs=2, batch_size=4, generators=generators(2))
    assert schedule.index.shape == (6, 2, 4)  # 2 epochs x ceil(10 / 4) steps for the larger client
    for k, indices in enumerate(clients):
        seen = schedule.index[:, k][schedule.valid[:, k]].tolist()
        assert sorted(seen) == sorted(indices.tolist() * 2)
    assert schedule.valid[2:, 1].sum() == 0  # the small client idles after its 2 single-batch epochs


def test_a_clients_minibatches_do_not_depend_on_other_clients():
    a = make_schedule([np.arange(20), np.arange(50, 60)], 1, 5, [torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)])
    b = make_schedule([np.arange(50, 60)], 1, 5, [torch.Generator().manual_seed(2)])
    assert torch.equal(a.index[:2, 1], b.index[:, 0])


def test_fedavg_weights_and_average_by_hand():
    weights = fedavg_weights([10.0, 30.0])
    assert weights.tolist() == [0.25, 0.75]
    stacked = {"w": torch.tensor([[1.0, 2.0], [5.0, 6.0]]), "steps": torch.tensor([4, 8])}
    averaged = weighted_average(stacked, weights)
    assert averaged["w"].tolist() == [4.0, 5.0]  # 0.25 * 1 + 0.75 * 5, 0.25 * 2 + 0.75 * 6
    assert averaged["steps"].dtype == torch.int64 and int(averaged["steps"]) == 7
    with pytest.raises(ValueError, match="not all 0"):
        weighted_average(stacked, torch.zeros(2))


def test_federation_round_aggregates_selected_clients_only(mnist5k):
    fed, _, _, _ = round_inputs(mnist5k, "mlp", CONFIGS[0])
    before = {k: v.clone() for k, v in fed.global_params.items()}
    clients = np.array([1, 3])
    result = fed.local_train(clients, 1, generators(2))
    fed.aggregate(clients, result)
    sizes = torch.tensor([len(fed.client_indices[c]) for c in clients], dtype=torch.float64)
    expected = (result.params["net.1.bias"] * (sizes / sizes.sum()).float()[:, None]).sum(0)
    assert torch.allclose(fed.global_params["net.1.bias"], expected)
    fed.aggregate(np.array([], dtype=int), result.rows([]))  # nobody: unchanged
    assert torch.allclose(fed.global_params["net.1.bias"], expected)
    assert not torch.equal(before["net.1.bias"], expected)


def test_model_sizes_by_hand():
    mlp = build_model("mlp", (1, 28, 28), 10, seed=0)
    assert count_parameters(mlp) == 784 * 200 + 200 + 200 * 10 + 10
    assert count_macs(mlp, (1, 28, 28)) == 784 * 200 + 200 * 10
    lenet = build_model("lenet5", (1, 28, 28), 10, seed=0)
    conv = 28 * 28 * 6 * 25 + 10 * 10 * 16 * 6 * 25
    assert count_macs(lenet, (1, 28, 28)) == conv + 400 * 120 + 120 * 84 + 84 * 10
    with pytest.raises(ValueError, match="allowed: mlp, lenet5"):
        build_model("vgg", (1, 28, 28), 10, seed=0)
    # leaf outputs: Flatten, Linear 200, ReLU, Linear 10
    assert count_activations(mlp, (1, 28, 28)) == 784 + 200 + 200 + 10
    # conv 6x28x28, ReLU, pool 6x14x14, conv 16x10x10, ReLU, pool 16x5x5, Flatten, 120, ReLU, 84, ReLU, 10
    expected = 2 * 6 * 28 * 28 + 6 * 14 * 14 + 2 * 16 * 10 * 10 + 2 * 400 + 2 * 120 + 2 * 84 + 10
    assert count_activations(lenet, (1, 28, 28)) == expected
    normed = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    normed[1].eval()
    assert count_activations(normed, (1, 4, 4)) == 2 * 2 * 2 * 2
    assert count_macs(normed, (1, 4, 4), torch.float64) == 2 * 2 * 2 * 9
    assert normed.training and not normed[1].training  # every module's mode and the buffers untouched
    assert normed[1].num_batches_tracked == 0


def test_model_init_is_seeded_and_leaves_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(1)
    torch.manual_seed(123)
    a = build_model("mlp", (1, 28, 28), 10, seed=5)
    assert torch.equal(torch.rand(1), expected)
    b = build_model("mlp", (1, 28, 28), 10, seed=5)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
