"""Random draws of a block of code routed to explicit seeded generators, so that seeded model
initialisation is reproducible in any thread and never reads or moves the global torch RNG."""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _pop_mode, _push_mode


class SeededDraws(TorchDispatchMode):
    """Within ``with SeededDraws(seed):``, every random ATen operator of this thread (those tagged
    ``torch.Tag.nondeterministic_seeded``: ``uniform_``, ``normal_``, ``rand``, ``randperm``, ...) that
    is given no generator draws from an explicit ``torch.Generator`` seeded with ``seed``, one per
    device; operators given a generator keep theirs.

    Why a dispatch mode rather than ``torch.manual_seed`` or re-writing the initialisation: modules
    initialise themselves in their constructors (``reset_parameters``, and torchvision's ResNet
    re-initialises afterwards) from the global generator, which every thread shares, so two threads
    building at once interleave their draws (and a ``fork_rng`` under a lock would still race with any
    other thread drawing meanwhile). The dispatch-mode stack is thread-local, so this routes only this
    thread's draws, and a CPU ``torch.Generator`` seeded with ``seed`` yields the stream that
    ``torch.manual_seed(seed)`` gives the global CPU generator: weights are bit-identical to a build
    under ``torch.manual_seed(seed)``, in the same order, for any module, with no copy of its init scheme.
    (``fork_rng`` + ``manual_seed`` under a process-wide lock would also reproduce them, but serialises
    builds and still races with other threads' draws.)

    Args:
        seed: seed of every generator, an int in ``[0, 2**64)``.

    Raises:
        RuntimeError (inside the block): a random operator with no overload taking a generator.
    """

    def __init__(self, seed: int):
        super().__init__()
        self.seed = int(seed)
        self.generators: dict[torch.device, torch.Generator] = {}

    def __enter__(self):
        # Only this thread's mode stack: TorchDispatchMode.__enter__/__exit__ also save and restore
        # process-wide "a mode is active" flags (read by torch.compile), which builds overlapping in
        # two threads would leave set.
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        _pop_mode()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if torch.Tag.nondeterministic_seeded not in func.tags or kwargs.get("generator") is not None:
            return func(*args, **kwargs)
        func = _overload_taking_generator(func)
        kwargs["generator"] = self._generator(_device_of(args, kwargs))
        return func(*args, **kwargs)

    def _generator(self, device: torch.device) -> torch.Generator:
        if device not in self.generators:
            self.generators[device] = torch.Generator(device=device).manual_seed(self.seed)
        return self.generators[device]


def _overload_taking_generator(func):
    """``func`` itself if its schema has a ``generator`` argument, else the overload of the same
    operator with the same arguments plus ``generator`` (``aten.rand.default`` -> ``aten.rand.generator``)."""
    names = [a.name for a in func._schema.arguments]
    if "generator" in names:
        return func
    packet = func.overloadpacket
    for overload in packet.overloads():
        candidate = getattr(packet, overload)
        candidate_names = [a.name for a in candidate._schema.arguments]
        if "generator" in candidate_names and [n for n in candidate_names if n != "generator"] == names:
            return candidate
    raise RuntimeError(f"{func} draws random numbers but no overload of it takes a generator")


def _device_of(args: tuple, kwargs: dict) -> torch.device:
    """Device of the draw: the ``device`` argument of a factory, else that of the first tensor argument."""
    if kwargs.get("device") is not None:
        return torch.device(kwargs["device"])
    tensor = next((a for a in args if isinstance(a, torch.Tensor)), None)
    return tensor.device if tensor is not None else torch.device("cpu")
