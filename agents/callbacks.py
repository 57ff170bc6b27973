"""What a training run does besides learning, as callbacks of :func:`agents.trainer.learn`.

In the manner of Stable-Baselines3's callbacks (``stable_baselines3.common.callbacks``: ``BaseCallback``,
``EvalCallback``, ``CheckpointCallback``, ``ProgressBarCallback``), reduced to the loop's three events: the
start of training, the end of every batch of episodes, and the end of training (also when training fails).
:func:`agents.trainer.train_vdn` runs them in this order: TensorBoard, progress, validation, checkpoint, so
that a checkpoint is written after the batch's events and validation are logged.
"""

from __future__ import annotations

from pathlib import Path

from agents.checkpoint import save_checkpoint
from agents.episodes import EpisodeSummary
from agents.progress import Progress, progress_mode
from agents.tensorboard_log import log_episode, open_writer
from agents.validation import evaluate_and_keep_best
from fedenv.env import ClientSelectionEnv


class Callback:
    """A training callback; every hook does nothing unless overridden. ``trainer``: the
    :class:`~agents.trainer.Trainer` being trained."""

    def on_training_start(self, trainer) -> None:
        """Before the first batch of episodes of this call."""

    def on_episodes_end(self, trainer, before: int, summaries: list[EpisodeSummary], rounds_per_s: float) -> None:
        """After a batch: the trainer went from ``before`` episodes to ``trainer.episode``; ``summaries``: the
        batch's episodes in episode order; ``rounds_per_s``: the batch's FL rounds per second (wall clock)."""

    def on_training_end(self, trainer) -> None:
        """After the last batch, or when training failed."""


def crossed(before: int, after: int, interval: int) -> bool:
    """Whether a multiple of ``interval`` lies in ``(before, after]`` (a batch crossed a due episode)."""
    return after // interval > before // interval


class TensorBoardCallback(Callback):
    """TensorBoard scalars under ``run_dir`` (:mod:`agents.tensorboard_log`): every episode's, plus each Ray
    actor's FL rounds per second in its last call (``workers/fl_rounds_per_s/<worker>``). A run resumed from a
    checkpoint written after FL round ``resumed_at_step`` purges the events past it
    (:func:`~agents.tensorboard_log.open_writer`)."""

    def __init__(self, run_dir: str | Path, resumed_at_step: int | None = None):
        self.writer = open_writer(run_dir, resumed_at_step)

    def on_episodes_end(self, trainer, before, summaries, rounds_per_s) -> None:
        for summary in summaries:
            log_episode(self.writer, summary, rounds_per_s)
        for worker, rate in sorted(trainer.source.worker_rates.items()):
            self.writer.add_scalar(f"workers/fl_rounds_per_s/{worker}", rate, trainer.steps)

    def on_training_end(self, trainer) -> None:
        self.writer.close()


class ProgressCallback(Callback):
    """A progress bar or plain lines (:class:`agents.progress.Progress`; ``mode``: see
    :func:`agents.progress.progress_mode`).

    Raises:
        ValueError: a bad ``mode`` (on construction).
    """

    def __init__(self, mode: bool | str = "auto"):
        progress_mode(mode)
        self.mode, self.report = mode, None

    def on_training_start(self, trainer) -> None:
        self.report = Progress(trainer.episodes, trainer.episode, self.mode)

    def on_episodes_end(self, trainer, before, summaries, rounds_per_s) -> None:
        for count, summary in enumerate(summaries, start=before + 1):
            self.report.update(count, summary, rounds_per_s)

    def on_training_end(self, trainer) -> None:
        if self.report is not None:
            self.report.close()


class ValidationCallback(Callback):
    """Every ``interval`` episodes the greedy policy plays the validation ``seeds`` in ``env`` (an env of its
    own) and the best is kept as ``run_dir/best.pt`` (:func:`agents.validation.evaluate_and_keep_best`);
    scores are logged through ``tensorboard`` when given. Draws from none of the training generators."""

    def __init__(self, interval: int, env: ClientSelectionEnv, seeds: list[int], run_dir: str | Path | None = None,
                 tensorboard: TensorBoardCallback | None = None):
        self.interval, self.env, self.seeds, self.run_dir, self.tensorboard = interval, env, seeds, run_dir, tensorboard

    def on_episodes_end(self, trainer, before, summaries, rounds_per_s) -> None:
        if crossed(before, trainer.episode, self.interval):
            writer = None if self.tensorboard is None else self.tensorboard.writer
            evaluate_and_keep_best(trainer, self.env, self.seeds, writer, self.run_dir)


class CheckpointCallback(Callback):
    """The trainer's checkpoint (:meth:`~agents.trainer.Trainer.checkpoint`) written atomically to ``path``
    every ``interval`` episodes and after the run's last episode; ``tensorboard``'s events are flushed first,
    so a run resumed from the checkpoint misses none."""

    def __init__(self, path: str | Path, interval: int, tensorboard: TensorBoardCallback | None = None):
        self.path, self.interval, self.tensorboard = Path(path), interval, tensorboard

    def on_episodes_end(self, trainer, before, summaries, rounds_per_s) -> None:
        if crossed(before, trainer.episode, self.interval) or trainer.episode == trainer.episodes:
            if self.tensorboard is not None:
                self.tensorboard.writer.flush()
            save_checkpoint(self.path, trainer.checkpoint())
