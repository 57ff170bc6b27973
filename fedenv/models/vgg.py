"""``vgg6``: a six-layer VGG-style network (Simonyan and Zisserman, ICLR 2015) for CIFAR-10, FedMarl's
"VGG6" (arXiv 2201.02932, Table 2; its widths are not given there, these are our choice): 3x3
convolutions 32-M-64-M-128-M-256-M, then 1024-256-10 fully connected, ReLU throughout, no BatchNorm (so
every client trains through the grouped-convolution path of :mod:`fedenv.engine.grad_fns.grouped_conv`)."""

from __future__ import annotations

from torch import nn

from fedenv.models.spec import ModelSpec

VGG6_LAYERS = (32, "M", 64, "M", 128, "M", 256, "M")


def vgg6(input_shape: tuple[int, ...], num_classes: int) -> nn.Sequential:
    """VGG-style stack of :data:`VGG6_LAYERS` for ``(B, C, 32, 32)`` input; output ``(B, num_classes)``."""
    layers, channels = [], input_shape[0]
    for item in VGG6_LAYERS:
        if item == "M":
            layers.append(nn.MaxPool2d(2))
        else:
            layers += [nn.Conv2d(channels, item, 3, padding=1), nn.ReLU()]
            channels = item
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(channels * 2 * 2, 256), nn.ReLU(),
                         nn.Linear(256, num_classes))


VGG6_SPEC = ModelSpec("vgg6", vgg6, input_kind="image", reference_input_shape=(3, 32, 32), reference_num_classes=10,
                      accepts=lambda shape: shape[1:] == (32, 32), accepted="(channels, 32, 32) input (cifar10)")
