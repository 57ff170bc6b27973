"""How noisy the reward's accuracy term is on the validation split and on the test split, per split size.

The reward's accuracy term is ``U(Acc(t)) - U(Acc(t-1))`` (docs/design.md, section 5). Scored on a finite
split, ``Acc(t)`` carries sampling noise that the round-to-round difference keeps; a smaller split is
noisier. For FedAvg (every candidate uploads) on the default federation, this prints, per
``--val-fractions`` value and seed, the size of each split and the standard deviation over rounds of
``Acc(t) - Acc(t-1)`` on the server's validation split and on the test split: over all rounds, over the
rounds after the first ``--settle`` (where learning has slowed and the noise dominates), and the sampling
noise of each split in those rounds (:func:`sampling_std`); then the means over seeds. docs/design.md,
section 3, records a run of it.

    python -m benchmarks.reward_noise                                   # val fractions 0.1 0.2 0.25, 2 seeds
    python -m benchmarks.reward_noise --val-fractions 0.1 0.25 --seeds 10000 10001 10002
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from fedenv.baselines import FedAvgPolicy
from fedenv.calibration import CALIBRATION_SEEDS
from fedenv.config import EVALUATION_SPLITS, EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation import EpisodeRecord, run_episode


def step_std(accuracy: list[float], settle: int = 0) -> float:
    """Standard deviation (ddof 0) of ``Acc(t) - Acc(t-1)`` over the rounds ``t > settle``.

    Args:
        accuracy: ``(T + 1,)`` accuracy after each round, the initial model's first.
        settle: rounds left out at the start, ``0 <= settle < T``.

    Raises:
        ValueError: ``settle`` outside ``[0, T)``.
    """
    steps = np.diff(np.asarray(accuracy, dtype=float))
    if not 0 <= settle < len(steps):
        raise ValueError(f"settle={settle} must be in [0, {len(steps)}) (the episode has {len(steps)} rounds)")
    return float(steps[settle:].std())


def sampling_std(validation: list[float], test: list[float], n_validation: int, n_test: int,
                 settle: int = 0) -> dict[str, float]:
    """The sampling noise of each split's ``Acc(t) - Acc(t-1)``, split from the model's own change.

    Both splits score the same models, so ``Acc_v(t) - Acc_v(t-1) - (Acc_s(t) - Acc_s(t-1))`` holds only
    the two splits' independent sampling noises: its variance over rounds ``t > settle`` is
    ``c / n_validation + c / n_test`` (a difference of two accuracies on ``n`` samples has variance
    ``d / n``, with ``d`` the share of samples the two models disagree on, the same for both splits drawn
    from one distribution). Returns ``{"validation": sqrt(c / n_validation), "test": sqrt(c / n_test)}``.
    """
    gap = np.diff(np.asarray(validation, dtype=float)) - np.diff(np.asarray(test, dtype=float))
    c = float(gap[settle:].var()) / (1.0 / n_validation + 1.0 / n_test)
    return {"validation": float(np.sqrt(c / n_validation)), "test": float(np.sqrt(c / n_test))}


def noise_rows(config: EnvConfig, val_fractions, seeds, settle: int) -> list[dict]:
    """One row per ``(val_fraction, seed)``: the split sizes, :func:`step_std` of each split's accuracy
    over all rounds (``{split}_step_std``) and after ``settle`` rounds (``{split}_late_step_std``), and the
    split's sampling noise after ``settle`` rounds (``{split}_sampling_std``, :func:`sampling_std`)."""
    rows = []
    for fraction in val_fractions:
        env = ClientSelectionEnv(dataclasses.replace(config, val_fraction=fraction))
        for seed in seeds:
            record: EpisodeRecord = run_episode(env, FedAvgPolicy(), seed)
            row = {"val_fraction": fraction, "seed": seed,
                   "validation_samples": len(env.simulator.validation_indices),
                   "test_samples": len(env.simulator.dataset.test_y)}
            sampling = sampling_std(record.validation_accuracy, record.test_accuracy, row["validation_samples"],
                                    row["test_samples"], settle)
            for split in EVALUATION_SPLITS:
                row[f"{split}_step_std"] = step_std(record.accuracy_on(split))
                row[f"{split}_late_step_std"] = step_std(record.accuracy_on(split), settle)
                row[f"{split}_sampling_std"] = sampling[split]
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--val-fractions", type=float, nargs="+", default=[0.1, 0.2, 0.25], metavar="F",
                        help="validation shares of the training set to measure (default: %(default)s)")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(CALIBRATION_SEEDS[:2]), metavar="SEED",
                        help="training env seeds (default: %(default)s, the first calibration seeds)")
    parser.add_argument("--settle", type=int, default=5,
                        help="rounds left out of the late standard deviation (default: %(default)s)")
    parser.add_argument("--device", default="cpu", help="torch device of the FL engine (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        config = EnvConfig(device=args.device).validate()
        rows = noise_rows(config, args.val_fractions, args.seeds, args.settle)
    except ValueError as error:
        parser.error(str(error))
    print(f"std over rounds of Acc(t) - Acc(t-1), FedAvg; 'late': rounds after the first {args.settle}")
    print("of which sampling noise: the part that differs between the two splits scoring the same models")
    print("val_fraction  seed   n_val  n_test  validation  test    validation late  test late  "
          "validation sampling  test sampling")
    for row in rows:
        print(f"{row['val_fraction']:<12g}  {row['seed']:<5d}  {row['validation_samples']:<5d}  "
              f"{row['test_samples']:<6d}  {row['validation_step_std']:.4f}      {row['test_step_std']:.4f}  "
              f"{row['validation_late_step_std']:.4f}           {row['test_late_step_std']:.4f}     "
              f"{row['validation_sampling_std']:.4f}               {row['test_sampling_std']:.4f}")
    for fraction in args.val_fractions:
        mine = [r for r in rows if r["val_fraction"] == fraction]
        means = {key: float(np.mean([r[key] for r in mine])) for key in mine[0] if key.endswith("std")}
        print(f"mean over seeds, val_fraction {fraction:g}: " + ", ".join(f"{k} {v:.4f}" for k, v in means.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
