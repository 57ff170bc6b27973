"""Building registered models: shape refusal, reference shapes, seeded weights (fedenv.models)."""

import pytest
import torch

from fedenv.models import MLP, LeNet5, ModelSpec, build_model
from fedenv.registry import MODELS


@pytest.mark.parametrize("name", MODELS.names())
def test_every_registered_model_builds_and_runs_on_its_reference_shape(name):
    spec = MODELS.get(name)
    model = build_model(name, spec.reference_input_shape, spec.reference_num_classes, seed=0)
    batch = torch.zeros(2, *spec.reference_input_shape, dtype=spec.input_dtype)
    assert model(batch).shape == (2, spec.reference_num_classes)


@pytest.mark.parametrize("name, shape, message", [
    ("vgg6", (1, 28, 28), r"vgg6 expects \(channels, 32, 32\) input \(cifar10\), got \(1, 28, 28\)"),
    ("lenet5", (3, 32, 32), r"lenet5 expects \(channels, 28, 28\) input .*, got \(3, 32, 32\)"),
    ("resnet18", (1, 4, 4), r"resnet18 expects .* at least 8x8, got \(1, 4, 4\)"),
    ("lstm", (1, 28, 28), r"model 'lstm' takes character windows \(T,\), but these inputs have shape \(1, 28, 28\); "
                          r"for images \(C, H, W\) use mlp, lenet5, resnet18, vgg6"),
    ("mlp", (80,), r"model 'mlp' takes images \(C, H, W\), but these inputs have shape \(80,\); "
                   r"for character windows \(T,\) use lstm"),
    ("mlp", (28, 28), r"shape \(28, 28\); inputs must be images \(C, H, W\) or character windows \(T,\)"),
])
def test_a_shape_the_model_does_not_accept_is_refused_by_name(name, shape, message):
    with pytest.raises(ValueError, match=message):
        build_model(name, shape, 10, seed=0)


def test_unknown_model_lists_the_registered_names():
    with pytest.raises(ValueError, match="model 'vit' is not known; allowed: mlp, lenet5, resnet18, vgg6, lstm"):
        build_model("vit", (1, 28, 28), 10, seed=0)


def test_seeded_build_equals_the_constructor_under_that_seed_and_leaves_the_global_rng():
    torch.manual_seed(123)
    expected_next = torch.rand(1)
    torch.manual_seed(123)
    model = build_model("lenet5", (1, 28, 28), 10, seed=7)
    assert torch.equal(torch.rand(1), expected_next)  # the global stream did not move
    torch.manual_seed(7)
    reference = LeNet5((1, 28, 28), 10)
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert torch.equal(p, q), name
    other = build_model("lenet5", (1, 28, 28), 10, seed=8)
    assert not torch.equal(other.features[0].weight, model.features[0].weight)


def test_a_spec_whose_reference_shape_it_refuses_is_refused():
    with pytest.raises(ValueError, match=r"model 'bad': reference_input_shape=\(80,\) is not an input it accepts"):
        ModelSpec("bad", MLP, input_kind="image", reference_input_shape=(80,), reference_num_classes=10,
                  accepts=lambda shape: True, accepted="images")
    with pytest.raises(ValueError, match="input_kind='graph'; allowed: image, sequence"):
        ModelSpec("bad", MLP, input_kind="graph", reference_input_shape=(1,), reference_num_classes=10,
                  accepts=lambda shape: True, accepted="graphs")
