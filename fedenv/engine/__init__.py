"""The FL engine: batched local training of a round's candidates, aggregation and evaluation.

Local training of the candidates of a round is one batched computation (docs/design.md, section 8): the
client models are stacked along a leading dimension and one gradient function per SGD step computes
every client's minibatch gradient (:mod:`fedenv.engine.local_sgd`). The gradient function is chosen
per model (:mod:`fedenv.engine.grad_fns`): written-out batched matrix products for the MLP, one grouped
convolution for sequential conv nets such as LeNet-5 (run over cache-sized chunks of clients on a CPU),
and ``torch.func.vmap(grad(...))`` for any other model. Clients hold different numbers of samples: they
are sorted by their number of steps and a client whose data are exhausted leaves the computation, so
nobody is over- or under-trained. The training requests of several federations (B copies of one
configuration) can be served together as one computation (:mod:`fedenv.engine.requests`).

Modules: :mod:`~fedenv.engine.schedule` (which sample each client sees at each step),
:mod:`~fedenv.engine.local_sgd` (batched local SGD), :mod:`~fedenv.engine.reference` (the plain
per-client ``torch.optim.SGD`` loop, the reference for tests and benchmarks, agreeing with the batched
engine to float tolerance), :mod:`~fedenv.engine.grad_fns`, :mod:`~fedenv.engine.server` (a federation's
data, global model, aggregation and evaluation), :mod:`~fedenv.engine.requests` and
:mod:`~fedenv.engine.device`.
"""

from fedenv.engine.device import resolve_device
from fedenv.engine.grad_fns import CPU_CHUNK_BYTES, GradFn, batched_grad_fn
from fedenv.engine.local_sgd import TrainResult, train_batched
from fedenv.engine.optimiser import LocalTrainingConfig
from fedenv.engine.reference import train_reference
from fedenv.engine.requests import EnvProcess, TrainRequest, train_together
from fedenv.engine.schedule import Schedule, make_schedule
from fedenv.engine.server import Federation

__all__ = [
    "CPU_CHUNK_BYTES", "EnvProcess", "Federation", "GradFn", "LocalTrainingConfig", "Schedule", "TrainRequest",
    "TrainResult", "batched_grad_fn", "make_schedule", "resolve_device", "train_batched", "train_reference",
    "train_together",
]
