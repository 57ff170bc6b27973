"""TensorBoard scalars of a training run; the x-axis of every scalar is the number of FL rounds played.

Tags follow CleanRL's DQN (``charts/episodic_return``, ``charts/epsilon``, ``charts/SPS``,
``losses/td_loss``) plus ``fl/*`` for the federation and ``eval/*`` for the validation episodes; with a
demonstrator, ``losses/margin_loss`` (DQfD's margin term before its weight) and ``charts/demonstration_weight``
(the mean weight of the same gradient steps), so that ``losses/td_loss`` stays the TD term alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from torch.utils.tensorboard import SummaryWriter

from agents.episodes import EpisodeSummary


def open_writer(run_dir: str | Path, resumed_at_step: int | None = None) -> SummaryWriter:
    """A writer into ``run_dir``. A run resumed from a checkpoint written after FL round
    ``resumed_at_step`` purges every event past that round (``purge_step``): the killed run's events
    written after its last checkpoint are dropped by TensorBoard, and the resumed run writes them again."""
    return SummaryWriter(str(run_dir), purge_step=None if resumed_at_step is None else resumed_at_step + 1)


def log_episode(writer: SummaryWriter, summary: EpisodeSummary, rounds_per_s: float) -> None:
    """One training episode's scalars at its last FL round; ``rounds_per_s``: the recent rate (SPS)."""
    steps = summary.rounds_played
    writer.add_scalar("charts/episodic_return", summary.team_return, steps)
    writer.add_scalar("charts/epsilon", summary.epsilon, steps)
    writer.add_scalar("charts/SPS", rounds_per_s, steps)
    if summary.td_losses:
        writer.add_scalar("losses/td_loss", float(np.mean(summary.td_losses)), steps)
    if summary.margin_losses:
        writer.add_scalar("losses/margin_loss", float(np.mean(summary.margin_losses)), steps)
    if summary.demonstration_weight is not None:
        writer.add_scalar("charts/demonstration_weight", summary.demonstration_weight, steps)
    writer.add_scalar("fl/final_accuracy", summary.final_accuracy, steps)
    writer.add_scalar("fl/total_latency_s", summary.total_latency_s, steps)
    writer.add_scalar("fl/total_upload_mb", summary.total_upload_mb, steps)
    writer.add_scalar("fl/participation_rate", summary.participation_rate, steps)


def log_validation(writer: SummaryWriter, team_return: float, final_accuracy: float, steps: int) -> None:
    """The mean greedy validation scores after ``steps`` FL rounds (:mod:`agents.validation`)."""
    writer.add_scalar("eval/team_return", team_return, steps)
    writer.add_scalar("eval/final_accuracy", final_accuracy, steps)
