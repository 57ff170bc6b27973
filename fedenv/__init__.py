"""fedenv: client selection in federated learning as a PettingZoo parallel environment.

``fedenv.parallel_env(**config)`` builds the environment from the fields of :class:`EnvConfig`;
``import fedenv`` also registers it with PettingZoo as ``fedenv/ClientSelection-v1``
(``pettingzoo.make("parallel", "fedenv/ClientSelection-v1", num_clients=10)``); release 0.1.0's
``fedenv/ClientSelection-v0`` still builds, with a warning (:mod:`fedenv.registration`).
"""

from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv, parallel_env
from fedenv.registration import ENV_ID, register_envs

register_envs()

__all__ = ["ENV_ID", "ClientSelectionEnv", "EnvConfig", "parallel_env"]
