"""Does a learned policy beat every fixed policy and every open-loop schedule, by a margin an interval confirms?

The learned-agent bars (docs/results/learned-agent.md), measured for each learner *variant* (a set of
``train_agents.py`` runs, one per training seed, pooled as one policy):

1. **margin**: the variant's held-out team return minus the best fixed policy's, and minus the best
   open-loop schedule's (``k random, all last L``, :class:`fedenv.baselines.LateRoundsPolicy`, over
   :data:`benchmarks.schedules.DEFAULT_GRID`), each fixed policy in its own probing mode and the schedules
   without probing (they need no report), paired over training runs x evaluation seeds with a 95 %
   bootstrap interval (:func:`fedenv.evaluation.paired.paired_interval`): "better" when it lies above 0;
2. **spread**: the standard deviation of the per-run mean returns at most half the margin over the best
   fixed policy;
3. **transfer**: in each transfer setting (no retraining), the variant's return over the best fixed
   policy's at least 1.2, the ratio's interval above 1 (FedMarl, Zhang et al., AAAI 2022, arXiv
   2201.02932, Sec. 5, Fig. 7: 1.36x at 4K and 1.32x at 8K);
4. **fine-tuning** (with ``--fine-tune-episodes N``; FedMarl, Sec. 5, Table 3: 10 episodes): in each transfer
   setting, ``VARIANT +ftN`` minus the zero-shot variant not worse (the interval's upper bound >= 0), and better
   (the interval above 0) where the zero-shot variant trails a variant trained there from scratch
   (``--scratch``; zero-shot minus scratch "worse"); where zero-shot does not trail, it holds (no gap to
   close); without a scratch variant that half is not measured, unless fine-tuned minus zero-shot is better,
   which meets it either way. Both differences are paired on the
   seeds with both sides' runs resampled (:func:`benchmarks.agent_study_rows.variant_differences`).

The settings (:data:`benchmarks.agent_study_settings.SETTINGS`) are named transformations of the training
federation: ``trained`` (none), ``4x`` and ``8x`` (that many times the clients, the same candidates per
round, drawn from the larger pool), ``epochs-1`` and ``epochs-5`` (that many local epochs per round),
``fmnist`` (Fashion-MNIST from ``--data-root`` in place of the training dataset, the same model and number of
training samples), ``devices`` (held-out device types: the shipped trace ``held-out-devices``) and ``lenet5``
(LeNet-5 in place of the training model); ``--settings`` chooses among them (default: all, ``fmnist`` only
with ``--data-root``).

"Best" is best in hindsight by mean return on the same seeds, which favours the baselines. The fixed
policies and schedules run once per setting, on the environment of the first variant with the fields a
learner variant sets (probing, observation levers) left to each policy; variants that differ in any other
field are refused. Results are kept per setting and group in ``OUT/<setting>/<group>.json``; a rerun
evaluates only what is missing, so two processes can share the work (``--settings``), and ``--write``
puts the tables between the markers of the page.

With ``--fine-tune-episodes N``, each run of every transfer variant is fine-tuned in each transfer setting
evaluated, starting from its checkpoint (:func:`benchmarks.common.fine_tune`: FedMarl's fine-tuning of the
Q-network, exploration at the run's final epsilon), for ``N`` episodes with seed
:func:`benchmarks.agent_study_groups.fine_tune_seed` (run ``i`` of the variant's sorted checkpoints: seed ``i``,
env seeds ``10000 + 1000000 i + episode``, never a held-out seed), then evaluated on the same held-out seeds as
every other policy; the fine-tuned runs form the variant ``VARIANT +ftN`` of that setting
(:meth:`benchmarks.agent_study_groups.FineTuning.name`), with the same columns, its own bars
and its rows in the all-policies table, and the page adds per setting a "fine-tuned minus zero-shot" table.
Their episodes are kept in ``OUT/<setting>/VARIANT +ftN.json`` under a key of the setting's configuration,
the seeds, the checkpoints, ``N``, the fine-tuning seeds (and the validation seeds and ``E`` below, where given):
a rerun does not fine-tune again. With
``--fine-tune-val-seeds S ...`` a run's fine-tuned weights are kept only where they beat its zero-shot weights
on those validation seeds of the setting (one greedy episode each;
:func:`benchmarks.common.fine_tune_validated`), and the variant is named ``VARIANT +ftN-val``. With
``--fine-tune-initial-eps E`` exploration is re-annealed in fine-tuning, from ``E`` to the run's final epsilon over
its exploration fraction of the ``N`` episodes (without it epsilon stays at the final one), and the variant is
named ``VARIANT +ftN-epsE``; with ``--fine-tune-head-only`` only the Q-network's output layer is fine-tuned (the
values' scale and offset re-fitted on the features learned in training), named ``VARIANT +ftN-head`` (``-val``
appended with validation seeds). A scratch
variant (``--scratch SETTING:NAME=GLOB``: runs trained by ``train_agents.py`` in that setting's federation,
checked field by field outside the learner fields, :func:`benchmarks.agent_study_groups.check_scratch`) is
evaluated in its setting only; one whose setting is not evaluated (not in ``--settings``, other than
trained and 4x under ``--quick``, no transfer variants) is refused. So is fine-tuning when no transfer setting is
evaluated.

Under the bars, the page gives per setting an *all-policies* table
(:func:`benchmarks.agent_study_rows.policy_rows`), read from the
same per-episode results: one row per learner variant, fixed policy, schedule and reference policy (in that
order), with
the probing mode it played in, its runs x seeds, and its team return, final accuracy, latency (s),
upload and download (MB), each the mean over runs x seeds with its 95 % bootstrap interval over seeds
and whole runs (:func:`fedenv.evaluation.paired.mean_interval`), and its return ratio to the setting's best
fixed policy (chosen in hindsight, as for the variants), paired on the seeds as a variant's (so a
``--references`` rule, e.g. a demonstrator or a rule tuned on a transfer setting's validation seeds, is read
against the transfer bar). ``OUT/rows.json`` holds these rows under ``policies``, beside the variants' rows and
differences.

    python train_agents.py --no-probing --seed S --run-dir runs/no-probing/seed_S     # S = 0..4, per variant
    python -m benchmarks.agent_study --runs main-job='runs/headline/seed_*/checkpoint.pt' \\
        no-probing='runs/no-probing/seed_*/checkpoint.pt' --no-readme --out results/agent_study --write
    python -m benchmarks.agent_study --runs main-job='runs/main-job/seed_*/checkpoint.pt' --fine-tune-episodes 10 \\
        --scratch 4x:scratch-4x='runs/scratch-4x/seed_*/checkpoint.pt' --no-readme \\
        --out results/agent_study --write
    python -m benchmarks.agent_study --quick --out results/agent_study_quick        # CI size (seconds)

``--quick`` evaluates the settings trained and 4x only and fine-tunes for 1 episode.
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file, python benchmarks/NAME.py: import this checkout (repo root), as -m does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import glob

from agents.checkpoint import load_checkpoint
from agents.config import VDNConfig
from agents.policy import GreedyPolicy
from agents.rollout import TRAINING_SEED_BASE, training_seed
from agents.validation import check_validation_seeds
from benchmarks.agent_study_groups import (
    FineTuning,
    Study,
    check_scratch,
    evaluate_setting,
    reference_policies,
    shared_federation,
)
from benchmarks.agent_study_page import PAGE, README, markdown, write_pages
from benchmarks.agent_study_rows import setting_differences
from benchmarks.agent_study_settings import SETTINGS, TRANSFER_SETTINGS, setting_config
from benchmarks.common import EVAL_SEED_BASE, QUICK_FEDERATION, QUICK_FIXED, checkpoint_path, train_agent
from benchmarks.pages import git_commit
from benchmarks.schedules import DEFAULT_GRID
from fedenv.baselines import compared_policies, parse_policy_spec
from fedenv.config import EnvConfig
from fedenv.fileio import atomic_write_json

QUICK_SETTINGS = ("trained", "4x")
"""The settings ``--quick`` evaluates (of those ``--settings`` names)."""
QUICK_GRID = "1:1"
QUICK_EPISODES = 3
QUICK_VDN = dict(learning_starts=2, batch_size=8)


def parse_runs(items: list[str], flag: str = "--runs") -> dict[str, list[str]]:
    """``NAME=GLOB`` items (of option ``flag``, for the messages) -> ``variant name -> sorted checkpoint paths``.

    Raises:
        ValueError: an item without ``=``, a name given twice, or a pattern that matches no file.
    """
    runs = {}
    for item in items:
        name, sep, pattern = item.partition("=")
        if not sep or not name or not pattern:
            raise ValueError(f"{flag} item {item!r} is not NAME=GLOB (e.g. no-probing='runs/np/seed_*/checkpoint.pt')")
        if name in runs:
            raise ValueError(f"{flag} names variant {name!r} twice")
        paths = sorted(glob.glob(pattern))
        if not paths:
            raise ValueError(f"{flag} {name}={pattern!r} matches no file")
        runs[name] = paths
    return runs


def parse_scratch(items: list[str]) -> dict[str, tuple[str, list[str]]]:
    """``SETTING:NAME=GLOB`` items -> ``setting -> (scratch variant name, sorted checkpoint paths)``: agents
    trained from scratch in a transfer setting's federation (:func:`benchmarks.agent_study_groups.check_scratch`),
    the reference of the fine-tuning bar's second half.

    Raises:
        ValueError: an item without ``SETTING:``, a setting that is not one of
            :data:`benchmarks.agent_study_settings.TRANSFER_SETTINGS`, a setting given twice, or a ``NAME=GLOB``
            that :func:`parse_runs` refuses.
    """
    transfer = TRANSFER_SETTINGS
    scratch: dict[str, tuple[str, list[str]]] = {}
    for item in items:
        setting, sep, run = item.partition(":")
        if not sep or setting not in transfer:
            raise ValueError(f"--scratch item {item!r} is not SETTING:NAME=GLOB with SETTING one of "
                             f"{', '.join(transfer)}")
        if setting in scratch:
            raise ValueError(f"--scratch names setting {setting} twice (one scratch variant per setting)")
        [(name, paths)] = parse_runs([run], flag=f"--scratch {setting}:").items()
        scratch[setting] = (name, paths)
    return scratch

def parse_pairs(items: list[str], variants: list[str]) -> list[tuple[str, str]]:
    """``A:B`` items -> ``(A, B)`` pairs of variant names.

    Raises:
        ValueError: an item that is not two names joined by ``:``, or a name that is not a variant.
    """
    pairs = []
    for item in items:
        a, sep, b = item.partition(":")
        if not sep or a not in variants or b not in variants:
            raise ValueError(f"--compare {item!r} is not A:B with variants of --runs ({', '.join(variants)})")
        pairs.append((a, b))
    return pairs


def train_quick_runs(out: Path) -> dict[str, list[str]]:
    """``--quick``: two CI-sized runs of the main job (3 episodes of :data:`benchmarks.common.QUICK_FEDERATION`),
    trained here unless an earlier ``--quick`` run left them in ``OUT/quick_runs``."""
    paths = []
    for seed in (0, 1):
        run_dir = out / "quick_runs" / f"seed_{seed}"
        if not checkpoint_path(run_dir).exists():
            train_agent(EnvConfig(**QUICK_FEDERATION), QUICK_EPISODES, seed, run_dir, VDNConfig(**QUICK_VDN))
        paths.append(str(checkpoint_path(run_dir)))
    return {"main-job": paths}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", nargs="+", default=[], metavar="NAME=GLOB",
                        help="a learner variant and its checkpoints (one per training seed), pooled as one policy")
    parser.add_argument("--compare", nargs="+", default=[], metavar="A:B",
                        help="also report variant A minus variant B in each setting where both were evaluated "
                             "(the trained setting; a transfer setting when both are --transfer-variants), e.g. "
                             "fewer episodes against the main job's")
    parser.add_argument("--transfer-variants", nargs="*", default=None, metavar="NAME",
                        help="the variants evaluated in the transfer settings (default: every variant; the flag "
                             "alone: none)")
    parser.add_argument("--fine-tune-episodes", type=int, default=0, metavar="N",
                        help="also fine-tune each run of every transfer variant for N episodes in each transfer "
                             "setting evaluated and tabulate them as 'VARIANT +ftN' (FedMarl's 10; default: "
                             "%(default)s, none; --quick: 1)")
    parser.add_argument("--fine-tune-val-seeds", nargs="+", type=int, default=None, metavar="SEED",
                        help="keep a run's fine-tuned weights only if they beat its zero-shot weights on these "
                             "validation seeds of the setting (one greedy episode each; below 10000 and apart from "
                             "the held-out seeds), and name the variant 'VARIANT +ftN-val' (default: keep them)")
    parser.add_argument("--fine-tune-initial-eps", type=float, default=None, metavar="E",
                        help="re-anneal exploration in fine-tuning: epsilon starts at E and falls to each run's final "
                             "epsilon over its exploration fraction of the fine-tuning episodes; the variant is "
                             "named 'VARIANT +ftN-epsE' (default: no re-annealing, epsilon stays at the final one)")
    parser.add_argument("--fine-tune-head-only", action="store_true",
                        help="fine-tune only the Q-network's output layer (re-fit the values' scale and offset to the "
                             "new setting on the features learned in training); the variant's name gets '-head'")
    parser.add_argument("--scratch", nargs="+", default=[], metavar="SETTING:NAME=GLOB",
                        help="a variant trained from scratch in a transfer setting's federation (e.g. 4x:scratch-4x="
                             "'runs/4x/seed_*/checkpoint.pt'), evaluated in that setting only: the reference of the "
                             "fine-tuning bar's second half")
    parser.add_argument("--settings", nargs="+", default=None, choices=list(SETTINGS), metavar="SETTING",
                        help="settings to evaluate and tabulate, of: " + "; ".join(
                            f"{name}: {setting.description}" for name, setting in SETTINGS.items())
                        + " (default: all, those that read --data-root only with it); results already in OUT "
                        "are reused")
    parser.add_argument("--data-root", default=None, metavar="DIR",
                        help="the folder the fmnist setting reads Fashion-MNIST from, in torchvision's layout "
                             "(DIR/FashionMNIST/raw/); never downloaded")
    parser.add_argument("--episodes", type=int, default=10, help="held-out seeds from 1000 (default: %(default)s)")
    parser.add_argument("--grid", default=DEFAULT_GRID, help="the schedules' k:L pairs (default: %(default)s)")
    parser.add_argument("--references", nargs="+", default=[], metavar="POLICY[:OPTION=VALUE,...]",
                        help="registered policies outside the bars' (e.g. stale-fastest, a closed-loop heuristic, "
                             "or stale-fastest:drop=2), with the setting's num_rounds where they take it, each in its "
                             "own probing mode: each variant's row adds its difference to the best of them; no bar "
                             "reads them")
    parser.add_argument("--out", required=True, help="folder of the per-setting results (reused by reruns)")
    parser.add_argument("--write", action="store_true",
                        help="write the tables between the markers of --page and the short table into --readme")
    parser.add_argument("--page", default=str(PAGE), help="page with the learned-agent:start/end markers")
    parser.add_argument("--readme", default=str(README), help="README with the same markers (the short table)")
    parser.add_argument("--no-readme", action="store_true",
                        help="with --write, write the page only (a study whose short table is not in README)")
    parser.add_argument("--readme-variants", nargs="+", default=None, metavar="NAME",
                        help="the variants of README's short table, in this order (default: every variant; the "
                             "page has them all)")
    parser.add_argument("--section", default=None, metavar="NAME",
                        help="write between the markers learned-agent-NAME:start/end (a second task's study) instead "
                             "of learned-agent:start/end")
    parser.add_argument("--quick", action="store_true",
                        help="CI size: trains two 3-episode runs of 3 clients, 2 seeds, fixed policies "
                             f"{', '.join(QUICK_FIXED)}, grid {QUICK_GRID}, settings "
                             f"{' and '.join(QUICK_SETTINGS)} (of --settings), the runs fine-tuned for 1 episode "
                             "at 4x")
    return parser


def default_settings(data_root: str | None) -> list[str]:
    """``--settings``' default: every setting of :data:`benchmarks.agent_study_settings.SETTINGS`, those that read
    a dataset from ``--data-root`` only with it."""
    return [name for name, setting in SETTINGS.items() if data_root or not setting.needs_data_root]


def evaluated_settings(args: argparse.Namespace, transferred: list[str]) -> list[str]:
    """The settings of ``--settings`` (in their order) this invocation evaluates: only those of
    :data:`QUICK_SETTINGS` under ``--quick``, and without the transfer settings when no variant transfers
    (``transferred`` empty).

    Raises:
        ValueError: a ``--scratch`` item whose setting is not evaluated (its scratch variant would not run),
            naming the item and why.
    """
    settings = [s for s in args.settings if (not args.quick or s in QUICK_SETTINGS) and (s == "trained" or transferred)]
    for item in args.scratch:
        setting = item.partition(":")[0]
        if setting not in settings:
            why = (f"--quick evaluates {' and '.join(QUICK_SETTINGS)} only"
                   if args.quick and setting not in QUICK_SETTINGS else
                   f"not in --settings {' '.join(args.settings)}" if setting not in args.settings else
                   "no variant transfers: --transfer-variants without names")
            raise ValueError(f"--scratch {item!r}: setting {setting} is not evaluated ({why}), so its scratch "
                             "variant would not run")
    return settings


def load_study(args: argparse.Namespace, out: Path) -> Study:
    """The :class:`benchmarks.agent_study_groups.Study` of the parsed arguments (``--quick``:
    :func:`train_quick_runs` into ``out``).

    Raises:
        ValueError, FileNotFoundError: a bad ``--runs``, ``--compare``, ``--transfer-variants`` or ``--scratch``
            (a scratch variant trained elsewhere than its setting:
            :func:`benchmarks.agent_study_groups.check_scratch`; a scratch variant of a setting not evaluated:
            :func:`evaluated_settings`), a variant name used twice (a ``--runs`` or ``--scratch`` name that is
            a fine-tuned variant's), or a setting whose federation cannot be built
            (:func:`benchmarks.agent_study_settings.setting_config`).
    """
    runs = train_quick_runs(out) if args.quick else parse_runs(args.runs)
    if not runs:
        raise ValueError("give --runs NAME=GLOB (or --quick)")
    transferred = list(runs) if args.transfer_variants is None else args.transfer_variants
    unknown = sorted(set(transferred) - set(runs))
    if unknown:
        raise ValueError(f"--transfer-variants {', '.join(unknown)}: not variants of --runs ({', '.join(runs)})")
    learned = {name: [GreedyPolicy.from_checkpoint(path) for path in paths] for name, paths in runs.items()}
    federation = shared_federation(learned)
    tuning = fine_tuning(args)
    tuned = {name: tuning.name(name) for name in transferred} if tuning else {}
    clashes = sorted(set(tuned.values()) & set(runs))
    if clashes:
        raise ValueError(f"--runs {', '.join(clashes)}: the name of a fine-tuned variant (VARIANT +ftN, with -epsE, "
                         "-head and -val where set)")
    if tuning and tuning.initial_eps is not None:
        check_initial_eps(tuning.initial_eps, {name: runs[name] for name in transferred})
    scratch = parse_scratch(args.scratch)
    fixed = list(QUICK_FIXED) if args.quick else list(compared_policies())
    check_references(args.references, fixed, federation.num_rounds)
    seeds = held_out_seeds(args)
    settings = evaluated_settings(args, transferred)
    configs = {setting: setting_config(federation, setting, args.data_root) for setting in settings}
    for setting, (name, paths) in scratch.items():
        if name in learned or name in tuned.values():
            raise ValueError(f"--scratch {setting}:{name}: {name!r} already names a variant")
        learned[name] = [GreedyPolicy.from_checkpoint(path) for path in paths]
        check_scratch(federation, setting, name, learned[name], args.data_root)
    return Study(runs, learned, federation, transferred, tuning, scratch, fixed,
                 QUICK_GRID if args.quick else args.grid, seeds, settings, configs, list(args.references))


def fine_tuning(args: argparse.Namespace) -> FineTuning | None:
    """The transfer variants' :class:`benchmarks.agent_study_groups.FineTuning` of the ``--fine-tune-*`` options
    (``--quick``: 1 episode), None without fine-tuning."""
    episodes = 1 if args.quick else args.fine_tune_episodes
    return FineTuning(episodes, args.fine_tune_val_seeds, args.fine_tune_initial_eps,
                      args.fine_tune_head_only) if episodes else None


def check_initial_eps(initial_eps: float, runs: dict[str, list[str]]) -> None:
    """Refuse ``--fine-tune-initial-eps`` below the final epsilon of a transfer variant's run (fine-tuning would
    then explore less than the run did at its end), or equal to every run's final epsilon (that is the plain
    fine-tuning, ``VARIANT +ftN``, under another name), before anything is evaluated.

    Raises:
        ValueError: naming the variant, the checkpoint and its final epsilon.
    """
    finals = set()
    for name, paths in runs.items():
        for path in paths:
            final = load_checkpoint(path)["vdn_config"].exploration_final_eps
            if initial_eps < final:
                raise ValueError(f"--fine-tune-initial-eps={initial_eps:g} is below the final epsilon {final:g} of "
                                 f"{name}'s run {path}: re-annealing starts at or above it")
            finals.add(final)
    if finals == {initial_eps}:
        raise ValueError(f"--fine-tune-initial-eps={initial_eps:g} is every run's final epsilon: that is fine-tuning "
                         "without re-annealing; leave the option out")


def check_references(references: list[str], fixed: list[str], num_rounds: int) -> None:
    """Refuse a ``--references`` item given twice, that names one of the bars' fixed policies (``fixed``), or whose
    policy cannot be built in a federation of ``num_rounds`` rounds
    (:func:`benchmarks.agent_study_groups.reference_policies`: a name that is not registered, an option the policy
    does not take or a value it refuses).

    Raises:
        ValueError: naming the item and why.
    """
    for item in references:
        name = parse_policy_spec(item)[0]
        if name in fixed:
            raise ValueError(f"--references {item}: {name} is already a fixed policy of the bars; a reference is a "
                             f"policy outside them (not one of {', '.join(fixed)})")
        if references.count(item) > 1:
            raise ValueError(f"--references names {item} twice")
        try:
            reference_policies([item], num_rounds)
        except ValueError as error:
            raise ValueError(f"--references {item}: {error}") from None


def held_out_seeds(args: argparse.Namespace) -> list[int]:
    """The held-out seeds every policy is evaluated on: ``--episodes`` of them from 1000 (``--quick``: 2)."""
    return list(range(EVAL_SEED_BASE, EVAL_SEED_BASE + (2 if args.quick else args.episodes)))


def command_line(args: argparse.Namespace) -> str:
    """The command the page says generated it (``--settings``, ``--episodes`` and ``--grid`` where they are not the
    default; under ``--quick`` the same options, ``--quick`` in place of ``--runs``; ``--data-root DIR``, the
    reader's folder)."""
    chosen = args.settings != default_settings(args.data_root)
    defaults = build_parser()
    references = [" ".join(["--references", *args.references])] if args.references else []
    val_seeds = ([" ".join(["--fine-tune-val-seeds", *map(str, args.fine_tune_val_seeds)])]
                 if args.fine_tune_val_seeds is not None else [])
    options = [*([f"--settings {' '.join(args.settings)}"] if chosen else []),
               *([f"--episodes {args.episodes}"] if args.episodes != defaults.get_default("episodes") else []),
               *([f"--grid {args.grid}"] if args.grid != defaults.get_default("grid") else []),
               *([f"--fine-tune-episodes {args.fine_tune_episodes}"] if args.fine_tune_episodes else []),
               *([f"--fine-tune-initial-eps {args.fine_tune_initial_eps:g}"]
                 if args.fine_tune_initial_eps is not None else []),
               *(["--fine-tune-head-only"] if args.fine_tune_head_only else []),
               *val_seeds,
               *([f"--scratch {' '.join(args.scratch)}"] if args.scratch else []),
               *references,
               *(["--data-root DIR"] if args.data_root else []),  # the reader's folder, not the writer's
               *([f"--readme-variants {' '.join(args.readme_variants)}"] if args.readme_variants else [])]
    variants = ["--quick" if args.quick else f"--runs {' '.join(args.runs)}",
                *([f"--compare {' '.join(args.compare)}"] if args.compare else []),
                *([" ".join(["--transfer-variants", *args.transfer_variants])]
                  if args.transfer_variants is not None else [])]
    return "python -m benchmarks.agent_study " + " ".join(
        [*variants, *options, *([f"--section {args.section}"] if args.section else []),
         *(["--no-readme"] if args.no_readme else []), f"--out {args.out}"])


def check_fine_tune_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse (a usage error naming the value) a negative ``--fine-tune-episodes``, bad ``--fine-tune-val-seeds``
    (:func:`check_fine_tune_val_seeds`), ``--fine-tune-initial-eps`` without fine-tuning or outside (0, 1],
    ``--fine-tune-head-only`` without fine-tuning, fine-tuning without a transfer setting evaluated, and held-out
    seeds that would reach the fine-tuning episodes' seeds."""
    if args.fine_tune_episodes < 0:
        parser.error(f"--fine-tune-episodes={args.fine_tune_episodes} must be >= 0 (0: no fine-tuning)")
    if args.fine_tune_val_seeds is not None:
        check_fine_tune_val_seeds(parser, args)
    if args.fine_tune_initial_eps is not None:
        if not (args.fine_tune_episodes or args.quick):
            parser.error("--fine-tune-initial-eps without fine-tuning (--fine-tune-episodes N, N > 0): nothing is "
                         "fine-tuned")
        if not 0 < args.fine_tune_initial_eps <= 1:
            parser.error(f"--fine-tune-initial-eps={args.fine_tune_initial_eps:g} must lie in (0, 1]")
        if float(f"{args.fine_tune_initial_eps:g}") != args.fine_tune_initial_eps:
            parser.error(f"--fine-tune-initial-eps={args.fine_tune_initial_eps!r}: give at most 6 significant "
                         f"digits (the variant's name and the page's command write {args.fine_tune_initial_eps:g})")
    if args.fine_tune_head_only and not (args.fine_tune_episodes or args.quick):
        parser.error("--fine-tune-head-only without fine-tuning (--fine-tune-episodes N, N > 0): nothing is fine-tuned")
    if args.fine_tune_episodes and (args.transfer_variants == [] or set(args.settings) <= {"trained"}):
        why = ("--transfer-variants without names" if args.transfer_variants == [] else
               f"--settings {' '.join(args.settings)}")
        parser.error(f"--fine-tune-episodes={args.fine_tune_episodes}: no transfer setting is evaluated ({why}), so "
                     "nothing would be fine-tuned")
    if args.fine_tune_episodes and EVAL_SEED_BASE + args.episodes > training_seed(0, 0):
        parser.error(f"--episodes={args.episodes} makes the held-out seeds reach {TRAINING_SEED_BASE}, where the "
                     f"fine-tuning episodes' seeds start: at most {TRAINING_SEED_BASE - EVAL_SEED_BASE}")


def check_fine_tune_val_seeds(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse ``--fine-tune-val-seeds`` (a usage error naming the seeds) without fine-tuning, on held-out seeds or
    outside the validation range (:func:`agents.validation.check_validation_seeds`), before anything is trained."""
    if not (args.fine_tune_episodes or args.quick):
        parser.error("--fine-tune-val-seeds without --fine-tune-episodes: nothing is fine-tuned")
    held_out = sorted(set(args.fine_tune_val_seeds) & set(held_out_seeds(args)))
    if held_out:
        parser.error(f"--fine-tune-val-seeds {' '.join(map(str, held_out))}: held-out seeds (from "
                     f"{EVAL_SEED_BASE}, --episodes of them); choose validation seeds apart from them, e.g. 500 up")
    try:
        args.fine_tune_val_seeds = check_validation_seeds(args.fine_tune_val_seeds)
    except ValueError as error:
        parser.error(f"--fine-tune-val-seeds: {error}")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.settings is None:
        args.settings = default_settings(args.data_root)
    needing = [name for name in args.settings if SETTINGS[name].needs_data_root]
    if needing and not args.data_root:
        parser.error(f"--settings {' '.join(needing)}: needs --data-root DIR (the folder its dataset is read from, "
                     "in torchvision's layout)")
    if args.no_readme and args.readme_variants:
        parser.error("--readme-variants with --no-readme: no README table is written")
    if args.episodes < 2:
        parser.error(f"--episodes={args.episodes} must be >= 2 (an interval needs two seeds)")
    check_fine_tune_options(parser, args)
    try:
        study = load_study(args, out)
        pairs = parse_pairs(args.compare, list(study.runs))
        unknown = sorted(set(args.readme_variants or ()) - set(study.runs))
        if unknown:
            raise ValueError(f"--readme-variants {' '.join(unknown)}: not a variant of --runs "
                             f"({', '.join(study.runs)})")
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    rows: dict[str, dict[str, dict]] = {}
    policies: dict[str, list[dict]] = {}
    differences: list[dict] = []
    for setting in study.settings:
        per_episode, rows[setting], policies[setting] = evaluate_setting(study, setting, out)
        differences += setting_differences(setting, per_episode, pairs, study.seeds)
    command = command_line(args)
    commit = git_commit()  # before anything is written, which would make the tree dirty
    block = markdown(rows, command, commit, differences, policies)
    print(block)
    atomic_write_json(out / "rows.json", {"rows": rows, "differences": differences, "policies": policies})
    if args.write:
        try:
            write_pages(Path(args.page), None if args.no_readme else Path(args.readme), args.section, block, rows,
                        command, commit, args.readme_variants)
        except (ValueError, FileNotFoundError) as error:
            parser.error(str(error))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
