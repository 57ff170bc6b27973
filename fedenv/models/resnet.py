"""``resnet18``: torchvision's ResNet-18 (He et al., CVPR 2016) adapted to small grey or colour images as
is usual for 28x28 / 32x32 input: a 3x3 stride-1 first convolution and no initial max-pool. Has
BatchNorm: the engine keeps running statistics per client and aggregation averages them (docs/design.md,
section 8)."""

from __future__ import annotations

from torch import nn

from fedenv.models.spec import ModelSpec


def resnet18(input_shape: tuple[int, ...], num_classes: int) -> nn.Module:
    """torchvision's ResNet-18 with a 3x3 stride-1 first convolution for ``input_shape[0]`` channels
    and no initial max-pool; input ``(B, C, H, W)`` with H, W >= 8, output ``(B, num_classes)``."""
    from torchvision.models import resnet18 as torchvision_resnet18

    model = torchvision_resnet18(num_classes=num_classes)
    model.conv1 = nn.Conv2d(input_shape[0], 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()
    return model


RESNET18_SPEC = ModelSpec("resnet18", resnet18, input_kind="image", reference_input_shape=(1, 28, 28),
                          reference_num_classes=10, accepts=lambda shape: min(shape[1:]) >= 8,
                          accepted="(channels, height, width) input of at least 8x8")
