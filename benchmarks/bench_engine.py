"""The batched engine against the idiomatic per-client PyTorch loop, measured side by side in one run.

The loop (:func:`idiomatic_loop`) is what FL code usually writes for a client: ``copy.deepcopy`` of the
global model, ``torch.optim.SGD``, the client's samples gathered into tensors once, shuffled each epoch
and cut into minibatches by slicing, ``cross_entropy`` / ``backward`` / ``step``; nothing else (no loss
bookkeeping, which the batched engine does on top). Both sides get the same data, initial model and
minibatches (the loop draws each epoch's order with the generator ``fedenv.engine.make_schedule`` uses),
and the benchmark checks that they train the same weights (largest difference printed; above
:data:`TOLERANCE` the run fails).

Rows (the default runs them all, ``--model`` runs one round setting):

- *round*: one FL round = probing epoch + remaining local epochs of every candidate, FedAvg aggregation
  and test evaluation; the two implementations alternate, warm-up first, medians of ``--repeats``.
  Defaults: ``lenet5-classic`` (unpadded, 281,640 MACs per sample) and ``lenet5`` (padded, 416,520),
  100 clients x 60 samples, 2 epochs.
- *episode*: all local training of whole episodes of the default federation
  (:class:`fedenv.config.EnvConfig`, MLP) under the ``random`` policy, each training request served by
  the batched engine and by the loop one after the other; times are sums over the requests. Once with
  the default engine and once with ``--engine fused`` (the MLP's SGD step fused into its weight-gradient
  products; the target's row).
- *scaling*: time per env step and peak memory with 100, 1,000 and 4,000 clients and 10 candidates per
  round on full MNIST (needs ``--data-root``; each count in a fresh process so that its peak RSS is its
  own, printed for the whole process, which loading MNIST dominates, and for the steps alone; the trace
  is generated with ``fedenv.traces.generate_trace`` into a temporary folder).

Beside each ratio: the achieved training FLOP/s as a fraction of a float32 ``--matmul-size`` matrix
multiply's (the best of several, measured in the same run: the machine's practical peak) and the least
training time at that rate. Training FLOPs are counted as 6 x MACs (forward, and a backward of twice
the forward) per visited sample (:func:`fedenv.models.count_macs`). Times depend on the machine's load:
compare the ratios, and read the printed threads and load average. When another process keeps a core
busy, two torch threads wait on each other at every small operation (the loop's above all: seen 3-10x
slower); ``OMP_NUM_THREADS=1`` then gives steadier ratios.

    python benchmarks/bench_engine.py --data-root ~/data              # every row
    python benchmarks/bench_engine.py --model lenet5-classic            # one round setting
    python benchmarks/bench_engine.py --profile                         # where a lenet5-classic round's time goes
    python benchmarks/bench_engine.py --model lenet5 --cpu-chunk-mib 0  # all clients in one chunk
    python benchmarks/bench_engine.py --model mlp --clients 10 --samples 200
    python benchmarks/bench_engine.py --model lenet5 --device cuda --clients 100
    python benchmarks/bench_engine.py --model resnet18 --dataset fashion-mnist --data-root DIR --clients 3 \\
        --samples 16 --batch-size 8 --test-samples 200     # on a CPU, evaluation dominates without --test-samples
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file, python benchmarks/NAME.py: import this checkout (repo root), as -m does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import concurrent.futures
import copy
import multiprocessing
import os
import resource
import statistics
import tempfile
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from fedenv.baselines import make_policy
from fedenv.config import ENGINES, EnvConfig
from fedenv.data import load_dataset, subsample_split
from fedenv.engine import (
    CPU_CHUNK_BYTES,
    Federation,
    LocalTrainingConfig,
    TrainRequest,
    TrainResult,
    batched_grad_fn,
    make_schedule,
    resolve_device,
    train_batched,
    train_together,
)
from fedenv.engine.requests import starting_point
from fedenv.env import ClientSelectionEnv
from fedenv.models import build_model, count_macs
from fedenv.registry import DATASETS, MODELS
from fedenv.traces import SHIPPED_TRACES_DIR
from fedenv.traces.generate import dumps_trace, generate_trace, read_device_table

TOLERANCE = 1e-4
"""Largest absolute weight difference allowed between the batched engine and the loop (float32). Most
clients agree to 1e-7; a ReLU or max-pool tie that float rounding decides the other way moves one
client by about 1e-5 (seen: 1 of 100 lenet5-classic clients, 1.1e-5), so the check allows 1e-4; the
engine's tests hold 1e-5 at their smaller sizes."""
SCALING_CLIENTS = (100, 1000, 4000)


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def matmul_rate(device: torch.device, size: int, repeats: int = 5) -> float:
    """FLOP/s of the fastest of ``repeats`` float32 ``size x size`` matrix multiplies (after a warm-up)."""
    a, b = torch.randn(size, size, device=device), torch.randn(size, size, device=device)
    torch.mm(a, b)
    best = float("inf")
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        torch.mm(a, b)
        synchronize(device)
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best


def idiomatic_loop(global_model: nn.Module, x: torch.Tensor, y: torch.Tensor, client_indices: list[np.ndarray],
                   phases: list[tuple[int, list[torch.Generator]]], lr: float, batch_size: int,
                   drop_last: bool = False, starts: dict[str, torch.Tensor] | None = None,
                   ) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """Plain local SGD, one client after the other (see the module docstring).

    Args:
        global_model: the global model, in training mode (each client starts from a deep copy).
        x: ``(N, *input_shape)`` training inputs; ``y``: ``(N,)`` labels.
        client_indices: one int array of training-set indices per client.
        phases: ``(epochs, generators)`` trained one after the other by every client with one optimiser
            (the probing epoch, then the remaining ones); ``generators[k]`` shuffles client k's samples
            each epoch with ``torch.randperm``, as :func:`fedenv.engine.make_schedule` does.
        lr: SGD learning rate (plain SGD: no momentum, weight decay or proximal term).
        drop_last: leave out each epoch's last partial minibatch (models with BatchNorm).
        starts: ``name -> (K, *shape)`` parameters each client starts from instead of the global
            model's (clients continuing after probing), or None.

    Returns:
        ``(params, buffers)``, each ``name -> (K, *shape)``: every client's trained model.
    """
    states = []
    for k, indices in enumerate(client_indices):
        local = copy.deepcopy(global_model)
        if starts is not None:
            with torch.no_grad():
                for name, p in local.named_parameters():
                    p.copy_(starts[name][k])
        optimizer = torch.optim.SGD(local.parameters(), lr=lr)
        rows = torch.as_tensor(np.asarray(indices), dtype=torch.int64, device=x.device)
        client_x, client_y, n = x[rows], y[rows], len(rows)
        for epochs, generators in phases:
            for _ in range(epochs):
                order = torch.randperm(n, generator=generators[k]).to(x.device)
                epoch_x, epoch_y = client_x[order], client_y[order]
                for start in range(0, n - batch_size + 1 if drop_last else n, batch_size):
                    loss = F.cross_entropy(local(epoch_x[start:start + batch_size]), epoch_y[start:start + batch_size])
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
        states.append(local.state_dict())
    params = {name: torch.stack([s[name] for s in states]) for name, _ in global_model.named_parameters()}
    buffers = {name: torch.stack([s[name] for s in states]) for name, _ in global_model.named_buffers()}
    return params, buffers


def max_difference(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """Largest absolute difference between matching floating-point tensors of ``a`` and ``b``."""
    return max(float((a[n].double() - b[n].double()).abs().max()) for n in a if a[n].is_floating_point())


def global_model(fed: Federation) -> nn.Module:
    """A module holding ``fed``'s global weights and buffers, in training mode."""
    model = copy.deepcopy(fed.model)
    model.load_state_dict({**fed.global_params, **fed.global_buffers})
    return model.train()


@dataclass
class Measured:
    """One row: median (or summed) seconds of each implementation, training FLOPs, largest weight difference."""

    label: str
    batched_s: float
    loop_s: float
    batched_train_s: float
    loop_train_s: float
    train_flops: float
    difference: float

    def line(self, rate: float) -> str:
        ratio = self.loop_s / self.batched_s
        least = self.train_flops / rate
        batched, loop = self.train_flops / self.batched_train_s / rate, self.train_flops / self.loop_train_s / rate
        return (f"{self.label:60}  {self.batched_s:8.3f}  {self.loop_s:8.3f}  {ratio:6.2f}x  {batched:8.1%}  "
                f"{loop:8.1%}  {least:8.3f}  {self.difference:9.1e}")


HEADER = (f"{'':60}  {'batched':>8}  {'loop':>8}  {'ratio':>7}  {'batched':>8}  {'loop':>8}  {'least':>8}  {'max':>9}\n"
          f"{'':60}  {'(s)':>8}  {'(s)':>8}  {'':>7}  {'of mm':>8}  {'of mm':>8}  {'train s':>8}  {'|diff|':>9}")


def round_setting(args: argparse.Namespace, model_name: str, device: torch.device) -> tuple[Federation, np.ndarray]:
    """The federation of one round setting: ``args.clients`` clients of ``args.samples`` random samples."""
    data = subsample_split(load_dataset(args.dataset, args.data_root), "test", args.test_samples)
    rng = np.random.default_rng(0)
    client_indices = [np.sort(rng.choice(len(data.train_y), args.samples, replace=False)) for _ in range(args.clients)]
    model = build_model(model_name, data.input_shape, data.num_classes, seed=0)
    fed = Federation(model, data, client_indices, LocalTrainingConfig(batch_size=args.batch_size), device,
                     engine=args.engine)
    chunk_bytes = max(1, int(args.cpu_chunk_mib * 2**20)) if args.cpu_chunk_mib else None
    fed.grad_fn = batched_grad_fn(model, args.engine, chunk_bytes)
    return fed, np.arange(args.clients)


def round_generators(clients: np.ndarray, seed: int, phase: int) -> list[torch.Generator]:
    """One generator per client for a phase (0: probing epoch, 1: the remaining epochs) of a round."""
    return [torch.Generator().manual_seed(int(seed * 1000 + 2 * c + phase)) for c in clients]


def batched_round(fed: Federation, clients: np.ndarray, epochs: int, seed: int) -> tuple[float, float, dict]:
    """One round with the batched engine: ``(round s, training s, trained params)``."""
    indices = [fed.client_indices[c] for c in clients]
    k = len(clients)
    params = {n: p.unsqueeze(0).expand(k, *p.shape) for n, p in fed.global_params.items()}
    momentum = {n: torch.zeros_like(p) for n, p in params.items()}
    buffers = {n: b.unsqueeze(0).repeat(k, *[1] * b.dim()) for n, b in fed.global_buffers.items()}
    synchronize(fed.device)
    start = time.perf_counter()
    result = train_batched(fed.model, params, momentum, fed.global_params, fed.train_x, fed.train_y,
                           make_schedule(indices, 1, fed.config.batch_size, round_generators(clients, seed, 0),
                                         fed.drop_last), fed.config, buffers, fed.grad_fn)
    if epochs > 1:
        result = train_batched(fed.model, result.params, result.momentum, fed.global_params, fed.train_x,
                               fed.train_y, make_schedule(indices, epochs - 1, fed.config.batch_size,
                                                          round_generators(clients, seed, 1), fed.drop_last),
                               fed.config, result.buffers, fed.grad_fn)
    return (*_aggregate_and_evaluate(fed, clients, result, start), result.params)


def loop_round(fed: Federation, clients: np.ndarray, epochs: int, seed: int) -> tuple[float, float, dict]:
    """One round with :func:`idiomatic_loop`: ``(round s, training s, trained params)``."""
    phases = [(1, round_generators(clients, seed, 0))] + ([(epochs - 1, round_generators(clients, seed, 1))]
                                                          if epochs > 1 else [])
    synchronize(fed.device)
    start = time.perf_counter()
    params, buffers = idiomatic_loop(global_model(fed), fed.train_x, fed.train_y,
                                     [fed.client_indices[c] for c in clients], phases, fed.config.lr,
                                     fed.config.batch_size, fed.drop_last)
    samples = torch.tensor([epochs * len(fed.client_indices[c]) for c in clients], dtype=torch.float64)
    zeros = torch.zeros(len(clients), dtype=torch.float64, device=fed.device)
    result = TrainResult(params, {}, zeros, zeros, samples, buffers)
    return (*_aggregate_and_evaluate(fed, clients, result, start), params)


def _aggregate_and_evaluate(fed: Federation, clients: np.ndarray, result: TrainResult,
                            start: float) -> tuple[float, float]:
    """Aggregate and evaluate; ``(seconds since start, seconds of training)``."""
    synchronize(fed.device)
    trained = time.perf_counter()
    fed.aggregate(clients, result)
    fed.evaluate()
    synchronize(fed.device)
    return time.perf_counter() - start, trained - start


def profile_round(args: argparse.Namespace, model_name: str, device: torch.device, rows: int = 12) -> str:
    """``torch.profiler``'s table of one batched round of ``model_name`` (after a warm-up round), the
    operators sorted by their own CPU time: where a round's time goes."""
    from torch.profiler import ProfilerActivity, profile

    fed, clients = round_setting(args, model_name, device)
    batched_round(fed, clients, args.epochs, seed=0)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as profiler:
        batched_round(fed, clients, args.epochs, seed=1)
    return profiler.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows, max_name_column_width=48)


def measure_round(args: argparse.Namespace, model_name: str, device: torch.device) -> Measured:
    """The round row of ``model_name`` (see the module docstring)."""
    fed, clients = round_setting(args, model_name, device)
    initial = dict(fed.global_params)
    times, trained = {"batched": [], "loop": []}, {}
    for repeat in range(args.repeats + 1):  # the first repetition warms up
        for name, run in (("batched", batched_round), ("loop", loop_round)):
            fed.global_params = dict(initial)
            total, training, trained[name] = run(fed, clients, args.epochs, seed=repeat)
            if repeat:
                times[name].append((total, training))
    flops = 6 * count_macs(fed.model, tuple(fed.train_x.shape[1:])) * args.clients * args.samples * args.epochs
    median = {name: [statistics.median(t[i] for t in measured) for i in (0, 1)] for name, measured in times.items()}
    label = f"{model_name}, {args.clients} x {args.samples} samples x {args.epochs} epochs"
    return Measured(label, median["batched"][0], median["loop"][0], median["batched"][1], median["loop"][1], flops,
                    max_difference(trained["batched"], trained["loop"]))


def measure_episodes(episodes: int, device: torch.device, engine: str = "auto") -> Measured:
    """The episode row: local training of ``episodes`` episodes of the default federation (after one
    unmeasured warm-up episode) with ``engine``, batched and looped request by request."""
    env = ClientSelectionEnv(EnvConfig(device=str(device), engine=engine))
    policy = make_policy("random")
    spent = {"batched": 0.0, "loop": 0.0, "flops": 0.0, "difference": 0.0}
    macs = env.simulator.model_macs

    def serve(request: TrainRequest) -> TrainResult:
        fed = request.federation
        if fed.config.momentum or fed.config.weight_decay or fed.config.fedprox_mu:
            raise ValueError("the episode row compares plain SGD only (momentum, weight decay and mu must be 0)")
        states = [g.get_state() for g in request.generators]
        starts = starting_point(request)[0] if request.start is not None else None
        synchronize(device)
        start = time.perf_counter()
        result = train_together([request])[0]
        synchronize(device)
        middle = time.perf_counter()
        generators = [torch.Generator().set_state(s) for s in states]
        params, _ = idiomatic_loop(global_model(fed), fed.train_x, fed.train_y,
                                   [fed.client_indices[c] for c in request.clients], [(request.epochs, generators)],
                                   fed.config.lr, fed.config.batch_size, fed.drop_last, starts)
        synchronize(device)
        spent["batched"] += middle - start
        spent["loop"] += time.perf_counter() - middle
        spent["flops"] += 6 * macs * float(result.samples.sum())
        spent["difference"] = max(spent["difference"], max_difference(result.params, params))
        return result

    for seed in range(episodes + 1):
        if seed == 1:  # the first episode warms up
            spent.update(batched=0.0, loop=0.0, flops=0.0, difference=0.0)
        observations, infos = drive(env.reset_process(seed), serve)
        policy.reset(seed)
        while env.agents:
            observations, _, _, _, infos = drive(env.step_process(policy.act(observations, infos)), serve)
    config = env.config
    label = (f"{config.model}, default federation, {episodes} episode{'s' * (episodes > 1)}, engine {engine} "
             f"({config.num_clients} clients, {config.num_rounds} rounds)")
    return Measured(label, spent["batched"], spent["loop"], spent["batched"], spent["loop"], spent["flops"],
                    spent["difference"])


def drive(process, serve):
    """Run an env process to its end, answering each training request with ``serve(request)``."""
    try:
        request = next(process)
        while True:
            request = process.send(serve(request))
    except StopIteration as stop:
        return stop.value


def scaling_run(num_clients: int, data_root: str, trace: str, steps: int) -> tuple[float, float, float, float | None]:
    """In this process: ``(median s per env step, s to build and reset, peak RSS MiB, peak RSS MiB during
    the steps or None)`` of the default federation on full MNIST with ``num_clients`` clients and 10
    candidates per round (FedAvg selects all). The peak during the steps is read from Linux's
    ``VmHWM`` after resetting it (``/proc/self/clear_refs``); None where that is not available."""
    start = time.perf_counter()
    env = ClientSelectionEnv(EnvConfig(dataset="mnist", data_root=data_root, num_clients=num_clients,
                                       clients_per_round=10, num_rounds=steps, trace=trace, device="cpu"))
    policy = make_policy("fedavg")
    observations, infos = env.reset(seed=0)
    policy.reset(0)
    built = time.perf_counter() - start
    peak_reset = _reset_peak_rss()
    step_times = []
    while env.agents:
        start = time.perf_counter()
        observations, _, _, _, infos = env.step(policy.act(observations, infos))
        step_times.append(time.perf_counter() - start)
    during = _peak_rss_mib() if peak_reset else None
    return (statistics.median(step_times), built, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, during)


def _reset_peak_rss() -> bool:
    """Reset this process's peak RSS (Linux: write 5 to /proc/self/clear_refs); True if done."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _peak_rss_mib() -> float:
    """This process's peak RSS since the last reset, MiB (Linux ``VmHWM``)."""
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def measure_scaling(data_root: str, steps: int) -> list[str]:
    """Lines of the scaling rows, each client count in a fresh process."""
    lines = []
    with tempfile.TemporaryDirectory() as folder:
        trace = Path(folder) / "scaling.json"
        devices = read_device_table(SHIPPED_TRACES_DIR / "devices.csv")
        trace.write_text(dumps_trace(generate_trace(devices, max(SCALING_CLIENTS), num_rounds=100, seed=0)))
        for clients in SCALING_CLIENTS:
            with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
                step_s, built_s, peak, during = pool.submit(scaling_run, clients, data_root, str(trace),
                                                            steps).result()
            stepping = f"{during:.0f} MiB during the steps" if during is not None else "no peak of the steps alone"
            lines.append(f"{clients:>6} clients, 10 candidates: {step_s:.3f} s per step (median of {steps}), "
                         f"build + reset {built_s:.1f} s; peak RSS {peak:.0f} MiB, {stepping}")
    return lines


TARGETS = {"ratio": 4.0, "lenet5-classic of matmul": 0.40, "episode of matmul": 0.55}
"""The CPU targets: lenet5-classic (100 x 60 x 2) at least 4x the loop and 40 % of the matmul rate; the
default federation's MLP training over whole episodes (engine ``auto``) at least 55 % of it."""


def target_lines(classic: Measured, episode: Measured, rate: float) -> list[str]:
    """One line per :data:`TARGETS` entry: the measured value and whether it is met."""
    measured = {"ratio": classic.loop_s / classic.batched_s,
                "lenet5-classic of matmul": classic.train_flops / classic.batched_train_s / rate,
                "episode of matmul": episode.train_flops / episode.batched_train_s / rate}
    return [f"target {name}: >= {target:g}, measured {value:.3g}: {'met' if value >= target else 'NOT met'}"
            for name, target in TARGETS.items() for value in [measured[name]]]


def machine_line(device: torch.device) -> str:
    return (f"device {device}; torch threads {torch.get_num_threads()}; {os.cpu_count()} CPUs; "
            f"load average {os.getloadavg()[0]:.2f} (1 min)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=None, choices=MODELS,
                        help="run one round setting with this model (default: every row)")
    parser.add_argument("--clients", type=int, default=100, help="candidates per round")
    parser.add_argument("--samples", type=int, default=60, help="training samples per client")
    parser.add_argument("--epochs", type=int, default=2, help="local epochs (the first is the probing epoch)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--dataset", default="mnist5k", choices=DATASETS)
    parser.add_argument("--data-root", default=None, help="folder holding MNIST/ (torchvision layout); the "
                        "scaling rows need it")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--engine", default="auto", choices=ENGINES, help="gradient path of the batched engine")
    parser.add_argument("--cpu-chunk-mib", type=float, default=CPU_CHUNK_BYTES / 2**20,
                        help="activation budget of one chunk of clients on a CPU (fedenv.engine.grad_fns.cpu_chunked); "
                             "0: all clients at once")
    parser.add_argument("--test-samples", type=int, default=None,
                        help="evaluate on a fixed subset of the test split (default: all of it)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=2, help="measured episodes of the episode row")
    parser.add_argument("--scaling-steps", type=int, default=5, help="env steps per client count")
    parser.add_argument("--matmul-size", type=int, default=2048)
    parser.add_argument("--profile", action="store_true",
                        help="print torch.profiler's table of one batched round of --model (default lenet5-classic) "
                             "instead of the rows")
    args = parser.parse_args(argv)
    if args.cpu_chunk_mib < 0:
        parser.error(f"--cpu-chunk-mib {args.cpu_chunk_mib:g}: must be >= 0 (0: all clients at once)")

    device = resolve_device(args.device)
    print(machine_line(device))
    if args.profile:
        print(profile_round(args, args.model or "lenet5-classic", device))
        return
    rate = matmul_rate(device, args.matmul_size)
    print(f"float32 matmul {args.matmul_size}x{args.matmul_size}: {rate / 1e9:.1f} GFLOP/s (best of 5)\n")
    print(HEADER)
    names = [args.model] if args.model else ["lenet5-classic", "lenet5"]
    rows = [measure_round(args, name, device) for name in names]
    for row in rows:
        print(row.line(rate), flush=True)
    if not args.model:
        for engine in ("unfused", "auto"):
            rows.append(measure_episodes(args.episodes, device, engine))
            print(rows[-1].line(rate), flush=True)
    print(f"\nratio = loop / batched time; 'of mm': training FLOP/s / matmul FLOP/s; least train s: training "
          f"FLOPs / matmul FLOP/s. {machine_line(device)}")
    if not args.model:
        for line in target_lines(rows[0], rows[3], rate):
            print(line)
        if args.data_root is None:
            print("\nscaling in clients: skipped (needs --data-root, a folder holding MNIST/)")
        else:
            print(f"\nscaling in clients (full MNIST, {args.scaling_steps} steps each, one process each):")
            for line in measure_scaling(args.data_root, args.scaling_steps):
                print(line, flush=True)
    worst = max(row.difference for row in rows)
    if worst > TOLERANCE:
        sys.exit(f"the batched engine and the loop trained different weights: max |diff| {worst:.1e} > {TOLERANCE}")


if __name__ == "__main__":
    main()
