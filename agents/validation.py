"""Evaluation while training: the greedy policy on fixed validation seeds, and the best checkpoint.

Validation seeds (default 500-502) are disjoint from the training seeds (10000 and up,
:func:`agents.trainer.training_seed`) and from the held-out test seeds of the final comparison (1000 and
up), so model selection by validation score never looks at a test episode. Evaluation plays in an env of
its own with seeded resets and a CPU copy of the Q-network: it draws from none of the training loop's
generators, so a run trains the same weights with and without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agents.checkpoint import save_checkpoint
from agents.policy import GreedyPolicy
from agents.tensorboard_log import log_validation
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation import run_episode

VALIDATION_SEEDS = (500, 501, 502)
BEST_NAME = "best.pt"
LOWEST_TRAINING_SEED = 10_000


@dataclass
class Validation:
    """Mean over the validation seeds of the team return (shared reward summed over rounds) and of the
    final test accuracy."""

    team_return: float
    final_accuracy: float


def check_validation_seeds(seeds, test_seeds=()) -> list[int]:
    """``seeds`` as a list of ints.

    Raises:
        ValueError: no seed, a seed that is negative or in the training range (10000 and up), or one
            that is also a test seed.
    """
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("validation seeds: give at least one (or turn evaluation off with an interval of 0)")
    bad = [s for s in seeds if not 0 <= s < LOWEST_TRAINING_SEED]
    if bad:
        raise ValueError(f"validation seeds {bad} must be in [0, {LOWEST_TRAINING_SEED}): training seeds start there")
    shared = sorted(set(seeds) & {int(s) for s in test_seeds})
    if shared:
        raise ValueError(f"validation seeds {shared} are also test seeds (--eval-seeds): keep them apart")
    return seeds


def validate(policy: GreedyPolicy, env: ClientSelectionEnv, seeds: list[int]) -> Validation:
    """Play one greedy episode per seed in ``env``; the means of their scores."""
    records = [run_episode(env, policy, seed) for seed in seeds]
    return Validation(float(np.mean([r.team_return for r in records])),
                      float(np.mean([r.final_accuracy for r in records])))


def evaluate_and_keep_best(trainer, env: ClientSelectionEnv, seeds: list[int], writer=None,
                           run_dir: str | Path | None = None) -> Validation:
    """Validate ``trainer``'s greedy policy (an :class:`~agents.trainer.Trainer`), log ``eval/*`` to
    ``writer`` and, when it beats ``trainer.best_eval_return``, record it there and write its weights to
    ``run_dir/best.pt`` atomically (a checkpoint :class:`GreedyPolicy` and evaluate.py load, plus a
    ``validation`` entry with the seeds and scores)."""
    result = validate(trainer.greedy_policy(), env, seeds)
    if writer is not None:
        log_validation(writer, result.team_return, result.final_accuracy, trainer.steps)
    if trainer.best_eval_return is None or result.team_return > trainer.best_eval_return:
        trainer.best_eval_return = result.team_return
        if run_dir is not None:
            save_checkpoint(Path(run_dir) / BEST_NAME, {**trainer.policy_payload(), "validation": {
                "seeds": list(seeds), "team_return": result.team_return, "final_accuracy": result.final_accuracy}})
    return result
