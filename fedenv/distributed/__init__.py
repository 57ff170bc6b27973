"""Scaling out on Ray (https://docs.ray.io, Moritz et al., OSDI 2018): flags, cluster start-up and remote
evaluation episodes.

Importing this package does not import Ray: :func:`add_ray_arguments` and :func:`ray_options_from_args`
only read flags; Ray is imported by :func:`start_ray` and by :mod:`fedenv.distributed.episodes`, which the
entry points import only when ``--ray-address`` is given. Needs the ``ray`` extra
(``pip install -e ".[ray]"``).
"""

from fedenv.distributed.cluster import RayOptions, add_ray_arguments, ray_options_from_args, start_ray

__all__ = ["RayOptions", "add_ray_arguments", "ray_options_from_args", "start_ray"]
