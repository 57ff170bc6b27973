"""Build a registered model with seeded initial weights."""

from __future__ import annotations

from torch import nn

from fedenv.models.seeding import SeededDraws
from fedenv.models.spec import INPUT_KINDS, input_kind_of
from fedenv.registry import MODELS


def build_model(name: str, input_shape: tuple[int, ...], num_classes: int, seed: int) -> nn.Module:
    """Build a model of :data:`fedenv.registry.MODELS` with seeded initial weights: those of
    ``torch.manual_seed(seed)`` followed by the spec's ``build``, bit for bit, but drawn from explicit
    generators (:class:`~fedenv.models.seeding.SeededDraws`), so that builds in several threads at once
    equal builds one after another and the global torch RNG is neither read nor moved.

    Args:
        name: a registered model name.
        input_shape: shape of one input (``(C, H, W)`` images, ``(T,)`` character windows).
        num_classes: number of labels (the vocabulary size for ``lstm``).
        seed: seed of the initial weights, an int in ``[0, 2**64)``.

    Raises:
        ValueError: unknown model name (the message lists the registered names); inputs of the other
            kind (images for a sequence model, or the reverse: names the models of their kind); or an
            input shape the model does not accept (names the model, the shape and what it accepts).
    """
    spec = MODELS.get(name)
    input_shape = tuple(input_shape)
    if input_kind_of(input_shape) != spec.input_kind:
        raise ValueError(f"model {name!r} takes {INPUT_KINDS[spec.input_kind]}, but these inputs have shape "
                         f"{input_shape}; {_models_for(input_shape)}")
    if not spec.accepts(input_shape):
        raise ValueError(f"{name} expects {spec.accepted}, got {input_shape}")
    with SeededDraws(seed):
        return spec.build(input_shape, num_classes)


def _models_for(input_shape: tuple[int, ...]) -> str:
    kind = input_kind_of(input_shape)
    if kind is None:
        return f"inputs must be {' or '.join(INPUT_KINDS.values())}"
    names = [n for n in MODELS if MODELS.get(n).input_kind == kind]
    return f"for {INPUT_KINDS[kind]} use {', '.join(names)}"
