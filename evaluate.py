"""Evaluate policies on identical held-out seeds: table, results.csv, results.json and plots.

    python evaluate.py --checkpoint runs/<run>/checkpoint.pt --episodes 5 --out results/
    python evaluate.py --policies fedavg,random --episodes 3 --num-clients 20

Seeds are 1000 .. 1000 + episodes - 1 unless ``--seeds`` is given; every policy runs the same seeds.
With ``--checkpoint`` the environment is rebuilt from the checkpoint's config (flags override it) and
policy ``vdn`` is available.

Each policy runs in its own probing mode (``Policy.probes``, the ``probing`` column of the table and of
results.csv): the learned policies with probing (every candidate trains a probing epoch before the
decision), the pre-selection baselines without (only the selected clients train), so that each is
charged for what it makes clients do. ``--probing on`` or ``--probing off`` runs every policy in that
mode (``--probing policy``, the default, keeps each policy's own); a checkpoint's probing setting is not
used.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

from fedenv.baselines import DEFAULT_SELECT_FRACTION, make_policy, options_for
from fedenv.cli import FlagParser, add_env_arguments, env_config_from_args, parse_with_config_file
from fedenv.distributed import add_ray_arguments, ray_options_from_args
from fedenv.distributed.entry import run_compare
from fedenv.observation import feature_names
from fedenv.registry import POLICIES

FIRST_EVAL_SEED = 1000
PROBING_MODES = {"policy": None, "on": True, "off": False}
"""``--probing`` values: None runs each policy in its own mode (``Policy.probes``)."""


def build_parser() -> FlagParser:
    """The parser of every flag: the evaluation's own, ``--preset`` and the EnvConfig fields."""
    parser = FlagParser(prog="evaluate.py", description=__doc__)
    parser.add_argument("--checkpoint", default=None, metavar="PATH",
                        help="checkpoint.pt written by train_agents.py: adds policy vdn (its greedy policy) and "
                             "rebuilds the environment from the checkpoint's config (flags override it)")
    parser.add_argument("--sb3", default=None, metavar="DIR",
                        help="a Stable-Baselines3 policy saved by examples/sb3_*.py (adds it to the policies; "
                             "needs the [sb3] extra)")
    parser.add_argument("--policies", default=None, metavar="NAMES",
                        help=f"policies to compare, comma-separated, or 'all'; allowed: {', '.join(POLICIES.names())}, "
                             "vdn (default: fedavg,random, and vdn when --checkpoint is given)")
    parser.add_argument("--select-fraction", type=float, default=DEFAULT_SELECT_FRACTION, metavar="F",
                        help="share m / candidates in (0, 1] that fedcm-ucb, fedcm-ts, oort and fastest select "
                             "each round (default: %(default)s, FedCM's largest sampling ratio)")
    parser.add_argument("--episodes", type=int, default=5, metavar="N",
                        help=f"episodes per policy, on env seeds {FIRST_EVAL_SEED} .. {FIRST_EVAL_SEED} + N - 1 "
                             "(default: %(default)s)")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, metavar="SEED",
                        help="explicit env seeds, the same for every policy (overrides --episodes)")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="folder for results.csv, results.json and the plots (default: results/<timestamp>)")
    parser.add_argument("--config", default=None, metavar="FILE",
                        help="YAML or JSON file mapping flag names (dashes or underscores) to values; flags "
                             "given on the command line override it")
    parser.add_argument("--no-progress", action="store_true",
                        help="hide the progress bar (for logs and batch jobs)")
    parser.add_argument("--probing", choices=tuple(PROBING_MODES), default="policy", dest="probing_mode",
                        help="'policy': each policy in its own mode (learned policies probe, pre-selection "
                             "baselines do not); 'on' / 'off': every policy with / without the probing epoch "
                             "(default: %(default)s)")
    add_env_arguments(parser, skip=("probing",))
    add_ray_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parse_with_config_file(parser, argv)
    policy = None
    base = None
    if args.checkpoint:
        from agents.policy import GreedyPolicy

        try:
            policy = GreedyPolicy.from_checkpoint(args.checkpoint)
        except (FileNotFoundError, ValueError) as error:
            parser.error(str(error))
        base = policy.env_config
    if args.policies == "all":
        names = list(POLICIES.names()) + (["vdn"] if policy else [])
    else:
        names = args.policies.split(",") if args.policies else ["fedavg", "random"] + (["vdn"] if policy else [])
    allowed = list(POLICIES.names()) + ["vdn"]
    for name in names:
        if name not in allowed:
            parser.error(f"unknown policy {name!r}; allowed: {', '.join(allowed)}")
    if "vdn" in names and policy is None:
        parser.error("policy vdn needs --checkpoint PATH")
    extra = []
    if args.sb3:
        from fedenv.integrations.sb3 import SB3Policy

        try:
            extra.append(SB3Policy.load(args.sb3))
        except (FileNotFoundError, ValueError) as error:
            parser.error(str(error))
        base = base or extra[0].env_config
    if args.episodes < 1:
        parser.error(f"--episodes={args.episodes} must be >= 1")
    if not 0.0 < args.select_fraction <= 1.0:
        parser.error(f"--select-fraction={args.select_fraction} must be in (0, 1]")
    try:
        env_config = env_config_from_args(args, base)
    except ValueError as error:
        parser.error(str(error))
    if policy is not None:
        try:
            policy.check_layout(feature_names(env_config.history_length))
        except ValueError as error:
            parser.error(str(error))
    options = {name: options_for(name, select_fraction=args.select_fraction) for name in names if name != "vdn"}
    policies = [policy if name == "vdn" else make_policy(name, **options[name]) for name in names] + extra
    seeds = args.seeds or list(range(FIRST_EVAL_SEED, FIRST_EVAL_SEED + args.episodes))
    out = Path(args.out or Path("results") / datetime.now().strftime("%Y%m%d-%H%M%S"))
    try:
        run_compare(ray_options_from_args(args), env_config, policies, seeds, out, progress=not args.no_progress,
                    probing=PROBING_MODES[args.probing_mode])
    except (ValueError, FileNotFoundError) as error:  # raised while the env is built, before any episode
        parser.error(str(error))
    return 0


if __name__ == "__main__":
    sys.exit(main())
