"""The :class:`ModelSpec` a model family registers in :data:`fedenv.registry.MODELS`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

INPUT_KINDS = {"image": "images (C, H, W)", "sequence": "character windows (T,)"}
"""What a model takes: ``(C, H, W)`` float images or ``(T,)`` integer token ids, as the dataset's
``input_kind`` (:class:`fedenv.data.DatasetSpec`)."""


def input_kind_of(input_shape: tuple[int, ...]) -> str | None:
    """``"image"`` for a 3-dimensional input shape, ``"sequence"`` for a 1-dimensional one, else None."""
    return {1: "sequence", 3: "image"}.get(len(input_shape))


@dataclass(frozen=True)
class ModelSpec:
    """What :data:`fedenv.registry.MODELS` holds for one model family.

    Attributes:
        name: the registered name.
        build: ``build(input_shape, num_classes) -> nn.Module``; input ``(B, *input_shape)``, output
            logits ``(B, num_classes)``. Called under a seeded RNG by :func:`fedenv.models.build_model`.
        input_kind: ``"image"`` or ``"sequence"`` (keys of :data:`INPUT_KINDS`).
        reference_input_shape: the input of the task the model is made for (used to count the MACs of
            a trace's reference model).
        reference_num_classes: the number of classes of that task.
        accepts: ``accepts(input_shape) -> bool`` for input shapes of the model's kind.
        accepted: what ``accepts`` admits, in words, for error messages (``"(channels, 32, 32) input
            (cifar10)"``).
    """

    name: str
    build: Callable[[tuple[int, ...], int], nn.Module]
    input_kind: str
    reference_input_shape: tuple[int, ...]
    reference_num_classes: int
    accepts: Callable[[tuple[int, ...]], bool]
    accepted: str

    def __post_init__(self):
        if self.input_kind not in INPUT_KINDS:
            raise ValueError(f"model {self.name!r}: input_kind={self.input_kind!r}; allowed: {', '.join(INPUT_KINDS)}")
        if input_kind_of(self.reference_input_shape) != self.input_kind or not self.accepts(self.reference_input_shape):
            raise ValueError(f"model {self.name!r}: reference_input_shape={self.reference_input_shape} is not an input "
                             f"it accepts ({self.accepted})")

    @property
    def input_dtype(self) -> torch.dtype:
        """dtype of the model's input: float32 images or int64 token ids."""
        return torch.int64 if self.input_kind == "sequence" else torch.float32
