"""One FL round with the batched engine and with the plain per-client loop, measured side by side.

A round = probing epoch + remaining local epochs for every candidate, FedAvg aggregation and test
evaluation. Both implementations get the same data, the same initial model and the same minibatch
schedules; the rounds alternate (warm-up first) and the median of the repetitions is reported, so a busy
machine slows both alike: compare the ratio, not the absolute times. It also reports the achieved FLOP/s
of local training as a fraction of a large matrix multiply's FLOP/s measured in the same run.

    python benchmarks/bench_engine.py                          # CPU target: LeNet-5, 100 x 60 samples, 2 epochs
    python benchmarks/bench_engine.py --cpu-chunk-mib 0        # same, all clients in one chunk
    python benchmarks/bench_engine.py --model mlp --clients 10 --samples 200
    python benchmarks/bench_engine.py --device cuda --clients 100
    python benchmarks/bench_engine.py --model vgg6 --dataset cifar10 --data-root DIR --clients 10
    python benchmarks/bench_engine.py --model resnet18 --dataset fashion-mnist --data-root DIR --clients 3 \
        --samples 16 --batch-size 8 --test-samples 200     # on a CPU, evaluation dominates without --test-samples
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time

import numpy as np
import torch

from fedenv.config import ENGINES
from fedenv.data import load_dataset, subsample_split
from fedenv.engine import (
    CPU_CHUNK_BYTES,
    Federation,
    LocalTrainingConfig,
    batched_grad_fn,
    make_schedule,
    resolve_device,
    train_batched,
    train_reference,
)
from fedenv.models import build_model, count_macs
from fedenv.registry import DATASETS, MODELS


def matmul_flops(device: torch.device, size: int, repeats: int = 5) -> float:
    """FLOP/s of a ``size x size`` float32 matrix multiply (the machine's practical peak)."""
    a, b = torch.randn(size, size, device=device), torch.randn(size, size, device=device)
    torch.mm(a, b)
    synchronize(device)
    start = time.perf_counter()
    for _ in range(repeats):
        torch.mm(a, b)
    synchronize(device)
    return 2 * size**3 * repeats / (time.perf_counter() - start)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def one_round(fed: Federation, clients: np.ndarray, epochs: int, train, seed: int) -> tuple[float, float]:
    """Run one round with ``train`` (train_batched or train_reference); returns (total s, training s)."""
    gens = lambda phase: [torch.Generator().manual_seed(int(seed * 1000 + 2 * c + phase)) for c in clients]  # noqa: E731
    indices = [fed.client_indices[c] for c in clients]
    params = {n: p.unsqueeze(0).repeat(len(clients), *[1] * p.dim()) for n, p in fed.global_params.items()}
    momentum = {n: torch.zeros_like(p) for n, p in params.items()}
    buffers = {n: b.unsqueeze(0).repeat(len(clients), *[1] * b.dim()) for n, b in fed.global_buffers.items()}
    synchronize(fed.device)
    start = time.perf_counter()
    result = train(fed.model, params, momentum, fed.global_params, fed.train_x, fed.train_y,
                   make_schedule(indices, 1, fed.config.batch_size, gens(0), fed.drop_last), fed.config, buffers)
    if epochs > 1:
        result = train(fed.model, result.params, result.momentum, fed.global_params, fed.train_x, fed.train_y,
                       make_schedule(indices, epochs - 1, fed.config.batch_size, gens(1), fed.drop_last), fed.config,
                       result.buffers)
    synchronize(fed.device)
    trained = time.perf_counter()
    fed.aggregate(clients, result)
    fed.evaluate()
    synchronize(fed.device)
    end = time.perf_counter()
    return end - start, trained - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="lenet5", choices=MODELS)
    parser.add_argument("--clients", type=int, default=100, help="candidates per round")
    parser.add_argument("--samples", type=int, default=60, help="training samples per client")
    parser.add_argument("--epochs", type=int, default=2, help="local epochs (the first is the probing epoch)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--dataset", default="mnist5k", choices=DATASETS)
    parser.add_argument("--data-root", default=None)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--engine", default="auto", choices=ENGINES, help="gradient path of the batched engine")
    parser.add_argument("--cpu-chunk-mib", type=float, default=CPU_CHUNK_BYTES / 2**20,
                        help="activation budget of one chunk of clients on a CPU (fedenv.engine.grad_fns.cpu_chunked); "
                             "0: all clients at once")
    parser.add_argument("--test-samples", type=int, default=None,
                        help="evaluate on a fixed subset of the test split (default: all of it)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--matmul-size", type=int, default=2048)
    args = parser.parse_args(argv)
    if args.cpu_chunk_mib < 0:
        parser.error(f"--cpu-chunk-mib {args.cpu_chunk_mib:g}: must be >= 0 (0: all clients at once)")

    device = resolve_device(args.device)
    data = subsample_split(load_dataset(args.dataset, args.data_root), "test", args.test_samples)
    rng = np.random.default_rng(0)
    n = len(data.train_y)
    client_indices = [np.sort(rng.choice(n, args.samples, replace=False)) for _ in range(args.clients)]
    model = build_model(args.model, data.input_shape, data.num_classes, seed=0)
    fed = Federation(model, data, client_indices, LocalTrainingConfig(batch_size=args.batch_size), device,
                     engine=args.engine)
    chunk_bytes = max(1, int(args.cpu_chunk_mib * 2**20)) if args.cpu_chunk_mib else None
    fed.grad_fn = batched_grad_fn(model, args.engine, chunk_bytes)
    chunked = hasattr(fed.grad_fn, "chunk_bytes") and device.type == "cpu"  # only the grouped-convolution path
    chunks = f", CPU chunks of {args.cpu_chunk_mib:g} MiB" if chunked else ""
    initial = {k: v.clone() for k, v in fed.global_params.items()}
    clients = np.arange(args.clients)
    batched = lambda *a: train_batched(*a, grad_fn=fed.grad_fn)  # noqa: E731

    print(f"device {device}; torch threads {torch.get_num_threads()}; load average {os.getloadavg()[0]:.2f}; "
          f"{args.model}, {args.clients} clients x {args.samples} samples, {args.epochs} local epochs, "
          f"batch {args.batch_size}; engine path: {fed.grad_fn.__qualname__.split('.')[0]}{chunks}")
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = {"batched": [], "loop": []}
    for repeat in range(args.repeats + 1):  # the first repetition warms up
        for name, train in (("batched", batched), ("loop", train_reference)):
            fed.global_params = {k: v.clone() for k, v in initial.items()}
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats(device)
            total, training = one_round(fed, clients, args.epochs, train, seed=repeat)
            if repeat:
                times[name].append((total, training))
    peak = (f"{torch.cuda.max_memory_allocated(device) / 2**20:.0f} MiB (CUDA, last round)" if device.type == "cuda"
            else f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB process peak RSS "
                 f"(+{(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) / 1024:.0f} during the rounds)")
    peak_flops = matmul_flops(device, args.matmul_size)
    flops_per_round = 3 * 2 * count_macs(model, data.input_shape) * args.clients * args.samples * args.epochs

    print(f"\n{'':8}  {'round (s)':>10}  {'rounds/s':>9}  {'training (s)':>12}  {'train FLOP/s':>13}  {'of matmul':>9}")
    rates = {}
    for name, measured in times.items():
        total = statistics.median(t for t, _ in measured)
        training = statistics.median(t for _, t in measured)
        rates[name] = 1.0 / total
        achieved = flops_per_round / training
        print(f"{name:8}  {total:10.3f}  {rates[name]:9.2f}  {training:12.3f}  {achieved / 1e9:10.2f} G  "
              f"{achieved / peak_flops:9.1%}")
    print(f"\nmatmul {args.matmul_size}x{args.matmul_size}: {peak_flops / 1e9:.1f} GFLOP/s; peak memory: {peak}")
    print(f"ratio (batched / loop): {rates['batched'] / rates['loop']:.2f}")


if __name__ == "__main__":
    main()
