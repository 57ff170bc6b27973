"""Fixed policies, each ``NAME`` or ``NAME:OPTION=VALUE,...`` (:func:`fedenv.baselines.policy_from_spec`), in the
learned-agent study's settings (:data:`benchmarks.agent_study_settings.SETTINGS`) on validation seeds: how a
demonstrator for ``train_agents.py --vdn-demonstrator`` is chosen without reading the held-out seeds (1000 and up).

Prints a Markdown table, a row per setting and a column per policy: the mean team return over the seeds, each
policy in its own probing mode (:func:`fedenv.evaluation.evaluate_policies`).

    python -m benchmarks.rule_sweep --policies fastest oort stale-fastest stale-fastest:k=2 stale-fastest:k=3 \\
        stale-fastest:k=4 --settings trained 4x 8x        # docs/results/learned-agent.md, seeds 500-507
    python -m benchmarks.rule_sweep --dataset mnist --data-root DIR --num-clients 100 --clients-per-round 10 \\
        --train-samples 20000 --policies fastest oort stale-fastest stale-fastest:k=2 --settings trained 4x 8x
    python -m benchmarks.rule_sweep --quick               # CI size (seconds)

The federation is the default one, or what the :class:`fedenv.config.EnvConfig` flags make of it (as
``evaluate.py`` takes them; ``--data-root`` also serves the settings that read a dataset).
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file, python benchmarks/NAME.py: import this checkout (repo root), as -m does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

from benchmarks.agent_study_settings import SETTINGS, setting_config
from benchmarks.common import QUICK_FEDERATION
from fedenv.baselines import policy_from_spec
from fedenv.cli import FlagParser, add_env_arguments, env_config_from_args
from fedenv.config import EnvConfig
from fedenv.evaluation import evaluate_policies

VALIDATION_SEEDS = tuple(range(500, 508))
"""The default seeds: ``train_agents.py``'s validation seeds of the studies (``--val-seeds 500 ... 507``)."""
DEFAULTS = dict(policies=["fastest", "oort", "stale-fastest"], settings=["trained"], seeds=list(VALIDATION_SEEDS))
"""What a run evaluates where ``--policies``, ``--settings`` or ``--seeds`` is not given."""
QUICK = dict(policies=["fastest", "stale-fastest:k=2,last_rounds=1"], settings=["trained", "4x"], seeds=[500])
"""The same under ``--quick``, in :data:`benchmarks.common.QUICK_FEDERATION` (a flag given wins)."""


def sweep(federation: EnvConfig, specs: list[str], settings: list[str], seeds: list[int],
          data_root: str | None = None) -> dict[str, dict[str, float]]:
    """``setting -> policy spec -> mean team return`` over ``seeds``, every policy on the same seeds.

    Raises:
        ValueError: an unknown setting or one that needs ``data_root`` without it
            (:func:`benchmarks.agent_study_settings.setting_config`), a spec that cannot be built.
    """
    table = {}
    for setting in settings:
        config = setting_config(federation, setting, data_root)
        policies = [policy_from_spec(spec, num_rounds=config.num_rounds) for spec in specs]
        records = evaluate_policies(config, policies, list(seeds), progress=True)
        table[setting] = {spec: float(np.mean([r.team_return for r in records[spec]])) for spec in specs}
    return table


def markdown(table: dict[str, dict[str, float]]) -> str:
    """The sweep as a Markdown table, returns to 3 decimals."""
    specs = list(next(iter(table.values())))
    lines = ["| setting | " + " | ".join(f"`{spec}`" for spec in specs) + " |", "|---" * (len(specs) + 1) + "|"]
    lines += [f"| {setting} | " + " | ".join(f"{row[spec]:.3f}" for spec in specs) + " |"
              for setting, row in table.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = FlagParser(prog="python -m benchmarks.rule_sweep", description=__doc__)
    parser.add_argument("--policies", nargs="+", metavar="POLICY[:OPTION=VALUE,...]",
                        help="default: fastest oort stale-fastest")
    parser.add_argument("--settings", nargs="+", metavar="SETTING", choices=list(SETTINGS), help="default: trained")
    parser.add_argument("--seeds", nargs="+", type=int, help="env seeds (default: 500-507, the studies' validation "
                                                              "seeds)")
    parser.add_argument("--quick", action="store_true", help=f"CI size: {QUICK} in the 3-client federation")
    add_env_arguments(parser, skip=("probing",))
    args = parser.parse_args(argv)
    defaults = QUICK if args.quick else DEFAULTS  # what a flag not given takes
    options = {key: defaults[key] if getattr(args, key) is None else getattr(args, key) for key in defaults}
    if len(set(options["policies"])) < len(options["policies"]):
        parser.error(f"--policies names a policy twice: {' '.join(options['policies'])}")
    try:
        federation = env_config_from_args(args, EnvConfig(**QUICK_FEDERATION) if args.quick else None)
        table = sweep(federation, options["policies"], options["settings"], options["seeds"], federation.data_root)
    except ValueError as error:
        parser.error(str(error))
    print(f"mean team return over seeds {', '.join(map(str, options['seeds']))}:")
    print(markdown(table))
    return table


if __name__ == "__main__":
    main()
