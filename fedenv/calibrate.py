"""Calibrate the reward weights on training seeds (docs/design.md section 5).

The rule is :mod:`fedenv.calibration`'s: FedAvg's summed accuracy term (on the reward's split, validation
by default), latency and charged traffic on training seeds set ``w2`` and ``w3`` so that its summed
latency and communication terms are each ``share`` (our default a quarter) of its accuracy term.

    python -m fedenv.calibrate --seeds 10000 10001 10002 10003 10004
    python -m fedenv.calibrate --preset mnist-lenet --data-root ~/data > weights.yaml
    python train_agents.py --preset mnist-lenet --data-root ~/data --config weights.yaml

Environment flags (and ``--preset``) are those of ``train_agents.py``. It prints the two weights as
YAML that ``--config`` reads (the measured sums as comments).
"""

from __future__ import annotations

from fedenv.calibration import CALIBRATION_SEEDS, calibration_env
from fedenv.cli import FlagParser, add_env_arguments, check_options_used, env_config_from_args
from fedenv.distributed import add_ray_arguments, ray_options_from_args, start_ray
from fedenv.distributed.entry import run_calibration


def build_parser() -> FlagParser:
    """The parser of ``python -m fedenv.calibrate``: ``--seeds``, ``--share``, ``--preset``, EnvConfig fields."""
    parser = FlagParser(prog="python -m fedenv.calibrate", description=__doc__)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(CALIBRATION_SEEDS), metavar="SEED",
                        help="training env seeds FedAvg is measured on, never evaluation seeds (default: "
                             f"{' '.join(map(str, CALIBRATION_SEEDS))})")
    parser.add_argument("--share", type=float, default=0.25, metavar="F",
                        help="share in (0, 1] of FedAvg's summed accuracy term that its summed latency term and "
                             "its summed communication term each come to (default: %(default)s, our default)")
    add_env_arguments(parser)
    add_ray_arguments(parser)
    return parser


def main(argv=None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 0.0 < args.share <= 1.0:
        parser.error(f"--share={args.share} must be in (0, 1]")
    try:  # every error of the configuration, partition included, before anything is printed
        config = env_config_from_args(args)
        check_options_used(config)
        ray_options = ray_options_from_args(args)
        env = calibration_env(config)
        if ray_options is not None:
            start_ray(ray_options)  # a cluster too small for --num-workers is refused, never waited on
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    result = run_calibration(ray_options, config, args.seeds, args.share, env)
    print(f"# FedAvg on seeds {args.seeds}: accuracy term {result['accuracy_term']:.6g} "
          f"({config.reward_accuracy_split} accuracy), latency {result['latency_s']:.6g} s, "
          f"charged traffic {result['charged_mb']:.6g} MB ({config.reward_traffic}); share {args.share}")
    print(f"latency_weight: {result['latency_weight']:.6g}")
    print(f"comm_weight: {result['comm_weight']:.6g}")


if __name__ == "__main__":
    main()
