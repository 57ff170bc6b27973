"""Model zoo: the networks local training runs on, one module per family, each registered in
:data:`fedenv.registry.MODELS` as a :class:`ModelSpec`: ``mlp`` (:mod:`fedenv.models.mlp`), ``lenet5`` and
``lenet5-classic`` (:mod:`fedenv.models.lenet`), ``resnet18`` (:mod:`fedenv.models.resnet`), ``vgg6``
(:mod:`fedenv.models.vgg`) and ``lstm`` (:mod:`fedenv.models.lstm`). :func:`build_model` builds one by
name with seeded weights; :mod:`fedenv.models.counting` measures parameters, MACs and activations.
"""

from fedenv.models.build import build_model
from fedenv.models.counting import PROBE_BATCH, count_activations, count_macs, count_parameters, has_batchnorm
from fedenv.models.lenet import LeNet5, LeNet5Classic
from fedenv.models.lstm import CharLSTM, LSTMLayer
from fedenv.models.mlp import MLP
from fedenv.models.resnet import resnet18
from fedenv.models.spec import INPUT_KINDS, ModelSpec
from fedenv.models.vgg import vgg6

__all__ = [
    "INPUT_KINDS", "MLP", "PROBE_BATCH", "CharLSTM", "LSTMLayer", "LeNet5", "LeNet5Classic", "ModelSpec", "build_model",
    "count_activations", "count_macs", "count_parameters", "has_batchnorm", "resnet18", "vgg6",
]
