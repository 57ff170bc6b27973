"""Which settings an evaluation changes from training (transfer), and checkpoints that can be pooled.

A learned policy is evaluated in the environment it was trained in unless flags override fields; the
fields that then differ are reported as ``trained_on`` / ``evaluated_on``. Several checkpoints (e.g.
training seeds) are pooled as one policy only if they were trained in the same environment, up to
:data:`HARMLESS_FIELDS`.
"""

from __future__ import annotations

import dataclasses

from fedenv.config import EnvConfig

HARMLESS_FIELDS = ("data_root", "download", "device", "engine")
"""EnvConfig fields that say where the data is or what computes the round, not what the federation is."""


def config_differences(trained: EnvConfig, evaluated: EnvConfig, ignore=HARMLESS_FIELDS) -> dict[str, dict]:
    """The EnvConfig fields (outside ``ignore``) whose values differ.

    Returns:
        ``{"trained_on": {field: value}, "evaluated_on": {field: value}}``, both empty when nothing differs.
    """
    names = [f.name for f in dataclasses.fields(EnvConfig) if f.name not in ignore]
    differing = [n for n in names if getattr(trained, n) != getattr(evaluated, n)]
    return {"trained_on": {n: getattr(trained, n) for n in differing},
            "evaluated_on": {n: getattr(evaluated, n) for n in differing}}


def describe_transfer(differences: dict[str, dict]) -> str:
    """One line for the table's header: ``trained on a=1, b=2; evaluated on a=3, b=4`` (or that nothing
    differs)."""
    if not differences["trained_on"]:
        return "evaluated in the environment it was trained in"
    return "; ".join(f"{side.replace('_', ' ')} " + ", ".join(f"{k}={v}" for k, v in values.items())
                     for side, values in differences.items())


def shared_training_config(configs: list[EnvConfig], labels: list[str]) -> EnvConfig:
    """The environment all checkpoints were trained in (the first one's config).

    Args:
        configs: each checkpoint's env config; labels: the checkpoints' names (paths), same order.

    Raises:
        ValueError: two checkpoints trained in different environments (fields outside
            :data:`HARMLESS_FIELDS` differ); names both checkpoints and the differing values.
    """
    for config, label in zip(configs[1:], labels[1:]):
        differences = config_differences(configs[0], config)
        if differences["trained_on"]:
            changes = ", ".join(f"{k}={v!r} vs {differences['evaluated_on'][k]!r}"
                                for k, v in differences["trained_on"].items())
            raise ValueError(f"checkpoints {labels[0]} and {label} were trained in different environments "
                             f"({changes}); evaluate them separately")
    return configs[0]
