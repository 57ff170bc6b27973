"""Learning agents for the fedenv client-selection environment: VDN with a shared Q-network.

``agents`` imports ``fedenv``; ``fedenv`` never imports ``agents``.
"""

from agents.checkpoint import load_checkpoint, save_checkpoint
from agents.config import VDNConfig
from agents.policy import GreedyPolicy
from agents.vdn import VDNLearner

__all__ = ["GreedyPolicy", "VDNConfig", "VDNLearner", "load_checkpoint", "save_checkpoint"]
