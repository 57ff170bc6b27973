"""Glue for third-party RL libraries: flat observations, Stable-Baselines3, TorchRL and BenchMARL.

The optional libraries are imported only when a function of this package is called, so importing it
needs none of them, except :mod:`fedenv.integrations.benchmarl` (the BenchMARL task), which imports
BenchMARL and TorchRL and is therefore not imported here.
"""

from fedenv.integrations.flat import MASK_MODES, FlatObservation, flatten_observations
from fedenv.integrations.sb3 import SB3_ALGORITHMS, SB3Policy, sb3_progress_callback, sb3_vec_env
from fedenv.integrations.torchrl import TorchRLPolicy, torchrl_env

__all__ = [
    "MASK_MODES",
    "SB3_ALGORITHMS",
    "FlatObservation",
    "SB3Policy",
    "TorchRLPolicy",
    "flatten_observations",
    "sb3_progress_callback",
    "sb3_vec_env",
    "torchrl_env",
]
