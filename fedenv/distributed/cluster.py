"""The Ray flags of every entry point and the start-up of the cluster they name."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class RayOptions:
    """Where and how wide to run.

    Attributes:
        address: ``"local"`` (an in-process cluster sized to the machine, or to ``num_workers`` CPUs),
            ``"auto"`` (join the cluster started on this machine by ``ray start``) or ``"ray://host:port"``
            (Ray Client, a remote cluster's head).
        num_workers: rollout actors of a training run, or CPUs of a local cluster; None: one per CPU of
            the cluster.
        worker_gpus: GPUs each worker (evaluation task or rollout actor) reserves; fractions share a GPU
            (0.25: four workers per GPU).
        sync: training only: the workers host the federations and the learner chooses every federation's
            actions each round with its current weights, as in a local run, so that a run is reproducible;
            with one worker it trains the local run's weights (``agents.ray_training``).
    """

    address: str
    num_workers: int | None = None
    worker_gpus: float = 0.0
    sync: bool = False

    def __post_init__(self):
        if not (self.address in ("local", "auto") or self.address.startswith("ray://")):
            raise ValueError(f"--ray-address={self.address!r}: allowed are local, auto or ray://host:port")
        if self.num_workers is not None and self.num_workers < 1:
            raise ValueError(f"--num-workers={self.num_workers} must be >= 1")
        if self.worker_gpus < 0:
            raise ValueError(f"--worker-gpus={self.worker_gpus} must be >= 0")


def add_ray_arguments(parser: argparse.ArgumentParser, training: bool = False) -> None:
    """Add ``--ray-address``, ``--num-workers``, ``--worker-gpus`` and, with ``training``, ``--sync``
    (group "scaling out on Ray")."""
    group = parser.add_argument_group("scaling out on Ray", "run episodes on a Ray cluster (needs the ray extra)")
    group.add_argument("--ray-address", default=None, metavar="ADDRESS",
                       help="local (start a cluster in this process, sized to the machine or to --num-workers), "
                            "auto (join the cluster of `ray start` on this machine) or ray://HOST:PORT "
                            "(default: no Ray, run in this process)")
    group.add_argument("--num-workers", type=int, default=None, metavar="W",
                       help="parallel workers (training: rollout actors; local cluster: its CPUs) "
                            "(default: one per CPU of the cluster)")
    group.add_argument("--worker-gpus", type=float, default=0.0, metavar="G",
                       help="GPUs per worker; fractions put several workers on one GPU (default: %(default)s)")
    if training:
        group.add_argument("--sync", action="store_true",
                           help="reproducible distributed training: the learner chooses every federation's "
                                "actions each round with its current weights, as locally; one worker trains "
                                "the local run's weights (slower: one round trip per FL round)")


def ray_options_from_args(args: argparse.Namespace) -> RayOptions | None:
    """The options of :func:`add_ray_arguments`'s flags; None without ``--ray-address``.

    Raises:
        ValueError: ``--num-workers``, ``--worker-gpus`` or ``--sync`` without ``--ray-address``, or a bad value.
    """
    sync = getattr(args, "sync", False)
    if args.ray_address is None:
        if args.num_workers is not None or args.worker_gpus or sync:
            raise ValueError("--num-workers, --worker-gpus and --sync need --ray-address (local, auto or "
                             "ray://host:port)")
        return None
    return RayOptions(args.ray_address, args.num_workers, args.worker_gpus, sync)


def start_ray(options: RayOptions) -> int:
    """Connect to (or start) the cluster of ``options`` unless Ray is already initialised in this process,
    then check that the cluster can hold what ``options`` asks for (:func:`check_cluster`).

    A local cluster gets ``num_workers`` CPUs (default: ``os.cpu_count()``); Ray sets ``OMP_NUM_THREADS``
    of each worker to the CPUs it reserves (one), so workers do not oversubscribe the machine.

    Returns:
        The CPUs of the cluster.

    Raises:
        ValueError: the cluster is smaller than asked for (:func:`check_cluster`).
    """
    import ray

    if not ray.is_initialized():
        if options.address == "local":
            ray.init(num_cpus=options.num_workers or os.cpu_count(), include_dashboard=False)
        else:
            ray.init(address=options.address)
    resources = ray.cluster_resources()
    return check_cluster(options, resources.get("CPU", 0.0), resources.get("GPU", 0.0))


def check_cluster(options: RayOptions, cpus: float, gpus: float) -> int:
    """Check a cluster of ``cpus`` CPUs and ``gpus`` GPUs (Ray's ``cluster_resources()``) against
    ``options``: every worker (rollout actor or evaluation task) reserves one CPU and ``worker_gpus`` GPUs,
    and Ray waits without end for resources a cluster does not have (ray-project/ray #6047, #35495), so a
    request it cannot place is refused here instead.

    Returns:
        The cluster's whole CPUs.

    Raises:
        ValueError: no whole CPU, more ``--num-workers`` than CPUs, or ``--worker-gpus`` above the GPUs;
            the message names the flag and what the cluster has.
    """
    whole_cpus = int(cpus)
    where = f"the Ray cluster (--ray-address {options.address})"
    if whole_cpus < 1:
        raise ValueError(f"{where} has {cpus:g} CPUs; every worker needs one")
    if options.num_workers is not None and options.num_workers > whole_cpus:
        raise ValueError(f"--num-workers={options.num_workers}: {where} has {whole_cpus} CPUs and every worker "
                         f"takes one; give --num-workers {whole_cpus} or fewer (or a larger cluster)")
    if options.worker_gpus > gpus:
        raise ValueError(f"--worker-gpus={options.worker_gpus:g}: {where} has {gpus:g} GPUs; give --worker-gpus "
                         f"{gpus:g} or less")
    return whole_cpus
