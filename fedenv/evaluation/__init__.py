"""Evaluate policies: run episodes, compute metrics, tabulate, write CSV/JSON and plots.

:func:`compare` (and :func:`evaluate_policies`) run every policy on the same seeds; :func:`run_episode`
runs one episode into an :class:`EpisodeRecord`.
"""

from fedenv.evaluation.compare import compare, evaluate_policies, policy_config
from fedenv.evaluation.metrics import METRICS, per_episode_metrics, summarise
from fedenv.evaluation.plots import plot_results
from fedenv.evaluation.results import json_safe, write_results
from fedenv.evaluation.rollout import EpisodeRecord, run_episode
from fedenv.evaluation.tables import format_table

__all__ = [
    "METRICS",
    "EpisodeRecord",
    "compare",
    "evaluate_policies",
    "format_table",
    "json_safe",
    "per_episode_metrics",
    "plot_results",
    "policy_config",
    "run_episode",
    "summarise",
    "write_results",
]
