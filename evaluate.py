"""Evaluate policies on identical held-out seeds: table, results.csv, results.json and plots.

    python evaluate.py --checkpoint runs/<run>/checkpoint.pt --out results/
    python evaluate.py --checkpoint 'runs/seed*/checkpoint.pt' --policies all   # vdn over training runs
    python evaluate.py --checkpoint runs/seed0/checkpoint.pt runs/seed1/checkpoint.pt --policies all
    python evaluate.py --checkpoint runs/<run>/checkpoint.pt --num-clients 40    # transfer
    python evaluate.py --policies fedavg,random --episodes 3 --num-clients 20
    python evaluate.py --policies fedavg,oort stale-fastest:k=2,drop=0     # a policy with its options

Seeds are 1000 .. 1000 + episodes - 1 (10 episodes by default) unless ``--seeds`` is given; every
policy runs the same seeds. With ``--checkpoint`` the environment is rebuilt from the checkpoint's
config (flags override it) and policy ``vdn`` is available. Several checkpoints (paths or quoted glob
patterns, e.g. one per training seed) must come from the same environment; ``vdn`` is then one row,
pooled over its training runs and the evaluation seeds. The fields a flag changes from the training
environment are printed above the table and written to results.json (``transfer``: ``trained_on`` /
``evaluated_on``).

Under the table, every policy's paired difference (policy minus reference on the same seeds) of the team
return and of the final accuracy is printed against FedAvg and against the best fixed policy by mean
team return (among the baselines that ``--policies all`` compares, with or without options; a reference of ours named
in ``--policies``, such as ``stale-fastest``, is compared but is never that yardstick), with a 95 %
bootstrap confidence interval over the evaluation seeds (and over training runs for ``vdn`` from several
checkpoints; :mod:`fedenv.evaluation.paired`), labelled "better", "level" or "worse" from the interval
alone; results.csv and results.json hold the same intervals.

Each policy runs in its own probing mode (``Policy.probes``, the ``probing`` column of the table and of
results.csv): a learned policy in the mode it was trained in (FedMarl's probing by default: every
candidate trains a probing epoch before the decision), the pre-selection baselines without (only the
selected clients train), so that each is charged for what it makes clients do. ``--probing on`` or
``--probing off`` runs every policy in that mode (``--probing policy``, the default, keeps each policy's
own).
"""

from __future__ import annotations

import glob
import sys
from datetime import datetime
from pathlib import Path

from fedenv.baselines import (
    DEFAULT_SELECT_FRACTION,
    check_policy_options,
    compared_policies,
    parse_policy_spec,
    policy_from_spec,
)
from fedenv.cli import FlagParser, add_env_arguments, env_config_from_args, parse_with_config_file
from fedenv.distributed import add_ray_arguments, ray_options_from_args, start_ray
from fedenv.distributed.entry import run_compare
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation import RESULT_FILES, config_differences, policy_config, shared_training_config
from fedenv.fileio import claim_output_folder
from fedenv.names import check_known
from fedenv.observation import feature_names, layout_options
from fedenv.registry import POLICIES

FIRST_EVAL_SEED = 1000
DEFAULT_EPISODES = 10
"""Held-out evaluation seeds per policy by default: at least 10, so that the paired bootstrap intervals
(:mod:`fedenv.evaluation.paired`) rest on enough seeds (Agarwal et al., NeurIPS 2021, on few-run
evaluations)."""
PROBING_MODES = {"policy": None, "on": True, "off": False}
"""``--probing`` values: None runs each policy in its own mode (``Policy.probes``)."""


def build_parser() -> FlagParser:
    """The parser of every flag: the evaluation's own, ``--preset`` and the EnvConfig fields."""
    parser = FlagParser(prog="evaluate.py", description=__doc__)
    parser.add_argument("--checkpoint", nargs="+", default=None, metavar="PATH",
                        help="checkpoint.pt written by train_agents.py: adds policy vdn (its greedy policy) and "
                             "rebuilds the environment from the checkpoint's config (flags override it); several "
                             "paths or glob patterns (runs of the same environment, e.g. training seeds) make "
                             "one vdn row pooled over the runs, its confidence intervals resampling runs too")
    parser.add_argument("--sb3", default=None, metavar="DIR",
                        help="a Stable-Baselines3 policy saved by examples/sb3_*.py (adds it to the policies; "
                             "needs the [sb3] extra)")
    parser.add_argument("--policies", nargs="+", default=None, metavar="POLICY",
                        help=f"policies to compare: 'all' ({', '.join(compared_policies())}, and vdn with "
                             "--checkpoint), or items each a comma-separated list of names or one policy with "
                             "options, NAME:OPTION=VALUE,... (e.g. --policies fedavg,oort stale-fastest:k=2,drop=0); "
                             f"allowed: {', '.join(POLICIES.names())}, vdn (default: fedavg,random, and vdn when "
                             "--checkpoint is given). Policies that count rounds take the federation's --num-rounds")
    parser.add_argument("--select-fraction", type=float, default=DEFAULT_SELECT_FRACTION, metavar="F",
                        help="share m / candidates in (0, 1] that fedcm-ucb, fedcm-ts, oort and fastest select "
                             "each round (default: %(default)s, FedCM's 8 of 20 clients)")
    parser.add_argument("--episodes", type=int, default=DEFAULT_EPISODES, metavar="N",
                        help=f"episodes per policy, on env seeds {FIRST_EVAL_SEED} .. {FIRST_EVAL_SEED} + N - 1 "
                             "(default: %(default)s; the paired confidence intervals need >= 2, and are wide "
                             "with few)")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, metavar="SEED",
                        help="explicit env seeds, the same for every policy (overrides --episodes)")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="folder for results.csv, results.json and the plots (default: results/<timestamp>); "
                             "a folder holding another evaluation is refused")
    parser.add_argument("--overwrite", action="store_true",
                        help="delete the files of another evaluation in --out (results.csv, results.json, the "
                             "plots) first; other files there are left")
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


def checkpoint_paths(patterns: list[str]) -> list[str]:
    """``--checkpoint`` values with glob patterns expanded (sorted), each path once.

    Raises:
        FileNotFoundError: a pattern that matches no file.
    """
    paths = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matches:
            raise FileNotFoundError(f"--checkpoint {pattern!r} matches no file")
        paths += [m for m in matches if m not in paths]
    return paths


def load_checkpoints(patterns: list[str]):
    """The greedy policies of the checkpoints ``patterns`` name, their paths, and the environment they
    were all trained in.

    Raises:
        FileNotFoundError, ValueError: a missing or unreadable checkpoint, checkpoints of different learner
            variants (:func:`agents.policy.variant_name`), or checkpoints trained in different environments
            (:func:`~fedenv.evaluation.shared_training_config`).
    """
    from agents.policy import GreedyPolicy

    paths = checkpoint_paths(patterns)
    policies = [GreedyPolicy.from_checkpoint(path) for path in paths]
    for policy, path in zip(policies[1:], paths[1:]):
        if policy.variant != policies[0].variant:
            raise ValueError(f"checkpoints {paths[0]} and {path} hold different learner variants "
                             f"({policies[0].variant} vs {policy.variant}): evaluate them in separate runs")
    return policies, paths, shared_training_config([p.env_config for p in policies], paths)


def build_policies(specs: list[str], learned: list, paths: list[str], **settings):
    """The policies ``specs`` asks for (:func:`policy_specs`), ``vdn`` once per checkpoint, and the checkpoint of
    each (None for a fixed policy), in the same order. A fixed policy is built by
    :func:`~fedenv.baselines.policy_from_spec` with ``settings`` (``select_fraction``, ``num_rounds``) where it
    takes them.

    Raises:
        ValueError: an option a policy does not take, or a value it refuses (the message names the spec).
    """
    policies, checkpoints = [], []
    for spec in specs:
        if spec == "vdn":
            policies += learned
            checkpoints += paths
        else:
            try:
                policies.append(policy_from_spec(spec, **settings))
            except ValueError as error:
                raise ValueError(f"--policies {spec}: {error}") from None
            checkpoints.append(None)
    return policies, checkpoints


def policy_specs(items: list[str] | None, learned: bool) -> list[str]:
    """The policies ``--policies`` names: ``all``; items that are each a comma-separated list of names or one
    policy with options, ``NAME:OPTION=VALUE,...`` (:func:`~fedenv.baselines.parse_policy_spec`; its commas
    separate its options); or None: fedavg, random and, with a checkpoint (``learned``), vdn. Each is written
    without stray spaces or empty parts (``fedavg, random`` -> ``fedavg`` and ``random``), and its option names
    are checked here, its values when it is built (:func:`build_policies`). With a checkpoint and a list that
    leaves vdn out, warns on stderr that the checkpoint then only sets the federation.

    Raises:
        ValueError: an unknown name (the message lists the allowed ones), a malformed option or one the policy
            does not take, ``all`` beside other items, a list of names with options, the same policy twice,
            options given to vdn, or vdn without a checkpoint.
    """
    if items is None:
        specs = ["fedavg", "random", *(["vdn"] if learned else [])]
    else:
        specs = [spec for item in items for spec in split_policies(item)]
        if specs == ["all"]:
            specs = [*compared_policies(), *(["vdn"] if learned else [])]
        elif "all" in specs:
            raise ValueError(f"--policies {' '.join(items)}: 'all' stands alone")
    seen = {}
    for spec in specs:
        name, options = parse_policy_spec(spec)
        check_known(name, [*POLICIES.names(), "vdn"], "policy", field=False)
        if name == "vdn" and options:
            raise ValueError(f"--policies {spec}: vdn takes no options (its checkpoint sets it)")
        if name != "vdn":
            check_policy_options(name, options)
        key = (name, tuple(sorted(options.items())))
        if key in seen:
            raise ValueError(f"--policies names one policy twice: {seen[key]} and {spec}")
        seen[key] = spec
    if "vdn" in specs and not learned:
        raise ValueError("policy vdn needs --checkpoint PATH")
    if learned and "vdn" not in specs:
        print("warning: --policies leaves out vdn, so the checkpoint sets the federation only and its agent is not "
              "evaluated (add vdn to --policies)", file=sys.stderr, flush=True)
    return specs


def split_policies(item: str) -> list[str]:
    """The policies of one ``--policies`` item, each without stray spaces or empty parts: the names of a
    comma-separated list, or the one policy of ``NAME:OPTION=VALUE,...``.

    Raises:
        ValueError: an item with options whose name part is a list (``fedavg,oort:select_fraction=0.5``).
    """
    name, colon, text = item.partition(":")
    if not colon:
        return [part.strip() for part in item.split(",") if part.strip()]
    if "," in name:
        raise ValueError(f"--policies {item}: an item with options holds one policy; give the names before it as "
                         f"an item of their own ({name.rpartition(',')[0]} {name.rpartition(',')[2]}:{text})")
    options = [part.strip() for part in text.split(",") if part.strip()]
    return [name.strip() + (":" + ",".join(options) if options else "")]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parse_with_config_file(parser, argv)
    learned, paths, base = [], [], None
    if args.checkpoint:
        try:
            learned, paths, base = load_checkpoints(args.checkpoint)
        except (FileNotFoundError, ValueError) as error:
            parser.error(str(error))
    policy = learned[0] if learned else None
    try:
        specs = policy_specs(args.policies, policy is not None)
    except ValueError as error:
        parser.error(str(error))
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
        ClientSelectionEnv(env_config)  # every error a configuration can cause (partition included), before output
        policies, checkpoints = build_policies(specs, learned, paths, select_fraction=args.select_fraction,
                                               num_rounds=env_config.num_rounds)
        ray_options = ray_options_from_args(args)
        if ray_options is not None:
            start_ray(ray_options)  # a cluster too small for --num-workers is refused, never waited on
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    for each in learned:
        try:
            each.check_layout(feature_names(**layout_options(env_config)))
        except ValueError as error:
            parser.error(str(error))
    policies += extra
    checkpoints += [None] * len(extra)
    probing = PROBING_MODES[args.probing_mode]
    transfer = config_differences(base, policy_config(env_config, policy, probing)) if policy else None
    seeds = args.seeds or list(range(FIRST_EVAL_SEED, FIRST_EVAL_SEED + args.episodes))
    out = Path(args.out or Path("results") / datetime.now().strftime("%Y%m%d-%H%M%S"))
    try:
        claim_output_folder(out, RESULT_FILES, args.overwrite,
                            f"--out {out} holds another evaluation: choose another folder, or give --overwrite "
                            f"to clear it first")
    except ValueError as error:
        parser.error(str(error))
    if learned:
        print(f"vdn: learner variant {learned[0].variant} ({len(learned)} checkpoint{'s' * (len(learned) > 1)})")
    try:
        run_compare(ray_options, env_config, policies, seeds, out, progress=not args.no_progress,
                    probing=probing, checkpoints=checkpoints, transfer=transfer)
    except (ValueError, FileNotFoundError) as error:  # raised while the env is built, before any episode
        parser.error(str(error))
    return 0


if __name__ == "__main__":
    sys.exit(main())
