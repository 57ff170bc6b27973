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
3. **transfer**: at 4x and 8x the clients of training (the same candidates per round, drawn from the
   larger pool; no retraining), the variant's return over the best fixed policy's at least 1.2, the
   ratio's interval above 1 (FedMarl, Zhang et al., AAAI 2022, arXiv 2201.02932, Sec. 5, Fig. 7:
   1.36x at 4K and 1.32x at 8K);
4. **fine-tuning** (with ``--fine-tune-episodes N``; FedMarl, Sec. 5, Table 3: 10 episodes): at 4x and 8x,
   ``VARIANT +ftN`` minus the zero-shot variant not worse (the interval's upper bound >= 0), and better
   (the interval above 0) where the zero-shot variant trails a variant trained there from scratch
   (``--scratch``; zero-shot minus scratch "worse"); without a scratch variant that half is not measured,
   and where zero-shot does not trail, it holds (no gap to close). Both differences are paired on the
   seeds with both sides' runs resampled (:func:`variant_differences`).

"Best" is best in hindsight by mean return on the same seeds, which favours the baselines. The fixed
policies and schedules run once per setting, on the environment of the first variant with the fields a
learner variant sets (probing, observation levers) left to each policy; variants that differ in any other
field are refused. Results are kept per setting and group in ``OUT/<setting>/<group>.json``; a rerun
evaluates only what is missing, so two processes can share the work (``--settings``), and ``--write``
puts the tables between the markers of the page.

With ``--fine-tune-episodes N``, each run of every transfer variant is fine-tuned in each transfer setting
evaluated, starting from its checkpoint (:func:`benchmarks.common.fine_tune`: FedMarl's fine-tuning of the
Q-network, exploration at the run's final epsilon), for ``N`` episodes with seed :func:`fine_tune_seed`
(run ``i`` of the variant's sorted checkpoints: seed ``i``, env seeds ``10000 + 1000000 i + episode``, never
a held-out seed), then evaluated on the same held-out seeds as every other policy; the fine-tuned runs form
the variant ``VARIANT +ftN`` of that setting (:func:`fine_tuned_name`), with the same columns, its own bars
and its rows in the all-policies table, and the page adds per setting a "fine-tuned minus zero-shot" table.
Their episodes are kept in ``OUT/<setting>/VARIANT +ftN.json`` under a key of the setting's configuration,
the seeds, the checkpoints, ``N`` and the fine-tuning seeds: a rerun does not fine-tune again. A scratch
variant (``--scratch SETTING:NAME=GLOB``: runs trained by ``train_agents.py`` in that setting's federation,
checked field by field outside the learner fields, :func:`check_scratch`) is evaluated in its setting only.

Under the bars, the page gives per setting an *all-policies* table (:func:`policy_rows`), read from the
same per-episode results: one row per learner variant, fixed policy and schedule (in that order), with
the probing mode it played in, its runs x seeds, and its team return, final accuracy, latency (s),
upload and download (MB), each the mean over runs x seeds with its 95 % bootstrap interval over seeds
and whole runs (:func:`fedenv.evaluation.paired.mean_interval`). ``OUT/rows.json`` holds these rows
under ``policies``, beside the variants' rows and differences.

    python train_agents.py --no-probing --seed S --run-dir runs/no-probing/seed_S     # S = 0..4, per variant
    python -m benchmarks.agent_study --runs main-job='runs/headline/seed_*/checkpoint.pt' \\
        no-probing='runs/no-probing/seed_*/checkpoint.pt' --out results/agent_study --write
    python -m benchmarks.agent_study --runs main-job='runs/main-job/seed_*/checkpoint.pt' --fine-tune-episodes 10 \\
        --scratch 4x:scratch-4x='runs/scratch-4x/seed_*/checkpoint.pt' --out results/agent_study --write
    python -m benchmarks.agent_study --quick --out results/agent_study_quick        # CI size (seconds)

``--quick`` fine-tunes for 1 episode.
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file, python benchmarks/NAME.py: import this checkout (repo root), as -m does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import dataclasses
import glob
import json
from collections.abc import Callable

import numpy as np

from agents.config import VDNConfig
from agents.policy import GreedyPolicy
from agents.rollout import TRAINING_SEED_BASE, training_seed
from benchmarks.common import (
    EVAL_SEED_BASE,
    QUICK_FEDERATION,
    QUICK_FIXED,
    best_fixed,
    checkpoint_path,
    fine_tune,
    train_agent,
)
from benchmarks.pages import ROOT, git_commit, write_between_markers
from benchmarks.schedules import DEFAULT_GRID, parse_grid
from fedenv.baselines import LateRoundsPolicy, compared_policies, make_policy
from fedenv.config import EnvConfig
from fedenv.evaluation import evaluate_policies, per_episode_metrics
from fedenv.evaluation.paired import interval_label, mean_interval, paired_interval, value_matrix
from fedenv.evaluation.transfer import HARMLESS_FIELDS, config_differences
from fedenv.fileio import atomic_write_json

SETTINGS = {"trained": 1, "4x": 4, "8x": 8}
"""Setting name -> the multiple of the training federation's clients it evaluates at."""
LEARNER_FIELDS = ("probing", "observation_context", "observation_normalised")
"""EnvConfig fields a learner variant may set; the fixed policies and schedules take their own."""
MARGIN_FLOOR = 0.0
RATIO_TARGET = 1.2
"""The bars: margins with the interval above 0; the transfer ratio at least 1.2, its interval above 1."""
START, END = "<!-- learned-agent:start -->", "<!-- learned-agent:end -->"
"""The markers of the default ``--section``; ``--section NAME`` writes between ``learned-agent-NAME:start/end``."""


def markers(section: str | None) -> tuple[str, str]:
    """The page's start and end markers of ``section`` (None: :data:`START`, :data:`END`)."""
    name = "learned-agent" if section is None else f"learned-agent-{section}"
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"
PAGE = ROOT / "docs" / "results" / "learned-agent.md"
README = ROOT / "README.md"
"""``--write`` puts the full tables between the markers of the page and :func:`readme_table` between the
same markers of README."""
POLICY_METRICS = (("team_return", "team return", 3), ("final_accuracy", "final accuracy", 3),
                  ("total_latency_s", "latency (s)", 1), ("total_upload_mb", "upload (MB)", 1),
                  ("total_download_mb", "download (MB)", 1))
"""The columns of the all-policies table: per-episode metric, heading, decimals."""
BAR_STATES = {True: "met", False: "not met", None: "not measured"}
"""How the page writes a bar's state (:func:`bars`)."""
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
    trained from scratch in a transfer setting's federation (:func:`check_scratch`), the reference of the
    fine-tuning bar's second half.

    Raises:
        ValueError: an item without ``SETTING:``, a setting that is not a transfer setting of
            :data:`SETTINGS`, a setting given twice, or a ``NAME=GLOB`` that :func:`parse_runs` refuses.
    """
    transfer = [name for name, multiple in SETTINGS.items() if multiple > 1]
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


def shared_federation(learned: dict[str, list[GreedyPolicy]]) -> EnvConfig:
    """The training federation of every variant, with the learner fields at their defaults.

    Raises:
        ValueError: two runs trained in federations that differ outside :data:`LEARNER_FIELDS` (and the
            fields that say only where data is or what computes the round), naming the fields.
    """
    defaults = {name: getattr(EnvConfig(), name) for name in LEARNER_FIELDS}
    configs = {name: dataclasses.replace(policy.env_config, **defaults)
               for name, policies in learned.items() for policy in policies}
    (first_name, first), *others = configs.items()
    for name, config in others:
        differences = config_differences(first, config, HARMLESS_FIELDS)["trained_on"]
        if differences:
            raise ValueError(f"variants {first_name} and {name} were trained in different federations "
                             f"(fields {', '.join(differences)}): compare them in separate studies")
    return first


def setting_config(federation: EnvConfig, multiple: int) -> EnvConfig:
    """The federation with ``multiple`` times its clients and the same candidates per round."""
    return dataclasses.replace(federation, num_clients=federation.num_clients * multiple).validate()


def check_scratch(federation: EnvConfig, setting: str, name: str, policies: list[GreedyPolicy]) -> None:
    """Check that the runs of scratch variant ``name`` were trained in ``setting``'s federation
    (:func:`setting_config` of the shared ``federation``), outside :data:`LEARNER_FIELDS` and the fields
    that say only where data is or what computes the round.

    Raises:
        ValueError: a run trained elsewhere, naming the fields, its values and the setting's.
    """
    expected = setting_config(federation, SETTINGS[setting])
    defaults = {field: getattr(EnvConfig(), field) for field in LEARNER_FIELDS}
    for policy in policies:
        differences = config_differences(expected, dataclasses.replace(policy.env_config, **defaults),
                                         HARMLESS_FIELDS)
        if differences["trained_on"]:
            fields = ", ".join(f"{field}={value!r} (setting {setting}: {differences['trained_on'][field]!r})"
                               for field, value in differences["evaluated_on"].items())
            raise ValueError(f"--scratch {setting}:{name}: a run was trained in another federation than setting "
                             f"{setting}'s: {fields}")


def learner_config(config: EnvConfig, policy: GreedyPolicy) -> EnvConfig:
    """``config`` with the :data:`LEARNER_FIELDS` of the environment ``policy`` was trained in."""
    return dataclasses.replace(config, **{field: getattr(policy.env_config, field) for field in LEARNER_FIELDS})


def schedules(grid: str, num_rounds: int) -> list[LateRoundsPolicy]:
    """The open-loop schedules of ``grid`` (``k:L`` pairs), named ``schedule k:L``."""
    return [LateRoundsPolicy(k, last, num_rounds, name=f"schedule {k}:{last}") for k, last in parse_grid(grid)]


def cached_group(path: Path, key: dict, evaluate: Callable[[], dict[str, list[dict]]]) -> dict[str, list[dict]]:
    """The per-episode metrics ``path`` holds if an earlier run wrote them under the same ``key``, else
    ``evaluate()``'s, written there atomically with the key (a file under a different key, evaluated for
    another configuration, seeds, checkpoints or fine-tuning, is replaced, and the replacement printed)."""
    replaced = False
    if path.exists():
        document = json.loads(path.read_text())
        if document["key"] == json.loads(json.dumps(key)):
            return document["per_episode"]
        replaced = True
    per_episode = evaluate()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, {"key": key, "per_episode": per_episode})
    print(f"wrote {path}" + (" (replacing a result evaluated under another key)" if replaced else ""), flush=True)
    return per_episode


def evaluate_group(path: Path, config: EnvConfig, policies: list, seeds: list[int], probing: bool | None,
                   checkpoints: list[str | None] | None = None) -> dict[str, list[dict]]:
    """Per-episode metrics of ``policies`` on ``seeds``, read from ``path`` if an earlier run wrote them
    for the same configuration and seeds, else evaluated and written there atomically (:func:`cached_group`)."""
    key = {"config": config.to_dict(), "seeds": seeds, "policies": [p.name for p in policies],
           "checkpoints": checkpoints}
    return cached_group(path, key, lambda: per_episode_metrics(evaluate_policies(
        config, policies, seeds, progress=False, probing=probing, checkpoints=checkpoints)))


def fine_tuned_name(variant: str, episodes: int) -> str:
    """The name of ``variant`` fine-tuned for ``episodes`` episodes in a transfer setting: ``VARIANT +ftN``."""
    return f"{variant} +ft{episodes}"


def fine_tune_seed(run_index: int) -> int:
    """The training seed of the fine-tuning of run ``run_index`` of a variant (its checkpoints in sorted path
    order, from 0): the index itself, so its episodes play env seeds ``10000 + 1000000 * run_index + episode``
    (:func:`agents.rollout.training_seed`, as ``train_agents.py --seed``), never a held-out seed (1000 up,
    below 10000) nor a validation seed (500 up)."""
    return run_index


def fine_tuned_group(path: Path, config: EnvConfig, name: str, checkpoints: list[str], episodes: int,
                     seeds: list[int]) -> dict[str, list[dict]]:
    """Per-episode metrics of the runs of ``checkpoints``, each fine-tuned for ``episodes`` episodes in
    ``config`` (:func:`benchmarks.common.fine_tune`, seed :func:`fine_tune_seed` of its index; FedMarl's
    fine-tuning, Zhang et al., AAAI 2022, arXiv 2201.02932, Sec. 5, Table 3) and pooled under ``name``,
    on ``seeds``; each episode records the checkpoint its run started from. Read from ``path`` when an
    earlier run fine-tuned the same checkpoints for as many episodes with the same seeds in the same
    configuration (no fine-tuning then), else fine-tuned, evaluated and written there (:func:`cached_group`)."""
    tune_seeds = [fine_tune_seed(index) for index in range(len(checkpoints))]
    key = {"config": config.to_dict(), "seeds": seeds, "policies": [name] * len(checkpoints),
           "checkpoints": checkpoints, "fine_tune": {"episodes": episodes, "seeds": tune_seeds}}

    def evaluate() -> dict[str, list[dict]]:
        policies = [fine_tune(Path(checkpoint), config, episodes, seed) for checkpoint, seed in zip(checkpoints,
                                                                                                   tune_seeds)]
        for policy in policies:
            policy.name = name
        return per_episode_metrics(evaluate_policies(config, policies, seeds, progress=False, probing=None,
                                                     checkpoints=checkpoints))

    return cached_group(path, key, evaluate)


def variant_row(per_episode: dict[str, list[dict]], variant: str, fixed: list[str], scheduled: list[str],
                seeds: list[int]) -> dict:
    """One variant at one setting: its mean return, the best fixed policy and schedule, the paired
    differences and the return ratio to the best fixed policy with their intervals, the spread over runs."""
    values = value_matrix(per_episode[variant], "team_return", seeds)
    row = {"variant": variant, "runs": len(values), "seeds": len(seeds), "return": float(values.mean()),
           "run_std": float(values.mean(axis=1).std(ddof=1)) if len(values) > 1 else float("nan")}
    for role, names in (("fixed", fixed), ("schedule", scheduled)):
        if not names:
            continue
        best = best_fixed(per_episode, names)
        reference = value_matrix(per_episode[best], "team_return", seeds)[0]
        difference, low, high = paired_interval(values, reference)
        row.update({f"best_{role}": best, f"best_{role}_return": float(reference.mean()),
                    f"minus_{role}": difference, f"minus_{role}_low": low, f"minus_{role}_high": high,
                    f"minus_{role}_label": interval_label(low, high)})
        if role == "fixed":
            ratio, low, high = paired_interval(values, reference, statistic="ratio")
            row.update({"ratio": ratio, "ratio_low": low, "ratio_high": high})
    return row


def variant_differences(per_episode: dict[str, list[dict]], pairs: list[tuple[str, str]],
                        seeds: list[int]) -> list[dict]:
    """``variant minus reference variant`` in team return for each ``(variant, reference)`` pair, paired on
    the seeds with both sides' training runs resampled (:func:`~fedenv.evaluation.paired.paired_interval`):
    e.g. a shorter training run against the main job's."""
    out = []
    for variant, reference in pairs:
        difference, low, high = paired_interval(value_matrix(per_episode[variant], "team_return", seeds),
                                                value_matrix(per_episode[reference], "team_return", seeds))
        out.append({"variant": variant, "reference": reference, "difference": difference, "low": low, "high": high,
                    "label": interval_label(low, high)})
    return out


def probing_mode(episodes: list[dict]) -> str:
    """How a policy's episodes played: ``probing`` (every episode with a probing epoch), ``no probing``
    (none), ``mixed``, or ``not recorded`` when an episode lacks the field."""
    modes = {episode.get("probing") for episode in episodes}
    if None in modes:
        return "not recorded"
    return "mixed" if len(modes) > 1 else "probing" if modes == {True} else "no probing"


def policy_rows(per_episode: dict[str, list[dict]], kinds: dict[str, list[str]], seeds: list[int]) -> list[dict]:
    """The all-policies table of one setting: one row per policy of ``kinds`` (``kind -> policy names``,
    e.g. ``learned``, ``fixed``, ``schedule``; rows in that order), from the per-episode metrics already
    evaluated.

    Returns:
        Rows of ``kind``, ``policy``, ``probing`` (:func:`probing_mode`), ``runs``, ``seeds`` and, for each
        metric of :data:`POLICY_METRICS`, ``{metric}`` (the mean over runs x seeds, in the metric's unit),
        ``{metric}_low`` and ``{metric}_high`` (its 95 % bootstrap interval,
        :func:`~fedenv.evaluation.paired.mean_interval`: seeds and whole runs resampled).

    Raises:
        ValueError: a policy that did not run, or a run that lacks one of ``seeds`` (the message names it).
    """
    rows = []
    for kind, names in kinds.items():
        for name in names:
            if name not in per_episode:
                raise ValueError(f"policy {name!r} did not run; ran: {', '.join(per_episode)}")
            matrices = {metric: value_matrix(per_episode[name], metric, seeds) for metric, _, _ in POLICY_METRICS}
            row = {"kind": kind, "policy": name, "probing": probing_mode(per_episode[name]),
                   "runs": len(matrices["team_return"]), "seeds": len(seeds)}
            for metric, values in matrices.items():
                row[metric], row[f"{metric}_low"], row[f"{metric}_high"] = mean_interval(values)
            rows.append(row)
    return rows


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


def bars(rows: dict[str, dict[str, dict]], variant: str) -> list[tuple[str, bool | None]]:
    """The bars of the module docstring for ``variant``: ``(description, met)``, None where not measured."""
    trained = rows.get("trained", {}).get(variant)
    out = []
    if trained:
        for role in ("fixed", "schedule"):
            if f"minus_{role}" in trained:
                what = "fixed policy" if role == "fixed" else "open-loop schedule"
                out.append((f"beats the best {what} ({trained[f'best_{role}']}): interval above 0",
                            trained[f"minus_{role}_low"] > MARGIN_FLOOR))
        if "minus_fixed" in trained and not np.isnan(trained["run_std"]):
            out.append(("spread over training runs at most half the margin over the best fixed policy",
                        bool(trained["minus_fixed"] > 0 and trained["run_std"] <= trained["minus_fixed"] / 2)))
    for setting in ("4x", "8x"):
        row = rows.get(setting, {}).get(variant)
        if row and "ratio" in row:
            out.append((f"at {setting} the clients: return at least {RATIO_TARGET}x the best fixed policy's, "
                        "interval above 1", bool(row["ratio"] >= RATIO_TARGET and row["ratio_low"] > 1.0)))
        if row and "ft_minus_zero_shot" in row:
            out += fine_tune_bars(setting, variant, row["ft_minus_zero_shot"], row.get("zero_shot_minus_scratch"))
    return out


def fine_tune_bars(setting: str, variant: str, tuned: dict, scratch: dict | None) -> list[tuple[str, bool | None]]:
    """The fine-tuning bar of ``variant`` at ``setting`` (FedMarl, Zhang et al., AAAI 2022, arXiv 2201.02932,
    Sec. 5, Table 3), from the differences of :func:`variant_differences`: ``tuned`` (the fine-tuned variant
    minus ``variant``) and ``scratch`` (``variant`` minus the scratch variant of ``setting``; None without one).

    Returns:
        ``(description, met)``: fine-tuned minus zero-shot not worse (its interval's upper bound >= 0); and,
        where the zero-shot variant trails the scratch one (an interval below 0), fine-tuned minus zero-shot
        better (interval above 0); met where it does not trail (no gap to close); None (not measured)
        without a scratch variant or an interval.
    """
    name = tuned["variant"]
    out = [(f"at {setting} the clients: {name} minus {variant} not worse (interval's upper bound >= 0)",
            bool(tuned["high"] >= 0))]
    if scratch is None or scratch["label"] is None:
        why = f"no --scratch {setting}:NAME=GLOB" if scratch is None else "no interval"
        out.append((f"at {setting} the clients: {name} better than {variant} where {variant} trails an agent "
                    f"trained there from scratch: not measured ({why})", None))
    elif scratch["label"] == "worse":
        out.append((f"at {setting} the clients: {variant} trails {scratch['reference']} (trained there from "
                    f"scratch; {_interval(scratch['difference'], scratch['low'], scratch['high'])} worse), so "
                    f"{name} minus {variant} better (interval above 0)", bool(tuned["low"] > 0)))
    else:
        out.append((f"at {setting} the clients: {variant} does not trail {scratch['reference']} (trained there "
                    f"from scratch; {_interval(scratch['difference'], scratch['low'], scratch['high'])} "
                    f"{scratch['label']}): no gap for {name} to close", True))
    return out


def _interval(value: float, low: float, high: float, digits: int = 3) -> str:
    return f"{value:+.{digits}f} [{low:+.{digits}f}, {high:+.{digits}f}]"


def fine_tune_table(setting: str, by_variant: dict[str, dict]) -> list[str]:
    """The lines of one setting's "fine-tuned minus zero-shot" table (the zero-shot rows of ``by_variant``
    that carry ``ft_minus_zero_shot``, with ``zero_shot_minus_scratch`` where a scratch variant ran), under
    a heading line; no lines when no variant of the setting was fine-tuned."""
    tuned = {variant: r for variant, r in by_variant.items() if "ft_minus_zero_shot" in r}
    if not tuned:
        return []
    episodes = next(iter(tuned.values()))["ft_minus_zero_shot"]["episodes"]
    lines = [f"**Fine-tuned minus zero-shot, setting `{setting}`** ({SETTINGS[setting]}x the training federation's "
             f"clients; each run fine-tuned there for {episodes} episode{'' if episodes == 1 else 's'}; team "
             "return, paired on the seeds, both sides' runs resampled):", "",
             "| fine-tuned | zero-shot | fine-tuned minus zero-shot | zero-shot minus scratch |", "|---|---|---|---|"]
    for variant, r in tuned.items():
        d, z = r["ft_minus_zero_shot"], r.get("zero_shot_minus_scratch")
        scratch = (f"{_interval(z['difference'], z['low'], z['high'])} {z['label'] or ''} ({z['reference']})"
                   if z else "not measured")
        lines.append(f"| {d['variant']} | {variant} | {_interval(d['difference'], d['low'], d['high'])} "
                     f"{d['label'] or ''} | {scratch} |")
    if not any("zero_shot_minus_scratch" in r for r in tuned.values()):
        lines += ["", f"No agent trained from scratch at `{setting}` (`--scratch {setting}:NAME=GLOB`): the bar's "
                  "second half (fine-tuned better than zero-shot where zero-shot trails scratch) is not measured."]
    return lines


def policy_table(setting: str, rows: list[dict]) -> list[str]:
    """The lines of one setting's all-policies table (:func:`policy_rows`), under a heading line."""
    multiple = SETTINGS[setting]
    clients = "the training federation" if multiple == 1 else f"{multiple}x the training federation's clients"
    lines = [f"**All policies, setting `{setting}`** ({clients}):", "",
             "| policy | kind | probing | runs x seeds | " + " | ".join(h for _, h, _ in POLICY_METRICS) + " |",
             "|---|---|---|---|" + "---|" * len(POLICY_METRICS)]
    for r in rows:
        cells = [f"{r[m]:.{d}f} [{r[f'{m}_low']:.{d}f}, {r[f'{m}_high']:.{d}f}]" for m, _, d in POLICY_METRICS]
        lines.append(f"| {r['policy']} | {r['kind']} | {r['probing']} | {r['runs']} x {r['seeds']} | "
                     + " | ".join(cells) + " |")
    return lines


def markdown(rows: dict[str, dict[str, dict]], command: str, commit: str, differences: list[dict],
             policies: dict[str, list[dict]]) -> str:
    """The page block: one table row per setting and variant, the differences between variants (trained
    setting), each variant's bars, then per setting the all-policies table (``setting -> rows`` of
    :func:`policy_rows`)."""
    lines = [f"Generated by `{command}` at commit `{commit}`; team return, mean over training runs x held-out "
             "seeds; differences and ratios paired on the same seeds with 95 % bootstrap intervals (over seeds "
             "and whole runs); `run std`: standard deviation of the per-run mean returns.", "",
             "| setting | variant | runs x seeds | return | run std | best fixed | minus best fixed | "
             "ratio to best fixed | best schedule | minus best schedule |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for setting, by_variant in rows.items():
        for variant, r in by_variant.items():
            schedule = (f"{r['best_schedule']} ({r['best_schedule_return']:.3f}) | "
                        f"{_interval(r['minus_schedule'], r['minus_schedule_low'], r['minus_schedule_high'])} "
                        f"{r['minus_schedule_label'] or ''}" if "best_schedule" in r else "| ")
            lines.append(
                f"| {setting} | {variant} | {r['runs']} x {r['seeds']} | {r['return']:.3f} | {r['run_std']:.3f} | "
                f"{r['best_fixed']} ({r['best_fixed_return']:.3f}) | "
                f"{_interval(r['minus_fixed'], r['minus_fixed_low'], r['minus_fixed_high'])} "
                f"{r['minus_fixed_label'] or ''} | {r['ratio']:.2f}x [{r['ratio_low']:.2f}, {r['ratio_high']:.2f}] | "
                f"{schedule} |")
    if differences:
        lines += ["", "Between variants, in the trained setting (paired on the seeds, both sides' runs resampled):",
                  "", "| variant | minus | team return difference |", "|---|---|---|"]
        lines += [f"| {d['variant']} | {d['reference']} | {_interval(d['difference'], d['low'], d['high'])} "
                  f"{d['label'] or ''} |" for d in differences]
    for setting, by_variant in rows.items():
        table = fine_tune_table(setting, by_variant)
        lines += ["", *table] if table else []
    variants = list(dict.fromkeys(v for by_variant in rows.values() for v in by_variant))
    for variant in variants:
        lines += ["", f"Bars for `{variant}`:", ""]
        lines += [f"- {BAR_STATES[met]}: {text}" for text, met in bars(rows, variant)]
    if policies:
        lines += ["", "Every policy's metrics per setting: the learned variants, the fixed policies and the open-loop "
                  "schedules, each in the probing mode it played in; per episode (latency, upload and download "
                  "summed over its rounds), mean over training runs x held-out seeds with the 95 % bootstrap "
                  "interval (over seeds and whole runs)."]
    for setting, setting_rows in policies.items():
        lines += ["", *policy_table(setting, setting_rows)]
    return "\n".join(lines)


def readme_table(rows: dict[str, dict[str, dict]]) -> str:
    """README's short form: per variant, the margins of the trained setting, the transfer ratios and how
    many bars it meets."""
    lines = ["| learned variant | minus best fixed | minus best schedule | ratio to best fixed at 4x / 8x | bars met |",
             "|---|---|---|---|---|"]
    variants = list(dict.fromkeys(v for by_variant in rows.values() for v in by_variant))
    for variant in variants:
        trained = rows.get("trained", {}).get(variant, {})
        cells = []
        for role in ("fixed", "schedule"):
            key = f"minus_{role}"
            cells.append(f"{_interval(trained[key], trained[f'{key}_low'], trained[f'{key}_high'])} "
                         f"{trained[f'{key}_label']} ({trained[f'best_{role}']})" if key in trained else "")
        cells.append(" / ".join(f"{rows[s][variant]['ratio']:.2f}x [{rows[s][variant]['ratio_low']:.2f}, "
                                f"{rows[s][variant]['ratio_high']:.2f}]" for s in ("4x", "8x")
                                if variant in rows.get(s, {})))
        met = [ok for _, ok in bars(rows, variant) if ok is not None]
        cells.append(f"{sum(met)} of {len(met)}")
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


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
                        help="also report variant A minus variant B in the trained setting (e.g. fewer episodes "
                             "against the main job's)")
    parser.add_argument("--transfer-variants", nargs="*", default=None, metavar="NAME",
                        help="the variants evaluated at 4x and 8x the clients (default: every variant; the flag "
                             "alone: none)")
    parser.add_argument("--fine-tune-episodes", type=int, default=0, metavar="N",
                        help="also fine-tune each run of every transfer variant for N episodes in each transfer "
                             "setting evaluated and tabulate them as 'VARIANT +ftN' (FedMarl's 10; default: "
                             "%(default)s, none; --quick: 1)")
    parser.add_argument("--scratch", nargs="+", default=[], metavar="SETTING:NAME=GLOB",
                        help="a variant trained from scratch in a transfer setting's federation (e.g. 4x:scratch-4x="
                             "'runs/4x/seed_*/checkpoint.pt'), evaluated in that setting only: the reference of the "
                             "fine-tuning bar's second half")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS),
                        help="settings to evaluate and tabulate (default: all); results already in OUT are reused")
    parser.add_argument("--episodes", type=int, default=10, help="held-out seeds from 1000 (default: %(default)s)")
    parser.add_argument("--grid", default=DEFAULT_GRID, help="the schedules' k:L pairs (default: %(default)s)")
    parser.add_argument("--out", required=True, help="folder of the per-setting results (reused by reruns)")
    parser.add_argument("--write", action="store_true",
                        help="write the tables between the markers of --page and the short table into --readme")
    parser.add_argument("--page", default=str(PAGE), help="page with the learned-agent:start/end markers")
    parser.add_argument("--readme", default=str(README), help="README with the same markers (the short table)")
    parser.add_argument("--section", default=None, metavar="NAME",
                        help="write between the markers learned-agent-NAME:start/end (a second task's study) instead "
                             "of learned-agent:start/end")
    parser.add_argument("--quick", action="store_true",
                        help="CI size: trains two 3-episode runs of 3 clients, 2 seeds, fixed policies "
                             f"{', '.join(QUICK_FIXED)}, grid {QUICK_GRID}, settings trained and 4x, the runs "
                             "fine-tuned for 1 episode at 4x")
    return parser


@dataclasses.dataclass
class Study:
    """What one invocation evaluates: the variants' checkpoints (``runs``) and loaded policies (``learned``,
    scratch variants included), the transfer variants, their fine-tuned names (``tuned``: empty without
    fine-tuning), the scratch variant per transfer setting, the fixed policies, the schedules' grid and the
    held-out seeds."""
    runs: dict[str, list[str]]
    learned: dict[str, list[GreedyPolicy]]
    federation: EnvConfig
    transferred: list[str]
    fine_tune_episodes: int
    tuned: dict[str, str]
    scratch: dict[str, tuple[str, list[str]]]
    fixed: list[str]
    grid: str
    seeds: list[int]


def load_study(args: argparse.Namespace, out: Path) -> Study:
    """The :class:`Study` of the parsed arguments (``--quick``: :func:`train_quick_runs` into ``out``).

    Raises:
        ValueError, FileNotFoundError: a bad ``--runs``, ``--compare``, ``--transfer-variants`` or ``--scratch``
            (a scratch variant trained elsewhere than its setting: :func:`check_scratch`), or a variant name
            used twice (a ``--runs`` or ``--scratch`` name that is a fine-tuned variant's).
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
    episodes = 1 if args.quick else args.fine_tune_episodes
    tuned = {name: fine_tuned_name(name, episodes) for name in transferred} if episodes else {}
    clashes = sorted(set(tuned.values()) & set(runs))
    if clashes:
        raise ValueError(f"--runs {', '.join(clashes)}: the name of a fine-tuned variant (VARIANT +ftN)")
    scratch = parse_scratch(args.scratch)
    for setting, (name, paths) in scratch.items():
        if name in learned or name in tuned.values():
            raise ValueError(f"--scratch {setting}:{name}: {name!r} already names a variant")
        learned[name] = [GreedyPolicy.from_checkpoint(path) for path in paths]
        check_scratch(federation, setting, name, learned[name])
    return Study(runs, learned, federation, transferred, episodes, tuned, scratch,
                 list(QUICK_FIXED) if args.quick else list(compared_policies()),
                 QUICK_GRID if args.quick else args.grid,
                 list(range(EVAL_SEED_BASE, EVAL_SEED_BASE + (2 if args.quick else args.episodes))))


def evaluate_setting(study: Study, setting: str, out: Path) -> tuple[dict[str, list[dict]], dict[str, dict],
                                                                     list[dict]]:
    """Evaluate (or read from ``OUT/<setting>``) every group of ``setting``: the fixed policies, the schedules,
    the variants (every one in the trained setting, the transfer variants elsewhere), each transfer
    variant's fine-tuned runs right after it and the setting's scratch variant last.

    Returns:
        ``(per_episode, rows, policies)``: the per-episode metrics by policy, the variants' rows
        (:func:`variant_row`; a transfer variant's row with ``ft_minus_zero_shot``, its fine-tuned variant
        minus it, and ``zero_shot_minus_scratch``, it minus the scratch variant, from
        :func:`variant_differences`) and the all-policies rows (:func:`policy_rows`).
    """
    config = setting_config(study.federation, SETTINGS[setting])
    seeds = study.seeds
    per_episode = dict(evaluate_group(out / setting / "fixed.json", config,
                                      [make_policy(name) for name in study.fixed], seeds, probing=None))
    open_loop = schedules(study.grid, config.num_rounds)
    per_episode.update(evaluate_group(out / setting / "schedules.json", config, open_loop, seeds, probing=False))
    scheduled = [s.name for s in open_loop]
    zero_shot = [name for name in study.runs if setting == "trained" or name in study.transferred]
    tuned = {} if setting == "trained" else {name: study.tuned[name] for name in zero_shot if name in study.tuned}
    scratch_name, scratch_paths = study.scratch.get(setting, (None, []))
    variants = []
    for name in zero_shot + ([scratch_name] if scratch_name else []):
        for policy in study.learned[name]:
            policy.name = name
        learned_config = learner_config(config, study.learned[name][0])
        checkpoints = scratch_paths if name == scratch_name else study.runs[name]
        per_episode.update(evaluate_group(out / setting / f"{name}.json", learned_config, study.learned[name],
                                          seeds, probing=None, checkpoints=checkpoints))
        variants.append(name)
        if name in tuned:
            per_episode.update(fine_tuned_group(out / setting / f"{tuned[name]}.json", learned_config, tuned[name],
                                                study.runs[name], study.fine_tune_episodes, seeds))
            variants.append(tuned[name])
    rows = {name: variant_row(per_episode, name, study.fixed, scheduled, seeds) for name in variants}
    for name, tuned_name in tuned.items():
        [difference] = variant_differences(per_episode, [(tuned_name, name)], seeds)
        rows[name]["ft_minus_zero_shot"] = {**difference, "episodes": study.fine_tune_episodes}
        if scratch_name:
            [rows[name]["zero_shot_minus_scratch"]] = variant_differences(per_episode, [(name, scratch_name)], seeds)
    policies = policy_rows(per_episode, {"learned": variants, "fixed": study.fixed, "schedule": scheduled}, seeds)
    return per_episode, rows, policies


def command_line(args: argparse.Namespace) -> str:
    """The command the page says generated it."""
    options = [*([f"--fine-tune-episodes {args.fine_tune_episodes}"] if args.fine_tune_episodes else []),
               *([f"--scratch {' '.join(args.scratch)}"] if args.scratch else [])]
    return "python -m benchmarks.agent_study " + " ".join(
        ["--quick", *([f"--scratch {' '.join(args.scratch)}"] if args.scratch else [])] if args.quick else [
            f"--runs {' '.join(args.runs)}", *([f"--compare {' '.join(args.compare)}"] if args.compare else []),
            *([f"--transfer-variants {' '.join(args.transfer_variants)}"]
              if args.transfer_variants is not None else []), *options,
            *([f"--section {args.section}"] if args.section else []), f"--out {args.out}"])


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.episodes < 2:
        parser.error(f"--episodes={args.episodes} must be >= 2 (an interval needs two seeds)")
    if args.fine_tune_episodes < 0:
        parser.error(f"--fine-tune-episodes={args.fine_tune_episodes} must be >= 0 (0: no fine-tuning)")
    if args.fine_tune_episodes and EVAL_SEED_BASE + args.episodes > training_seed(0, 0):
        parser.error(f"--episodes={args.episodes} makes the held-out seeds reach {TRAINING_SEED_BASE}, where the "
                     f"fine-tuning episodes' seeds start: at most {TRAINING_SEED_BASE - EVAL_SEED_BASE}")
    try:
        study = load_study(args, out)
        pairs = parse_pairs(args.compare, list(study.runs))
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    settings = [s for s in args.settings if not (args.quick and s == "8x") and (s == "trained" or study.transferred)]
    rows: dict[str, dict[str, dict]] = {}
    policies: dict[str, list[dict]] = {}
    differences: list[dict] = []
    for setting in settings:
        per_episode, rows[setting], policies[setting] = evaluate_setting(study, setting, out)
        if setting == "trained":
            differences = variant_differences(per_episode, pairs, study.seeds)
    command = command_line(args)
    commit = git_commit()  # before anything is written, which would make the tree dirty
    block = markdown(rows, command, commit, differences, policies)
    print(block)
    atomic_write_json(out / "rows.json", {"rows": rows, "differences": differences, "policies": policies})
    if args.write:
        try:
            start, end = markers(args.section)
            for path in (Path(args.page), Path(args.readme)):
                if start not in path.read_text():
                    raise ValueError(f"{path} has no {start} marker")
            write_between_markers(Path(args.page), block, start, end)
            write_between_markers(Path(args.readme), f"{readme_table(rows)}\n\n(`{command}`, commit "
                                  f"`{commit}`; [the bars and all settings](docs/results/learned-agent.md))",
                                  start, end)
        except (ValueError, FileNotFoundError) as error:
            parser.error(str(error))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
