import numpy as np
import pytest

from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.traces import TraceReplay, load_trace, require_clients


def test_too_few_trace_clients_names_the_command_that_makes_a_larger_trace():
    trace = load_trace("default")
    hint = r"python -m fedenv\.traces generate --clients 1000 --out FILE` and pass it as --trace FILE"
    with pytest.raises(ValueError, match=rf"num_clients=1000 but trace 'default' holds 100 clients; .*{hint}"):
        ClientSelectionEnv(EnvConfig(num_clients=1000, clients_per_round=10))
    with pytest.raises(ValueError, match=r"holds 100 clients; .*--clients 101 .*"):
        TraceReplay(trace, 101, np.random.default_rng(0), model_macs=1, model_bits=1)
    require_clients(trace, 100, "default")  # exactly enough
