"""One command for a CUDA machine: the batched engine against the idiomatic loop on the paper presets,
memory per client, the most candidates that fit, and a determinism check.

For each preset (``--preset``, default ``mnist-lenet`` and ``fmnist-resnet18``, :mod:`fedenv.presets`)
it trains rounds of the preset's ``clients_per_round`` candidates x ``--samples`` samples x the preset's
local epochs, and reports:

- *ratio*: one round (training, FedAvg, evaluation) with the batched engine and with
  :func:`benchmarks.bench_engine.idiomatic_loop`, side by side (:func:`benchmarks.bench_engine.measure_round`:
  alternating, warm-up first, medians), ``loop s / batched s``, and the largest weight difference;
- *memory per client*: the peak memory of one batched local epoch above what was allocated before,
  divided by the candidates (on CUDA ``torch.cuda.max_memory_allocated``; on a CPU the growth of the
  process's peak RSS, a lower bound);
- *most candidates that fit*: one batched local epoch with 1, 2, 4, ... candidates until CUDA runs out
  of memory (``torch.cuda.OutOfMemoryError``) or ``--max-candidates`` is reached (on a CPU the search
  stops at ``--max-candidates`` rather than exhaust the machine's memory);
- *determinism*: two batched rounds with the same seed from the same global model, compared bit for bit
  (on CUDA some kernels, e.g. atomic-add reductions, may differ; the largest difference is printed).

    python benchmarks/gpu_check.py --data-root DIR                 # CUDA if available, both presets
    python benchmarks/gpu_check.py --data-root DIR --preset mnist-lenet --max-candidates 65536
    python benchmarks/gpu_check.py --device cpu --quick            # CI: embedded digits, tiny sizes, < 1 min

``--deterministic`` asks PyTorch for deterministic algorithms and full float32 convolutions and matrix products
(no TF32; :func:`strict_float32`), to tell which of the two sources makes the batched rounds differ from the loop
and from each other on CUDA.

``--quick`` trains 2 candidates x 4 samples for 1 epoch with batch 2 on the embedded ``mnist5k`` digits
(for both presets: Fashion-MNIST has the same 1x28x28 shape), evaluates on 20 test samples and searches
up to 2 candidates: a smoke test of the command, not a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file, python benchmarks/NAME.py: import this checkout (repo root), as -m does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import os
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from benchmarks.bench_engine import batched_round, machine_line, max_difference, measure_round, round_setting
from fedenv.engine import CPU_CHUNK_BYTES, make_schedule, resolve_device, train_batched
from fedenv.presets import PRESETS, apply_preset

DEFAULT_PRESETS = ("mnist-lenet", "fmnist-resnet18")
QUICK = dict(samples=4, batch_size=2, epochs=1, clients=2, test_samples=20, max_candidates=2, repeats=1)
"""Sizes of ``--quick``."""


@dataclass
class PresetReport:
    """What :func:`check_preset` measured for one preset."""

    preset: str
    batched_s: float
    loop_s: float
    difference: float
    bytes_per_client: float
    most_candidates: int
    stopped_by: str
    deterministic: bool
    determinism_difference: float

    @property
    def ratio(self) -> float:
        """Loop round time over batched round time."""
        return self.loop_s / self.batched_s

    def lines(self, device: torch.device) -> list[str]:
        same = "bitwise equal" if self.deterministic else f"NOT equal (max |diff| {self.determinism_difference:.1e})"
        memory = "CUDA allocator peak" if device.type == "cuda" else "growth of the peak RSS, a lower bound"
        return [f"{self.preset}: round batched {self.batched_s:.3f} s, loop {self.loop_s:.3f} s, ratio "
                f"{self.ratio:.2f}x (max |diff| {self.difference:.1e})",
                f"  memory per client ({memory}): {self.bytes_per_client / 2**20:.2f} MiB; most candidates that fit: "
                f"{self.most_candidates} ({self.stopped_by})",
                f"  determinism: two seeded rounds {same}"]


def strict_float32() -> None:
    """Deterministic algorithms (warning where an operation has none), cuDNN's autotuner off, and no TF32 in
    convolutions or matrix products: PyTorch's reproducibility notes (docs/notes/randomness, "CUDA convolution
    determinism") and its TF32 note (``torch.backends.cudnn.allow_tf32`` is on by default). Set
    ``CUBLAS_WORKSPACE_CONFIG`` before the first CUDA call, as cuBLAS's deterministic mode needs."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def compare_runs(run: Callable[[], dict[str, torch.Tensor]]) -> tuple[bool, float]:
    """Call ``run`` twice; ``(bitwise equal, largest absolute difference)`` of the two results."""
    first, second = run(), run()
    equal = all(torch.equal(first[name], second[name]) for name in first)
    return equal, max_difference(first, second)


def peak_bytes(device: torch.device, work: Callable[[], object]) -> int:
    """Peak memory of ``work()`` above what was in use before it: CUDA allocator bytes, or on a CPU the
    growth of the process's peak RSS (a lower bound: the peak only grows)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
        before = torch.cuda.memory_allocated(device)
        work()
        torch.cuda.synchronize(device)
        return torch.cuda.max_memory_allocated(device) - before
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    work()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024


def one_epoch(fed, candidates: int, samples: int, seed: int) -> Callable[[], object]:
    """One batched local epoch of ``candidates`` clients of ``samples`` random training samples each."""
    rng = np.random.default_rng(seed)
    indices = [rng.choice(len(fed.train_y), samples, replace=False) for _ in range(candidates)]
    generators = [torch.Generator().manual_seed(seed + c) for c in range(candidates)]

    def work():
        params = {n: p.unsqueeze(0).expand(candidates, *p.shape) for n, p in fed.global_params.items()}
        momentum = {n: torch.zeros(candidates, *p.shape, dtype=p.dtype, device=p.device)
                    for n, p in fed.global_params.items()}
        buffers = {n: b.unsqueeze(0).repeat(candidates, *[1] * b.dim()) for n, b in fed.global_buffers.items()}
        schedule = make_schedule(indices, 1, fed.config.batch_size, generators, fed.drop_last)
        return train_batched(fed.model, params, momentum, fed.global_params, fed.train_x, fed.train_y, schedule,
                             fed.config, buffers, fed.grad_fn)

    return work


def most_candidates(fed, device: torch.device, samples: int, limit: int) -> tuple[int, str]:
    """Largest power of two (up to ``limit``) of candidates whose batched local epoch fits; and why the
    search stopped."""
    fitted, candidates = 0, 1
    while candidates <= limit:
        try:
            one_epoch(fed, candidates, samples, seed=candidates)()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            return fitted, f"out of memory at {candidates}"
        fitted, candidates = candidates, candidates * 2
    return fitted, f"search capped at --max-candidates {limit}"


def check_preset(name: str, args: argparse.Namespace, device: torch.device) -> PresetReport:
    """Measure one preset (see the module docstring)."""
    config = apply_preset(name)
    setting = argparse.Namespace(
        dataset="mnist5k" if args.quick else config.dataset, data_root=args.data_root, test_samples=args.test_samples,
        clients=args.clients or config.clients_per_round, samples=args.samples, batch_size=args.batch_size,
        engine="auto", cpu_chunk_mib=CPU_CHUNK_BYTES / 2**20, epochs=args.epochs or config.local_epochs,
        repeats=args.repeats, device=str(device))
    row = measure_round(setting, config.model, device)
    fed, clients = round_setting(setting, config.model, device)
    start = dict(fed.global_params)

    def seeded_round():
        fed.global_params = dict(start)
        return batched_round(fed, clients, setting.epochs, seed=0)[2]

    deterministic, difference = compare_runs(seeded_round)
    fed.global_params = dict(start)
    per_client = peak_bytes(device, one_epoch(fed, setting.clients, setting.samples, seed=0)) / setting.clients
    fitted, stopped_by = most_candidates(fed, device, setting.samples, args.max_candidates)
    return PresetReport(name, row.batched_s, row.loop_s, row.difference, per_client, fitted, stopped_by,
                        deterministic, difference)


def main(argv=None) -> list[PresetReport]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", action="append", choices=sorted(PRESETS),
                        help=f"repeatable (default: {', '.join(DEFAULT_PRESETS)})")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--data-root", default=None, help="folder holding MNIST/ and FashionMNIST/ (not with --quick)")
    parser.add_argument("--quick", action="store_true", help="CI size on the embedded digits (module docstring)")
    parser.add_argument("--clients", type=int, default=None, help="candidates per round (default: the preset's)")
    parser.add_argument("--samples", type=int, default=60, help="training samples per candidate")
    parser.add_argument("--epochs", type=int, default=None, help="local epochs (default: the preset's)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--test-samples", type=int, default=1000, help="test samples evaluated each round")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-candidates", type=int, default=65536, help="upper end of the candidate search")
    parser.add_argument("--deterministic", action="store_true",
                        help="deterministic algorithms, no TF32 (strict_float32; module docstring)")
    args = parser.parse_args(argv)
    if args.deterministic:
        strict_float32()
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    device = resolve_device(args.device)
    print(machine_line(device) + (" (--quick: a smoke test, not a measurement)" if args.quick else "")
          + ("; deterministic algorithms, no TF32" if args.deterministic else ""))
    reports = []
    for name in args.preset or DEFAULT_PRESETS:
        start = time.perf_counter()
        reports.append(check_preset(name, args, device))
        for line in reports[-1].lines(device):
            print(line, flush=True)
        print(f"  ({time.perf_counter() - start:.1f} s; load average {os.getloadavg()[0]:.2f})")
    return reports


if __name__ == "__main__":
    main()
