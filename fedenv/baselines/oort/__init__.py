"""Oort (Lai et al., OSDI 2021): FedScale's selector (:mod:`.selector`) and the fedenv policy (:mod:`.policy`)."""

from fedenv.baselines.oort.options import OortOptions
from fedenv.baselines.oort.policy import OortPolicy, oort_utility
from fedenv.baselines.oort.selector import OortSelector

__all__ = ["OortOptions", "OortPolicy", "OortSelector", "oort_utility"]
