"""Fixed client-selection policies (the baselines) and the interface every policy meets.

One module per policy family; :mod:`fedenv.baselines.base` has the interface and how to add a policy,
:mod:`fedenv.registry` names them (``POLICIES``) and :func:`make_policy` builds one by name.
"""

from fedenv.baselines.base import (
    DEFAULT_SELECT_FRACTION,
    Policy,
    candidates,
    check_counts,
    check_select_fraction,
    expected_duration_s,
    predicted_duration_s,
    select_count,
)
from fedenv.baselines.factory import (
    check_policy_options,
    compared_policies,
    make_policy,
    options_for,
    parse_policy_spec,
    policy_from_spec,
    policy_options,
)
from fedenv.baselines.fastest import FastestPolicy
from fedenv.baselines.fedcm import BanditPolicy, FedCMTSPolicy, FedCMUCBPolicy
from fedenv.baselines.oort import OortPolicy, oort_utility
from fedenv.baselines.oracle_fastest import OracleFastestPolicy
from fedenv.baselines.random_selection import RandomPolicy
from fedenv.baselines.schedule import LateRoundsPolicy
from fedenv.baselines.select_all import (
    ConfiguredPolicy,
    FedAdpPolicy,
    FedAvgPolicy,
    FedCAPolicy,
    FedProxPolicy,
    SelectAllPolicy,
)
from fedenv.baselines.stale_fastest import StaleFastestPolicy

__all__ = [
    "DEFAULT_SELECT_FRACTION",
    "BanditPolicy",
    "ConfiguredPolicy",
    "FastestPolicy",
    "FedAdpPolicy",
    "FedAvgPolicy",
    "FedCAPolicy",
    "FedCMTSPolicy",
    "FedCMUCBPolicy",
    "FedProxPolicy",
    "LateRoundsPolicy",
    "OortPolicy",
    "OracleFastestPolicy",
    "Policy",
    "RandomPolicy",
    "SelectAllPolicy",
    "StaleFastestPolicy",
    "candidates",
    "check_counts",
    "check_policy_options",
    "check_select_fraction",
    "compared_policies",
    "expected_duration_s",
    "make_policy",
    "oort_utility",
    "options_for",
    "parse_policy_spec",
    "policy_from_spec",
    "policy_options",
    "predicted_duration_s",
    "select_count",
]
