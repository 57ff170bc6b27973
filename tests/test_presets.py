"""Paper task presets: their models against the reference loop, BatchNorm handling, the CIFAR-10 and
LEAF readers, and one short episode per preset on tiny generated data."""

import math
import pickle
import re

import numpy as np
import pytest
import torch
from torch import nn

from fedenv.cli import env_config_from_args
from fedenv.data import LEAF_LETTERS, Dataset, load_dataset, partition_natural, read_cifar10_batch
from fedenv.engine import Federation, LocalTrainingConfig, make_schedule, train_batched, train_reference
from fedenv.env import ClientSelectionEnv
from fedenv.models import LSTMLayer, build_model, count_macs, has_batchnorm
from fedenv.presets import PRESETS, apply_preset
from tests.helpers import TINY_FEDERATION, make_cifar10_folder, make_leaf_folder, make_torchvision_folder
from tests.test_traces_importers import CALLS, Payload
from train_agents import build_parser


def generators(n):
    return [torch.Generator().manual_seed(7 + i) for i in range(n)]


def inputs_for(model_name, n, rng):
    if model_name == "lstm":
        return torch.as_tensor(rng.integers(0, len(LEAF_LETTERS), (n, 10))), len(LEAF_LETTERS)
    shape = (3, 32, 32) if model_name == "vgg6" else (1, 28, 28)
    return torch.as_tensor(rng.standard_normal((n, *shape)), dtype=torch.float32), 10


@pytest.mark.parametrize("model_name", ["resnet18", "vgg6", "lstm"])
def test_preset_models_train_batched_as_the_reference_loop(model_name):
    """In float64, so that the comparison does not rest on the CPU's float32 kernels: in float32 with one
    thread, an AMD EPYC's convolutions round the batched and the looped ResNet-18 apart by 4e-5 after these
    steps (BatchNorm over batches of 5 amplifies the rounding), while in float64 they agree to 1e-15."""
    rng = np.random.default_rng(0)
    x, classes = inputs_for(model_name, 36, rng)
    x = x.double() if x.is_floating_point() else x
    y = torch.as_tensor(rng.integers(0, classes, 36))
    model = build_model(model_name, tuple(x.shape[1:]), classes, seed=0).double()
    sizes = (8, 12, 16)
    clients = np.split(np.arange(36), np.cumsum(sizes)[:-1])
    drop_last = has_batchnorm(model)
    assert drop_last == (model_name == "resnet18")
    schedule = make_schedule(clients, 1, 5, generators(3), drop_last)  # 8, 12, 16 are not multiples of 5
    config = LocalTrainingConfig(batch_size=5, lr=0.02, momentum=0.9, weight_decay=1e-4)
    params = {n: p.detach().unsqueeze(0).repeat(3, *[1] * p.dim()) for n, p in model.named_parameters()}
    buffers = {n: b.unsqueeze(0).repeat(3, *[1] * b.dim()) for n, b in model.named_buffers()}
    momentum = {n: torch.zeros_like(p) for n, p in params.items()}
    global_params = dict(model.named_parameters())
    args = (model, params, momentum, global_params, x, y, schedule, config)
    batched = train_batched(*args, buffers={n: b.clone() for n, b in buffers.items()})
    reference = train_reference(*args, buffers={n: b.clone() for n, b in buffers.items()})
    for name in params:
        assert torch.allclose(batched.params[name], reference.params[name], atol=1e-10, rtol=0), name
        assert not torch.equal(batched.params[name], params[name]), name
    assert set(batched.buffers) == set(buffers)
    for name in buffers:
        assert torch.allclose(batched.buffers[name].double(), reference.buffers[name].double(), atol=1e-10), name
    if drop_last:  # BatchNorm: only full batches, statistics updated once per batch
        assert batched.samples.tolist() == [5, 10, 15]
        assert batched.buffers["bn1.num_batches_tracked"].tolist() == [1, 2, 3]
        assert not torch.equal(batched.buffers["bn1.running_mean"][0], batched.buffers["bn1.running_mean"][1])
    else:
        assert batched.samples.tolist() == list(sizes)
    assert torch.allclose(batched.loss_sum, reference.loss_sum, rtol=1e-10)


def bn_federation(sizes, batch_size=4):
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 26 * 26, 10))
    n = sum(sizes)
    data = Dataset("toy", torch.randn(n, 1, 28, 28), torch.arange(n) % 10, torch.randn(6, 1, 28, 28),
                   torch.arange(6) % 10, 10)
    clients = np.split(np.arange(n), np.cumsum(sizes)[:-1])
    return Federation(model, data, clients, LocalTrainingConfig(batch_size=batch_size), torch.device("cpu"))


def test_batchnorm_statistics_are_averaged_with_fedavg_weights_and_counters_stay_integers():
    fed = bn_federation([30, 10])
    result = fed.local_train(np.array([0, 1]), 1, generators(2))
    result.buffers["1.running_mean"][:] = torch.tensor([[1.0, 2.0], [5.0, 6.0]])
    result.buffers["1.running_var"][:] = torch.tensor([[1.0, 1.0], [3.0, 5.0]])
    result.buffers["1.num_batches_tracked"][:] = torch.tensor([3, 6])
    fed.aggregate(np.array([0, 1]), result)
    # FedAvg weights 30/40 and 10/40, worked by hand
    assert fed.global_buffers["1.running_mean"].tolist() == [2.0, 3.0]
    assert fed.global_buffers["1.running_var"].tolist() == [1.5, 2.0]
    assert fed.global_buffers["1.num_batches_tracked"].dtype == torch.int64
    assert int(fed.global_buffers["1.num_batches_tracked"]) == 4  # 0.75 * 3 + 0.25 * 6 = 3.75
    # evaluation uses the running statistics: a model whose statistics are shifted predicts differently
    before = fed.logits({n: p.unsqueeze(0) for n, p in fed.global_params.items()}, fed.test_x,
                        {n: b.unsqueeze(0) for n, b in fed.global_buffers.items()})
    shifted = {n: b.unsqueeze(0).clone() for n, b in fed.global_buffers.items()}
    shifted["1.running_mean"] -= 10  # inputs now pass the ReLU, where before they were cut to 0
    after = fed.logits({n: p.unsqueeze(0) for n, p in fed.global_params.items()}, fed.test_x, shifted)
    assert not torch.allclose(before, after)
    assert fed.model.training  # evaluation mode is restored to training mode


def test_training_ignores_the_mode_the_model_was_left_in_and_needs_its_buffers():
    fed = bn_federation([12, 8])
    trained = fed.local_train(np.array([0, 1]), 1, generators(2))
    fed.model.eval()  # a caller left the shared module in evaluation mode
    again = fed.local_train(np.array([0, 1]), 1, generators(2))
    assert again.buffers["1.num_batches_tracked"].tolist() == [3, 2]  # batch statistics were used and tracked
    for name in trained.params:
        assert torch.equal(trained.params[name], again.params[name]), name
    schedule = make_schedule(fed.client_indices, 1, 4, generators(2), drop_last=True)
    params = {n: p.unsqueeze(0).repeat(2, *[1] * p.dim()) for n, p in fed.global_params.items()}
    args = (fed.model, params, {n: torch.zeros_like(p) for n, p in params.items()}, fed.global_params, fed.train_x,
            fed.train_y, schedule, fed.config)
    for train in (train_batched, train_reference):
        with pytest.raises(ValueError, match=r"buffers \['1.num_batches_tracked', .*must be passed stacked"):
            train(*args)


def test_batchnorm_models_need_a_full_batch_per_client():
    with pytest.raises(ValueError, match=r"clients hold \[3\] samples < batch_size=4"):
        bn_federation([3, 10])


def test_lstm_layer_follows_torch_lstm_equations():
    layer = LSTMLayer(5, 7)
    reference = nn.LSTM(5, 7, batch_first=True)
    with torch.no_grad():
        reference.weight_ih_l0.copy_(layer.input_gates.weight)
        reference.bias_ih_l0.copy_(layer.input_gates.bias)
        reference.weight_hh_l0.copy_(layer.hidden_gates.weight)
        reference.bias_hh_l0.copy_(layer.hidden_gates.bias)
    x = torch.randn(3, 6, 5)
    assert torch.allclose(layer(x), reference(x)[0], atol=1e-6)


def test_macs_of_the_preset_models_worked_by_hand():
    lstm = build_model("lstm", (80,), 80, seed=0)
    # per step: layer 1 gates 8 -> 1024 and 256 -> 1024, layer 2 256 -> 1024 twice; head 256 -> 80 once
    assert count_macs(lstm, (80,), torch.int64) == 80 * (8 * 1024 + 256 * 1024 + 2 * 256 * 1024) + 256 * 80
    vgg = build_model("vgg6", (3, 32, 32), 10, seed=0)
    by_hand = (32 * 32 * 32 * 27 + 16 * 16 * 64 * 32 * 9 + 8 * 8 * 128 * 64 * 9 + 4 * 4 * 256 * 128 * 9
               + 1024 * 256 + 256 * 10)
    assert count_macs(vgg, (3, 32, 32)) == by_hand


def test_cifar10_folder_reads_with_per_channel_standardisation(tmp_path):
    arrays = make_cifar10_folder(tmp_path, per_batch=6, n_test=4)
    data = load_dataset("cifar10", str(tmp_path))
    assert data.train_x.shape == (30, 3, 32, 32) and data.test_x.shape == (4, 3, 32, 32)
    assert data.train_y.tolist() == [label for i in range(1, 6) for label in arrays[f"data_batch_{i}"][1]]
    assert torch.allclose(data.train_x.mean(dim=(0, 2, 3)), torch.zeros(3), atol=1e-5)
    assert torch.allclose(data.train_x.std(dim=(0, 2, 3)), torch.ones(3), atol=1e-4)
    # channel-major layout: the first 1024 bytes of a row are the red plane
    raw = arrays["data_batch_1"][0][0]
    red = torch.as_tensor(raw[:1024].reshape(32, 32), dtype=torch.float32) / 255
    green = torch.as_tensor(raw[1024:2048].reshape(32, 32), dtype=torch.float32) / 255
    assert torch.corrcoef(torch.stack([data.train_x[0, 0].flatten(), red.flatten()]))[0, 1] > 0.999
    assert torch.corrcoef(torch.stack([data.train_x[0, 1].flatten(), green.flatten()]))[0, 1] > 0.999


def test_cifar10_errors_name_the_missing_file_and_refuse_code(tmp_path):
    make_cifar10_folder(tmp_path, per_batch=2, n_test=2)
    (tmp_path / "cifar-10-batches-py" / "test_batch").unlink()
    with pytest.raises(FileNotFoundError, match=r"no test_batch in .*cifar-10-batches-py"):
        load_dataset("cifar10", str(tmp_path))
    CALLS.clear()
    evil = tmp_path / "evil"
    evil.write_bytes(pickle.dumps({b"data": Payload(), b"labels": [0]}, protocol=2))
    with pytest.raises(ValueError, match=r"refused to load tests\.test_traces_importers\.record_call"):
        read_cifar10_batch(evil)
    assert CALLS == []


@pytest.mark.parametrize("damage", [
    lambda data: data[: len(data) // 2],  # a half-finished download
    lambda data: b"<!DOCTYPE html><html><body>503 Service Unavailable</body></html>",  # an error page saved
])
def test_a_damaged_cifar10_batch_is_a_value_error_naming_the_file(tmp_path, damage):
    make_cifar10_folder(tmp_path, per_batch=2, n_test=2)
    path = tmp_path / "cifar-10-batches-py" / "data_batch_3"
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: not a CIFAR-10 batch"):
        load_dataset("cifar10", str(tmp_path))


def test_a_cifar10_batch_with_a_label_missing_is_refused(tmp_path):
    make_cifar10_folder(tmp_path, per_batch=3, n_test=2)
    path = tmp_path / "cifar-10-batches-py" / "test_batch"
    path.write_bytes(pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [1]}, protocol=2))
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: 'labels' must be a list of 2 labels in 0..9"):
        load_dataset("cifar10", str(tmp_path))


def test_a_truncated_leaf_file_is_a_value_error_naming_the_file(tmp_path):
    make_leaf_folder(tmp_path, {"A": 3})
    path = tmp_path / "shakespeare" / "data" / "train" / "all_data_train.json"
    path.write_text(path.read_text()[:40])
    with pytest.raises(ValueError, match=rf"^{re.escape(str(path))}: not a JSON file"):
        load_dataset("shakespeare", str(tmp_path))


SEGFAULT_PAYLOAD = """
import pickle, sys
import numpy as np
from numpy._core.multiarray import _reconstruct
class EvilDtype:  # a void dtype whose field is an object pointer, flags cleared
    def __reduce__(self):
        return (np.dtype, ("V8", False, True), (3, "|", None, ("a",), {"a": (np.dtype("O"), 0)}, 8, 1, 25))
class EvilArray:  # its raw bytes become the object pointers 0x4141...
    def __reduce__(self):
        return (_reconstruct, (np.ndarray, (0,), b"b"), (1, (2,), EvilDtype(), False, b"A" * 16))
open(sys.argv[1], "wb").write(pickle.dumps({b"data": EvilArray(), b"labels": [0, 1]}, protocol=2))
from fedenv.data.cifar10 import read_cifar10_batch
try:
    read_cifar10_batch(sys.argv[1])
except ValueError as error:
    print("refused:", error)
"""


def test_cifar10_reader_never_lets_pickle_state_build_a_numpy_dtype(tmp_path):
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", SEGFAULT_PAYLOAD, str(tmp_path / "evil")], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr  # numpy's own unpickling crashes the process here
    assert "refused: " in result.stdout and "refused dtype 'V8'" in result.stdout
    lying = tmp_path / "lying"  # a header claiming far more data than the file holds
    lying.write_bytes(pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0, 1]}, protocol=2)
                      .replace(b"K\x02M\x00\x0c", b"J@\r\x03\x00M\x00\x0c"))
    with pytest.raises(ValueError, match=r"shape \(200000, 3072\) does not match its 6144 bytes"):
        read_cifar10_batch(lying)
    modern = tmp_path / "modern"  # protocol 5 (numpy's _frombuffer path) still reads
    modern.write_bytes(pickle.dumps({"data": np.full((2, 3072), 7, np.uint8), "labels": [3, 4]}, protocol=5))
    images, labels = read_cifar10_batch(modern)
    assert images.shape == (2, 3, 32, 32) and (images == 7).all() and labels.tolist() == [3, 4]


def test_leaf_shakespeare_reads_users_and_the_natural_partition_keeps_them(tmp_path):
    document = make_leaf_folder(tmp_path, {"HAMLET": 15, "OPHELIA": 12, "POLONIUS": 4})
    data = load_dataset("shakespeare", str(tmp_path))
    assert data.num_classes == 80 and data.train_x.shape == (31, 12) and data.test_x.shape == (9, 12)
    first = document["user_data"]["HAMLET"]
    assert "".join(LEAF_LETTERS[i] for i in data.train_x[0]) == first["x"][0]
    assert LEAF_LETTERS[int(data.train_y[0])] == first["y"][0]
    assert np.bincount(data.train_owner).tolist() == [15, 12, 4]
    shards = partition_natural(data.train_owner, 2, np.random.default_rng(0), min_size=10)
    assert sorted(len(s) for s in shards) == [12, 15]  # POLONIUS holds fewer than 10 and is never drawn
    assert all(len(np.unique(data.train_owner[s])) == 1 for s in shards)
    with pytest.raises(ValueError, match="num_clients=3 but only 2 users hold >= min_client_size=10"):
        partition_natural(data.train_owner, 3, np.random.default_rng(0), min_size=10)


def test_leaf_character_outside_the_vocabulary_is_named(tmp_path):
    make_leaf_folder(tmp_path / "ok", {"A": 3})
    path = tmp_path / "ok" / "shakespeare" / "data" / "train" / "all_data_train.json"
    path.write_text(path.read_text().replace('"x": ["', '"x": ["\\u00e9', 1))
    with pytest.raises(ValueError, match="user 'A': character 'é' is not in LEAF's Shakespeare vocabulary"):
        load_dataset("shakespeare", str(tmp_path / "ok"))


LEAF_FAULTS = [
    (lambda d: d["user_data"]["A"].clear(), "user 'A' needs lists 'x' and 'y' of equal length"),
    (lambda d: d.update(user_data=[1, 2]), "a JSON object with a 'user_data' object"),
    (lambda d: d["user_data"]["A"]["x"].__setitem__(0, 7), "user 'A': window 7 must be a non-empty string"),
    (lambda d: d["users"].append("GHOST"), "user 'GHOST' of 'users' has no entry in 'user_data'"),
    (lambda d: d.update(users="A"), "'users' must be a list of user names, got str"),
    (lambda d: d["user_data"]["A"]["x"].__setitem__(1, "short"),
     "user 'A': window of 5 characters; earlier ones have 12"),
    (lambda d: d["user_data"]["A"]["y"].__setitem__(0, "ab"), "user 'A': target 'ab' must be one character"),
]


@pytest.mark.parametrize("fault, message", LEAF_FAULTS)
def test_malformed_leaf_files_are_named_errors(tmp_path, fault, message):
    import json

    make_leaf_folder(tmp_path, {"A": 3, "B": 3})
    path = tmp_path / "shakespeare" / "data" / "train" / "all_data_train.json"
    document = json.loads(path.read_text())
    fault(document)
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=re.escape(message)):
        load_dataset("shakespeare", str(tmp_path))


def preset_folder(name, root):
    if name == "mnist-lenet":
        make_torchvision_folder(root, "MNIST", 120, 20, compress=True)
    elif name == "fmnist-resnet18":
        make_torchvision_folder(root, "FashionMNIST", 36, 12, compress=False)
    elif name == "cifar10-vgg":
        make_cifar10_folder(root, per_batch=60, n_test=20)
    else:
        make_leaf_folder(root, {"HAMLET": 20, "OPHELIA": 16, "POLONIUS": 12, "GHOST": 3})


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_plays_a_short_episode(tmp_path, name):
    preset_folder(name, tmp_path)
    config = apply_preset(name)
    assert (config.num_clients, config.clients_per_round, config.local_epochs) == (100, 10, 5)
    small = dict(TINY_FEDERATION, data_root=str(tmp_path), local_epochs=2, batch_size=4, min_client_size=8)
    if name == "fmnist-resnet18":  # ResNet-18 is slow on a CPU: few samples, split evenly
        small["partition"] = "iid"
    env = ClientSelectionEnv(config, **small)
    env.reset(seed=0)
    initial = {n: p.clone() for n, p in env.simulator.federation.global_params.items()}
    rewards, steps = [], 0
    while env.agents:
        _, reward, terminations, truncations, infos = env.step({a: 1 for a in env.agents})
        rewards += list(reward.values())
        steps += 1
    assert steps == 2 and all(truncations.values()) and not any(terminations.values())
    assert all(math.isfinite(r) for r in rewards)
    assert any(not torch.equal(initial[n], p) for n, p in env.simulator.federation.global_params.items())
    federation = env.simulator.federation  # the reported test accuracy is the global model's on the test split
    logits = federation.logits({n: p.unsqueeze(0) for n, p in federation.global_params.items()}, federation.test_x,
                               {n: b.unsqueeze(0) for n, b in federation.global_buffers.items()})[0]
    accuracy = float((logits.argmax(dim=1) == federation.test_y).double().mean())
    assert env.simulator.test_accuracy == pytest.approx(accuracy)
    assert infos["client_0"]["test_accuracy"] == pytest.approx(accuracy)
    assert env.config.dataset == PRESETS[name]["dataset"] and env.config.model == PRESETS[name]["model"]
    if name == "fmnist-resnet18":  # BatchNorm: latency counts the full batches trained, not the data size
        clients = env.simulator.clients
        candidates = np.flatnonzero(clients.epoch_samples)
        assert clients.epoch_samples[candidates].tolist() == (clients.data_size[candidates] // 4 * 4).tolist()
    if name == "shakespeare-lstm":  # one speaking role per client
        assert all(len(np.unique(env.simulator.dataset.train_owner[i])) == 1 for i in env.simulator.client_indices)


def test_preset_flag_sets_fields_and_other_flags_override_it():
    args = build_parser().parse_args(["--preset", "cifar10-vgg", "--num-clients", "20", "--data-root", "d"])
    config = env_config_from_args(args)
    assert (config.dataset, config.model, config.num_clients, config.clients_per_round) == ("cifar10", "vgg6", 20, 10)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--preset", "imagenet"])


def test_a_model_that_cannot_take_the_dataset_is_refused_before_training(tmp_path):
    with pytest.raises(ValueError, match=r"vgg6 expects \(channels, 32, 32\) input \(cifar10\), got \(1, 28, 28\)"):
        ClientSelectionEnv(model="vgg6")
    make_leaf_folder(tmp_path, {"A": 12, "B": 12})
    with pytest.raises(ValueError, match=r"model 'mlp' takes images \(C, H, W\), but these inputs have shape \(12,\)"):
        ClientSelectionEnv(dataset="shakespeare", data_root=str(tmp_path), model="mlp", num_clients=2,
                           clients_per_round=2)
    with pytest.raises(ValueError, match=r"model 'lstm' takes character windows .* shape \(1, 28, 28\)"):
        ClientSelectionEnv(model="lstm")
    with pytest.raises(ValueError, match="partition='natural' needs a dataset that records users"):
        ClientSelectionEnv(partition="natural")
