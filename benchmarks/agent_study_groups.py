"""The learned-agent study's groups (:mod:`benchmarks.agent_study`): the shared training federation and the
scratch variants' check (:func:`shared_federation`, :func:`check_scratch`; each setting's federation is
:func:`benchmarks.agent_study_settings.setting_config`), the evaluation of each group of
policies of a setting on the held-out seeds (the fixed policies, the schedules, each variant, each variant's
fine-tuned runs: :func:`evaluate_setting`), and their cache, ``OUT/<setting>/<group>.json``
(:func:`cached_group`): a group is evaluated (or fine-tuned) only when no earlier run wrote it under the same
key."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

from agents.policy import GreedyPolicy
from benchmarks.agent_study_rows import policy_rows, variant_differences, variant_row
from benchmarks.agent_study_settings import setting_config
from benchmarks.common import fine_tune, fine_tune_validated
from benchmarks.schedules import parse_grid
from fedenv.baselines import LateRoundsPolicy, make_policy, policy_from_spec
from fedenv.config import EnvConfig
from fedenv.evaluation import evaluate_policies, per_episode_metrics
from fedenv.evaluation.paired import best_by_mean_return
from fedenv.evaluation.transfer import HARMLESS_FIELDS, config_differences
from fedenv.fileio import atomic_write_json, json_text

LEARNER_FIELDS = ("probing", "observation_context", "observation_normalised", "observation_estimates")
"""EnvConfig fields a learner variant may set; the fixed policies and schedules take their own."""


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


def check_scratch(federation: EnvConfig, setting: str, name: str, policies: list[GreedyPolicy],
                  data_root: str | None = None) -> None:
    """Check that the runs of scratch variant ``name`` were trained in ``setting``'s federation
    (:func:`benchmarks.agent_study_settings.setting_config` of the shared ``federation`` and ``data_root``),
    outside :data:`LEARNER_FIELDS` and the fields that say only where data is or what computes the round.

    Raises:
        ValueError: a run trained elsewhere, naming the fields, its values and the setting's.
    """
    expected = setting_config(federation, setting, data_root)
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


def as_stored(value):
    """``value`` as a cache file holds it and reads it back: standard JSON (:func:`fedenv.fileio.json_text`:
    NaN and infinities as None, tuples as lists) parsed again."""
    return json.loads(json_text(value))


def cached_group(path: Path, key: dict, evaluate: Callable[[], dict[str, list[dict]]]) -> dict[str, list[dict]]:
    """The per-episode metrics ``path`` holds if an earlier run wrote them under the same ``key``, else
    ``evaluate()``'s, written there atomically with the key (a file under a different key, evaluated for
    another configuration, seeds, checkpoints or fine-tuning, is replaced, and the replacement printed); a line
    names the group before it is evaluated, and the evaluation shows its progress on stderr. Both are returned
    :func:`as_stored` (a metric that is not a number, e.g. ``rounds_to_fedavg`` without FedAvg in the group,
    is None), so a group read back equals the group evaluated."""
    key = as_stored(key)
    replaced = False
    if path.exists():
        document = json.loads(path.read_text())
        if document["key"] == key:
            return document["per_episode"]
        replaced = True
    print(f"evaluating {path.parent.name}/{path.stem}", flush=True)
    per_episode = as_stored(evaluate())
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
        config, policies, seeds, progress=True, probing=probing, checkpoints=checkpoints)))


@dataclasses.dataclass(frozen=True)
class FineTuning:
    """How each run of a transfer variant is fine-tuned in a transfer setting (``agent_study --fine-tune-*``):
    for ``episodes`` episodes (FedMarl's 10: Zhang et al., AAAI 2022, arXiv 2201.02932, Sec. 5, Table 3;
    :func:`benchmarks.common.fine_tune`), with exploration re-annealed from epsilon ``initial_eps`` (None: it
    stays at each run's final epsilon), training the Q-network's output layer alone (``head_only``), and, with
    ``val_seeds``, keeping the fine-tuned weights only where they beat the zero-shot ones on those validation
    seeds (:func:`benchmarks.common.fine_tune_validated`)."""

    episodes: int
    val_seeds: list[int] | None = None
    initial_eps: float | None = None
    head_only: bool = False

    def name(self, variant: str) -> str:
        """The fine-tuned variant's name: ``VARIANT +ftN``, with ``-epsE`` when exploration is re-annealed from
        ``E``, ``-head`` when only the output layer is trained and ``-val`` when validation seeds choose."""
        return (f"{variant} +ft{self.episodes}" + ("" if self.initial_eps is None else f"-eps{self.initial_eps:g}")
                + ("-head" if self.head_only else "") + ("" if self.val_seeds is None else "-val"))

    def record(self) -> dict:
        """The options as written in a fine-tuned group's cache key (only those set beside ``episodes``)."""
        return {"episodes": self.episodes, **({} if self.val_seeds is None else {"val_seeds": self.val_seeds}),
                **({} if self.initial_eps is None else {"initial_eps": self.initial_eps}),
                **({"head_only": True} if self.head_only else {})}

    def run(self, checkpoint: Path, config: EnvConfig, seed: int) -> tuple[GreedyPolicy, bool | None]:
        """Fine-tune ``checkpoint`` in ``config`` with training seed ``seed``: the policy kept and, with
        ``val_seeds``, whether it is the fine-tuned one (None without them: always)."""
        how = {"initial_eps": self.initial_eps, "head_only": self.head_only}
        if self.val_seeds is None:
            return fine_tune(checkpoint, config, self.episodes, seed, **how), None
        return fine_tune_validated(checkpoint, config, self.episodes, seed, self.val_seeds, **how)


def fine_tune_seed(run_index: int) -> int:
    """The training seed of the fine-tuning of run ``run_index`` of a variant (its checkpoints in sorted path
    order, from 0): the index itself, so its episodes play env seeds ``10000 + 1000000 * run_index + episode``
    (:func:`agents.rollout.training_seed`, as ``train_agents.py --seed``), never a held-out seed (1000 up,
    below 10000) nor a validation seed (500 up)."""
    return run_index


def fine_tuned_group(path: Path, config: EnvConfig, name: str, checkpoints: list[str], tuning: FineTuning,
                     seeds: list[int]) -> dict[str, list[dict]]:
    """Per-episode metrics of the runs of ``checkpoints``, each fine-tuned in ``config`` as ``tuning`` says
    (:meth:`FineTuning.run`, seed :func:`fine_tune_seed` of its index) and pooled under ``name``, on ``seeds``;
    each episode records the checkpoint its run started from and, with validation seeds, whether that run kept
    its fine-tuned weights (``kept_fine_tuned``). Read from ``path`` when an earlier run fine-tuned the same
    checkpoints with the same options and seeds in the same configuration (no fine-tuning then), else
    fine-tuned, evaluated and written there (:func:`cached_group`)."""
    tune_seeds = [fine_tune_seed(index) for index in range(len(checkpoints))]
    key = {"config": config.to_dict(), "seeds": seeds, "policies": [name] * len(checkpoints),
           "checkpoints": checkpoints, "fine_tune": {**tuning.record(), "seeds": tune_seeds}}

    def evaluate() -> dict[str, list[dict]]:
        chosen = []
        for index, (checkpoint, seed) in enumerate(zip(checkpoints, tune_seeds), start=1):
            print(f"fine-tuning run {index}/{len(checkpoints)} ({checkpoint}) for {tuning.episodes} "
                  f"episode{'' if tuning.episodes == 1 else 's'}", flush=True)
            chosen.append(tuning.run(Path(checkpoint), config, seed))
        for policy, _ in chosen:
            policy.name = name
        per_episode = per_episode_metrics(evaluate_policies(config, [policy for policy, _ in chosen], seeds,
                                                            progress=True, probing=None, checkpoints=checkpoints))
        if tuning.val_seeds is not None:
            kept = {checkpoint: fine_tuned for checkpoint, (_, fine_tuned) in zip(checkpoints, chosen)}
            for episode in per_episode[name]:
                episode["kept_fine_tuned"] = kept[episode["checkpoint"]]
        return per_episode

    return cached_group(path, key, evaluate)


def kept_runs(episodes: list[dict]) -> dict[str, int]:
    """``{"kept_runs": K, "runs": R}``: of the ``R`` runs of a fine-tuned variant's ``episodes``, the ``K`` that
    kept their fine-tuned weights (:func:`fine_tuned_group` with ``val_seeds``); empty when the runs kept them
    all by construction (no ``kept_fine_tuned`` record)."""
    kept = {e["checkpoint"]: e["kept_fine_tuned"] for e in episodes if "kept_fine_tuned" in e}
    return {"kept_runs": sum(kept.values()), "runs": len(kept)} if kept else {}


@dataclasses.dataclass
class Study:
    """What one invocation evaluates: the variants' checkpoints (``runs``) and loaded policies (``learned``,
    scratch variants included), the transfer variants, their fine-tuning (None: none; the fine-tuned variants'
    names are :meth:`FineTuning.name`), the scratch variant per transfer setting, the fixed policies, the
    schedules' grid, the held-out seeds and the settings evaluated, in order, each with its federation (``configs``:
    :func:`benchmarks.agent_study_settings.setting_config`), and the reference policies outside the bars
    (``references``: registered names, :func:`reference_policies`)."""
    runs: dict[str, list[str]]
    learned: dict[str, list[GreedyPolicy]]
    federation: EnvConfig
    transferred: list[str]
    fine_tuning: FineTuning | None
    scratch: dict[str, tuple[str, list[str]]]
    fixed: list[str]
    grid: str
    seeds: list[int]
    settings: list[str]
    configs: dict[str, EnvConfig]
    references: list[str] = dataclasses.field(default_factory=list)


def reference_policies(items: list[str], num_rounds: int) -> list:
    """The policies of ``--references`` items (``NAME`` or ``NAME:OPTION=VALUE,...``), each built by
    :func:`fedenv.baselines.policy_from_spec` and named by its item.

    Raises:
        ValueError: a malformed item, a name that is not registered, an option the policy does not take or a
            value it refuses.
    """
    return [policy_from_spec(item, num_rounds=num_rounds) for item in items]


def evaluate_setting(study: Study, setting: str, out: Path) -> tuple[dict[str, list[dict]], dict[str, dict],
                                                                     list[dict]]:
    """Evaluate (or read from ``OUT/<setting>``) every group of ``setting``: the fixed policies, the schedules,
    the reference policies (if any), the variants (every one in the trained setting, the transfer variants
    elsewhere), each transfer variant's fine-tuned runs right after it and the setting's scratch variant last.

    Returns:
        ``(per_episode, rows, policies)``: the per-episode metrics by policy, the variants' rows
        (:func:`benchmarks.agent_study_rows.variant_row`; a transfer variant's row with ``ft_minus_zero_shot``,
        its fine-tuned variant minus it, and ``zero_shot_minus_scratch``, it minus the scratch variant, from
        :func:`benchmarks.agent_study_rows.variant_differences`) and the all-policies rows
        (:func:`benchmarks.agent_study_rows.policy_rows`).
    """
    config = study.configs[setting]
    seeds = study.seeds
    per_episode = dict(evaluate_group(out / setting / "fixed.json", config,
                                      [make_policy(name) for name in study.fixed], seeds, probing=None))
    open_loop = schedules(study.grid, config.num_rounds)
    per_episode.update(evaluate_group(out / setting / "schedules.json", config, open_loop, seeds, probing=False))
    scheduled = [s.name for s in open_loop]
    references = reference_policies(study.references, config.num_rounds)
    if references:
        per_episode.update(evaluate_group(out / setting / "references.json", config, references, seeds, probing=None))
    referenced = [policy.name for policy in references]
    zero_shot = [name for name in study.runs if setting == "trained" or name in study.transferred]
    tuned = ({} if setting == "trained" or study.fine_tuning is None else
             {name: study.fine_tuning.name(name) for name in zero_shot})
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
                                                study.runs[name], study.fine_tuning, seeds))
            variants.append(tuned[name])
    rows = {name: variant_row(per_episode, name, study.fixed, scheduled, seeds, referenced) for name in variants}
    for name, tuned_name in tuned.items():
        [difference] = variant_differences(per_episode, [(tuned_name, name)], seeds)
        rows[name]["ft_minus_zero_shot"] = {**difference, "episodes": study.fine_tuning.episodes,
                                            "initial_eps": study.fine_tuning.initial_eps,
                                            "head_only": study.fine_tuning.head_only,
                                            **kept_runs(per_episode[tuned_name])}
        if scratch_name:
            [rows[name]["zero_shot_minus_scratch"]] = variant_differences(per_episode, [(name, scratch_name)], seeds)
    policies = policy_rows(per_episode, {"learned": variants, "fixed": study.fixed, "schedule": scheduled,
                                         "reference": referenced}, seeds,
                           best_fixed=best_by_mean_return(per_episode, study.fixed))
    return per_episode, rows, policies


