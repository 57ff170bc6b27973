"""VDN hyperparameters: :class:`VDNConfig`, one field per ``--vdn-*`` flag of ``train_agents.py``.

Fields take Stable-Baselines3 DQN's names where the meaning is the same (``learning_rate``, ``buffer_size``,
``learning_starts``, ``batch_size``, ``gamma``, ``train_freq``, ``gradient_steps``, ``target_update_interval``,
``exploration_*``, ``max_grad_norm``; Raffin et al., JMLR 22(268) 2021, ``stable_baselines3.dqn.DQN``).
Configurations written before that rename (checkpoints, ``config.json``) still load: :data:`RENAMED`.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from agents.mixers import MIXERS
from agents.networks import Q_NETWORKS
from fedenv.baselines import check_policy_options, parse_policy_spec
from fedenv.names import check_known
from fedenv.plain import infinities_from_json, plain_fields
from fedenv.registry import POLICIES

RENAMED = {
    "lr": "learning_rate",
    "train_interval": "train_freq",
    "epsilon_start": "exploration_initial_eps",
    "epsilon_end": "exploration_final_eps",
    "epsilon_fraction": "exploration_fraction",
}
"""Field names used before the Stable-Baselines3 rename -> their names now (read by :meth:`VDNConfig.from_dict`)."""


@dataclass
class VDNConfig:
    """VDN hyperparameters; each field's ``metadata["help"]`` gives its unit and where its default comes from.

    Values are converted to plain Python types on construction (numpy scalars and 0-d arrays, as parameter
    sweeps produce, become ``int``/``float``/``bool``; ``hidden`` becomes a tuple), so a configuration
    always pickles into a checkpoint that ``torch.load(weights_only=True)`` reads back.

    Raises:
        ValueError: a value of the wrong type (names the field and the type expected). Ranges are checked
            by :meth:`validate`.
    """

    hidden: tuple[int, ...] = field(default=(64, 64), metadata={"help": (
        "hidden layer widths of the shared Q-network (our default). Not SB3's name: SB3 sets widths "
        "through policy_kwargs=dict(net_arch=[...]), not a field of DQN")})
    learning_rate: float = field(default=5e-4, metadata={"help": (
        "Adam learning rate (PyMARL's default for VDN, Samvelyan et al. 2019, there with RMSprop)")})
    gamma: float = field(default=1.0, metadata={"help": (
        "discount per FL round, in [0, 1] (our default: 1, undiscounted, as an episode is a fixed budget "
        "of rounds and the team return is the plain sum of rewards)")})
    n_step: int = field(default=3, metadata={"help": (
        "rewards summed per TD target, n of n-step returns (our default). Not SB3's n_steps, which is the "
        "rollout length of PPO/A2C")})
    batch_size: int = field(default=64, metadata={"help": "transitions per gradient step (our default)"})
    buffer_size: int = field(default=50_000, metadata={"help": "replay capacity in transitions (our default)"})
    learning_starts: int = field(default=200, metadata={"help": (
        "environment steps (FL rounds, all federations together) before the first gradient step (our default)")})
    train_freq: int = field(default=1, metadata={"help": (
        "environment steps between training phases (our default; SB3's train_freq in steps)")})
    gradient_steps: int = field(default=4, metadata={"help": "gradient steps per training phase (our default)"})
    target_update_interval: int = field(default=200, metadata={"help": (
        "gradient steps between hard target-network updates (our default; SB3 counts environment steps)")})
    exploration_initial_eps: float = field(default=1.0, metadata={"help": (
        "epsilon at the start of the run, in [0, 1] (SB3's default)")})
    exploration_final_eps: float = field(default=0.05, metadata={"help": (
        "epsilon after the annealing, in [0, 1] (SB3's default)")})
    exploration_fraction: float = field(default=0.5, metadata={"help": (
        "fraction of the run over which epsilon anneals linearly, in [0, 1] (our default). Progress is "
        "counted by episode: round r of episode e is step e * num_rounds + r of episodes * num_rounds, so "
        "episodes that end early (target_accuracy) still advance the schedule by a whole episode")})
    exploration_uploads: tuple[int, ...] = field(default=(), metadata={"help": (
        "K L: an exploring candidate uploads with probability min(1, K / candidates) in each round but the "
        "last L and always in the last L, so that exploration plays the open-loop schedule 'K random, all "
        "last L' (benchmarks/schedules.py) in expectation; empty (the default): a fair coin, as epsilon-greedy "
        "DQN. Guided exploration after learning from demonstrations (Hester et al., AAAI 2018), without "
        "their supervised loss. Not in SB3's DQN")})
    max_grad_norm: float = field(default=10.0, metadata={"help": (
        "gradient-norm clip, > 0 (SB3's and PyMARL's default)")})
    double_q: bool = field(default=True, metadata={"help": (
        "double-Q target: the online network's argmax, valued by the target network (van Hasselt et al., "
        "AAAI 2016; our default). Not in SB3's DQN")})
    reward_scale: float = field(default=10.0, metadata={"help": (
        "multiplies rewards inside the learner, > 0; Q values are in scaled units (our default). Not in SB3")})
    q_network: str = field(default="mlp", metadata={"help": (
        "the shared Q-network: mlp, each agent's values from its own observation (FedMarl's; the default), or "
        "deepsets, from its own observation and a mean- and max-pooled embedding of the round's candidates "
        "(Zaheer et al. 2017), or attention, from a self-attention block over the round's candidates (Lee et "
        "al. 2019; agents/networks.py); for both, hidden gives the embedding width, then the head's")})
    input_features: tuple[str, ...] = field(default=(), metadata={"help": (
        "the observation features the Q-network reads, by name (the env's feature_names, e.g. round_fraction "
        "expected_round_quantile); empty (the default): all of them. An ablation of the agent's inputs: the "
        "environment, the replay buffer and the mixers' state keep the whole observation (agents/networks.py)")})
    mixer: str = field(default="vdn", metadata={"help": (
        "how the candidates' values combine into Q_tot: vdn, their sum (Sunehag et al. 2018; the default), "
        "or qmix, monotonic mixing conditioned on the round's pooled state (Rashid et al. 2018), or "
        "straggler, their sum minus a learned cost of the costliest uploading client, acting by the exact "
        "joint argmax (agents/mixers.py)")})
    mixing_embed_dim: int = field(default=32, metadata={"help": (
        "width of the qmix mixer's hidden layer and of the straggler cost network's, >= 1 (PyMARL's "
        "mixing_embed_dim; unused by vdn)")})
    demonstrator: str = field(default="", metadata={"help": (
        "a registered fixed policy (fedenv.registry.POLICIES), NAME or NAME:OPTION=VALUE,... (e.g. stale-fastest "
        "or stale-fastest:k=2; fedenv.baselines.parse_policy_spec), that labels every training "
        "state with its joint action: an exploring candidate plays the demonstrator's action instead of a coin "
        "flip (so while epsilon is 1 the episodes are the demonstrator's), and the loss adds DQfD's large-margin "
        "supervised term on the labelled candidates (Hester et al., AAAI 2018, Eq. 2; labels on the learner's "
        "own states as in DAgger, Ross et al., AISTATS 2011; agents/demonstrations.py); empty (the default): none")})
    demonstration_margin: float = field(default=0.8, metadata={"help": (
        "DQfD's margin l(a_E, a) for an action other than the demonstrator's, >= 0, in Q's scaled units "
        "(Hester et al.'s 0.8); read only with a demonstrator (refused without one)")})
    demonstration_weight: float = field(default=1.0, metadata={"help": (
        "weight lambda_2 of the supervised margin term beside the TD loss, >= 0 (Hester et al.'s 1.0); read "
        "only with a demonstrator (refused without one)")})
    demonstration_final_weight: float | None = field(default=None, metadata={"help": (
        "the margin term's weight at the end of exploration's annealing, finite and >= 0: it anneals linearly "
        "from --vdn-demonstration-weight to this over the --vdn-exploration-fraction of the run in which epsilon "
        "anneals, then stays; each gradient step takes the weight of the episode whose environment step it "
        "follows (kickstarting's fading teacher, Schmitt et al., arXiv 1803.03835, 2018: the learner may then "
        "leave its demonstrator where its TD values say so); unset (the default): --vdn-demonstration-weight "
        "throughout (DQfD's constant weight); read only with a demonstrator (refused without one)")})
    prioritized_replay: bool = field(default=False, metadata={"help": (
        "proportional prioritised replay (Schaul et al., ICLR 2016; agents/replay.py); off by default: "
        "uniform replay. The prioritized_replay_* names are OpenAI Baselines' and RLlib's; SB3's DQN has none")})
    prioritized_replay_alpha: float = field(default=0.6, metadata={"help": (
        "priority exponent alpha in [0, 1] (Schaul et al.'s proportional variant: 0.6)")})
    prioritized_replay_beta: float = field(default=0.4, metadata={"help": (
        "importance-sampling exponent beta in [0, 1], constant (Schaul et al.'s start value: 0.4)")})
    prioritized_replay_eps: float = field(default=1e-6, metadata={"help": (
        "priority floor added to |TD error|, > 0 (SB3's and OpenAI Baselines' 1e-6)")})

    def __post_init__(self):
        plain_fields(self, prefix="vdn ")

    def validate(self) -> VDNConfig:
        """Check every field's range; raise ``ValueError`` naming the field, its value and what is allowed."""
        check_known(self.mixer, MIXERS, "vdn mixer")
        check_known(self.q_network, Q_NETWORKS, "vdn q_network")
        self._validate_demonstration()
        for name in ("n_step", "batch_size", "buffer_size", "train_freq", "gradient_steps",
                     "target_update_interval", "mixing_embed_dim"):
            if getattr(self, name) < 1:
                raise ValueError(f"vdn {name}={getattr(self, name)!r} must be an integer >= 1")
        if self.exploration_uploads and (len(self.exploration_uploads) != 2 or min(self.exploration_uploads) < 0):
            raise ValueError(f"vdn exploration_uploads={self.exploration_uploads!r} must be empty (a fair coin) or "
                             "two integers K L >= 0 (K random uploads per round, all in the last L rounds)")
        if len(set(self.input_features)) != len(self.input_features) or not all(self.input_features):
            raise ValueError(f"vdn input_features={self.input_features!r} must be distinct, non-empty feature names")
        if not self.hidden or any(h < 1 for h in self.hidden):
            raise ValueError(f"vdn hidden={self.hidden!r} must be one or more positive layer widths")
        if self.learning_starts < 0:
            raise ValueError(f"vdn learning_starts={self.learning_starts!r} must be an integer >= 0")
        for name in ("gamma", "exploration_initial_eps", "exploration_final_eps", "exploration_fraction",
                     "prioritized_replay_alpha", "prioritized_replay_beta"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"vdn {name}={getattr(self, name)!r} must be in [0, 1]")
        for name in DEMONSTRATION_OPTIONS:
            value = getattr(self, name)  # None only where the type allows it (the final weight)
            if value is not None and not 0 <= value < math.inf:
                raise ValueError(f"vdn {name}={value!r} must be finite and >= 0")
        for name in ("learning_rate", "max_grad_norm", "reward_scale", "prioritized_replay_eps"):
            if not getattr(self, name) > 0:
                raise ValueError(f"vdn {name}={getattr(self, name)!r} must be > 0")
        return self

    def _validate_demonstration(self) -> None:
        """:meth:`validate`'s checks of ``demonstrator`` and of the options read only with one."""
        if self.demonstrator:
            # the name and the option names; the values are checked where the federation's rounds are known
            # (agents.demonstrations.make_demonstrator, when the trainer starts)
            name, options = parse_policy_spec(self.demonstrator)  # a malformed option: its error names the spec
            check_known(name, POLICIES, "vdn demonstrator")
            try:
                check_policy_options(name, options)
            except ValueError as error:
                raise ValueError(f"vdn demonstrator={self.demonstrator!r}: {error}") from None
            if self.exploration_uploads:
                raise ValueError(f"vdn demonstrator={self.demonstrator!r} and exploration_uploads="
                                 f"{self.exploration_uploads!r}: with a demonstrator an exploring candidate plays "
                                 "the demonstrator's action, so exploration_uploads would be ignored; set one of them")
        else:
            default = VDNConfig()
            for name in DEMONSTRATION_OPTIONS:
                if getattr(self, name) != getattr(default, name):
                    flag_value = "none" if getattr(default, name) is None else repr(getattr(default, name))
                    raise ValueError(f"vdn {name}={getattr(self, name)!r} is read only with a demonstrator, and vdn "
                                     f"demonstrator is empty: set one, or leave {name} at its default "
                                     f"{getattr(default, name)!r} (on the command line: --vdn-"
                                     f"{name.replace('_', '-')} {flag_value})")

    def to_dict(self) -> dict:
        """Plain JSON-ready values (``hidden``, ``exploration_uploads`` and ``input_features`` as lists)."""
        out = dataclasses.asdict(self)
        return {name: list(value) if isinstance(value, tuple) else value for name, value in out.items()}

    @classmethod
    def from_dict(cls, values: dict) -> VDNConfig:
        """Inverse of :meth:`to_dict` (or of its JSON: ``null`` in a float field is infinity,
        :func:`fedenv.plain.infinities_from_json`); names from before the rename (:data:`RENAMED`) are read as
        the new names, and without a ``demonstrator`` the ``demonstration_*`` options as their defaults (a file
        from before :meth:`validate` refused them there, where they were read by nothing, still loads, resumes
        and fine-tunes).

        Raises:
            ValueError: an unknown field (names it and lists the allowed ones), a field given under both its
                old and new name, or a value of the wrong type.
        """
        known = {f.name for f in dataclasses.fields(cls)}
        renamed = {}
        for key, value in values.items():
            name = RENAMED.get(key, key)
            if name in renamed:
                raise ValueError(f"VDN field {name!r} is given twice (also as its old name {key!r})")
            renamed[name] = value
        unknown = sorted(set(renamed) - known)
        if unknown:
            raise ValueError(f"unknown VDNConfig fields {unknown}; allowed: {', '.join(sorted(known))}")
        config = cls(**infinities_from_json(cls, renamed))
        if config.demonstrator:
            return config
        default = cls()
        return dataclasses.replace(config, **{name: getattr(default, name) for name in DEMONSTRATION_OPTIONS})


DEMONSTRATION_OPTIONS = tuple(f.name for f in dataclasses.fields(VDNConfig) if f.name.startswith("demonstration_"))
"""The options read only with a ``demonstrator`` (``demonstration_margin``, ``demonstration_weight``,
``demonstration_final_weight``)."""
