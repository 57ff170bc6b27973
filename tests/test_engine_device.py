import pytest
import torch

from fedenv.engine import resolve_device


def test_auto_picks_cuda_only_when_available_and_names_pass_through():
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == torch.device("cpu")


def test_bad_device_strings_are_rejected():
    with pytest.raises(ValueError, match="invalid device 'gpu0'; allowed: auto, cpu, cuda, cuda:N"):
        resolve_device("gpu0")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            resolve_device("cuda")
