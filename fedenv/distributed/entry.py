"""What the entry points call: the local function without Ray options, its Ray version with them (Ray is
imported only then)."""

from __future__ import annotations

import functools

from fedenv.distributed.cluster import RayOptions


def run_compare(options: RayOptions | None, env_config, policies, seeds, out_dir=None, **kwargs) -> dict:
    """:func:`fedenv.evaluation.compare` (keyword arguments as there), its episodes run locally
    (``options`` None) or as Ray tasks (:func:`fedenv.distributed.episodes.evaluate_policies_on_ray`).
    Returns the records."""
    from fedenv.evaluation import compare

    if options is None:
        return compare(env_config, policies, seeds, out_dir, **kwargs)
    from fedenv.distributed.episodes import evaluate_policies_on_ray

    return compare(env_config, policies, seeds, out_dir,
                   evaluate=functools.partial(evaluate_policies_on_ray, options=options), **kwargs)


def run_calibration(options: RayOptions | None, config, seeds, share: float, env=None) -> dict:
    """:func:`fedenv.calibration.calibrate_weights` (``options`` None; ``env``: the environment already built
    for ``config``, or None) or :func:`fedenv.distributed.episodes.calibrate_weights_on_ray`."""
    if options is None:
        from fedenv.calibration import calibrate_weights

        return calibrate_weights(config, seeds, share, env)
    from fedenv.distributed.episodes import calibrate_weights_on_ray

    return calibrate_weights_on_ray(config, seeds, share, options)
