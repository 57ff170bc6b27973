"""What the entry points call: the local function without Ray options, its Ray version with them (Ray is
imported only then)."""

from __future__ import annotations

from fedenv.distributed.cluster import RayOptions


def run_compare(options: RayOptions | None, env_config, policies, seeds, out_dir=None, progress: bool = False,
                probing: bool | None = None) -> dict:
    """:func:`fedenv.evaluation.compare` (``options`` None) or
    :func:`fedenv.distributed.episodes.compare_on_ray`; returns the records."""
    if options is None:
        from fedenv.evaluation import compare

        return compare(env_config, policies, seeds, out_dir, progress=progress, probing=probing)
    from fedenv.distributed.episodes import compare_on_ray

    return compare_on_ray(env_config, policies, seeds, options, out_dir, progress=progress, probing=probing)


def run_calibration(options: RayOptions | None, config, seeds, share: float) -> dict:
    """:func:`fedenv.calibrate.calibrate_weights` (``options`` None) or
    :func:`fedenv.distributed.episodes.calibrate_weights_on_ray`."""
    if options is None:
        from fedenv.calibrate import calibrate_weights

        return calibrate_weights(config, seeds, share)
    from fedenv.distributed.episodes import calibrate_weights_on_ray

    return calibrate_weights_on_ray(config, seeds, share, options)
