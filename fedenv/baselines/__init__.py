"""Fixed client-selection policies (the baselines) and the interface every policy meets.

One module per policy family; :mod:`fedenv.baselines.base` has the interface and how to add a policy,
:mod:`fedenv.registry` names them (``POLICIES``) and :func:`make_policy` builds one by name.
"""

from fedenv.baselines.base import (
    DEFAULT_SELECT_FRACTION,
    Policy,
    candidates,
    check_select_fraction,
    expected_duration_s,
    predicted_duration_s,
    select_count,
)
from fedenv.baselines.factory import compared_policies, make_policy, options_for, policy_options
from fedenv.baselines.fastest import Fastest
from fedenv.baselines.fedcm import BanditPolicy, FedCMTS, FedCMUCB
from fedenv.baselines.oort import Oort, oort_utility
from fedenv.baselines.random_selection import RandomPolicy
from fedenv.baselines.schedule import LateRoundsSchedule
from fedenv.baselines.select_all import (
    Configured,
    FedAdpPolicy,
    FedAvgPolicy,
    FedCAPolicy,
    FedProxPolicy,
    SelectAll,
)

__all__ = [
    "DEFAULT_SELECT_FRACTION",
    "BanditPolicy",
    "Configured",
    "Fastest",
    "FedAdpPolicy",
    "FedAvgPolicy",
    "FedCAPolicy",
    "FedCMTS",
    "FedCMUCB",
    "FedProxPolicy",
    "LateRoundsSchedule",
    "Oort",
    "Policy",
    "RandomPolicy",
    "SelectAll",
    "candidates",
    "check_select_fraction",
    "compared_policies",
    "expected_duration_s",
    "make_policy",
    "oort_utility",
    "options_for",
    "policy_options",
    "predicted_duration_s",
    "select_count",
]
