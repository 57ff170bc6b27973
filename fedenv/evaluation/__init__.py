"""Evaluate policies: run episodes, compute metrics, tabulate, write CSV/JSON and plots.

:func:`compare` (and :func:`evaluate_policies`) run every policy on the same seeds; :func:`run_episode`
runs one episode into an :class:`EpisodeRecord`; :mod:`fedenv.evaluation.paired` gives each policy's paired
difference to the references (FedAvg, the best fixed policy) with bootstrap confidence intervals.
"""

from fedenv.evaluation.compare import compare, evaluate_policies, policy_config
from fedenv.evaluation.metrics import METRICS, per_episode_metrics, summarise, summarise_by_checkpoint
from fedenv.evaluation.paired import (
    compare_to_references,
    mean_interval,
    paired_differences,
    paired_interval,
    reference_policies,
)
from fedenv.evaluation.plots import pareto_front, plot_results
from fedenv.evaluation.progress import progress_bar
from fedenv.evaluation.results import RESULT_FILES, write_results
from fedenv.evaluation.rollout import EpisodeRecord, candidate_round_s, policy_steps, run_episode
from fedenv.evaluation.tables import format_paired_table, format_table
from fedenv.evaluation.transfer import HARMLESS_FIELDS, config_differences, describe_transfer, shared_training_config
from fedenv.fileio import json_safe

__all__ = [
    "HARMLESS_FIELDS",
    "METRICS",
    "RESULT_FILES",
    "EpisodeRecord",
    "candidate_round_s",
    "compare",
    "compare_to_references",
    "config_differences",
    "describe_transfer",
    "evaluate_policies",
    "format_paired_table",
    "format_table",
    "json_safe",
    "mean_interval",
    "paired_differences",
    "paired_interval",
    "pareto_front",
    "per_episode_metrics",
    "plot_results",
    "policy_config",
    "policy_steps",
    "progress_bar",
    "reference_policies",
    "run_episode",
    "shared_training_config",
    "summarise",
    "summarise_by_checkpoint",
    "write_results",
]
