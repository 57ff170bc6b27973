import pytest
import torch
from torch import nn

from fedenv.models import build_model, count_activations, count_macs, count_parameters


def test_model_sizes_by_hand():
    mlp = build_model("mlp", (1, 28, 28), 10, seed=0)
    assert count_parameters(mlp) == 784 * 200 + 200 + 200 * 10 + 10
    assert count_macs(mlp, (1, 28, 28)) == 784 * 200 + 200 * 10
    lenet = build_model("lenet5", (1, 28, 28), 10, seed=0)
    conv = 28 * 28 * 6 * 25 + 10 * 10 * 16 * 6 * 25
    assert count_macs(lenet, (1, 28, 28)) == conv + 400 * 120 + 120 * 84 + 84 * 10
    classic = build_model("lenet5-classic", (1, 28, 28), 10, seed=0)
    conv = 24 * 24 * 6 * 25 + 8 * 8 * 16 * 6 * 25  # no padding: 28 -> 24 -> pool 12 -> 8 -> pool 4
    assert count_macs(classic, (1, 28, 28)) == conv + 256 * 120 + 120 * 84 + 84 * 10 == 281_640
    assert count_parameters(classic) == (6 * 25 + 6) + (16 * 150 + 16) + (256 * 120 + 120) + (120 * 84 + 84) + 850
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
