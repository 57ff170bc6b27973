"""fedenv: client selection in federated learning as a PettingZoo parallel environment.

``fedenv.parallel_env(**config)`` builds the environment from the fields of :class:`EnvConfig`;
it is also registered with PettingZoo as ``fedenv/ClientSelection-v0``
(``pettingzoo.make("parallel", "fedenv/ClientSelection-v0", num_clients=10)``).
"""

import pettingzoo

from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv, parallel_env

ENV_ID = "fedenv/ClientSelection-v0"
if ENV_ID not in pettingzoo.parallel_registry:
    pettingzoo.register("parallel", ENV_ID, entry_point="fedenv.env:parallel_env")

__all__ = ["ENV_ID", "ClientSelectionEnv", "EnvConfig", "parallel_env"]
