"""Where a learned agent leaves its demonstrator, round by round, and which of its features move it there.

The agent (each run of ``--runs GLOB``, checkpoints of ``train_agents.py``) plays whole episodes of each setting
(:data:`benchmarks.agent_study_settings.SETTINGS`) on validation seeds, in its own probing mode, and the reference
rule (``--reference NAME[:OPTION=VALUE,...]``, usually the agent's ``--vdn-demonstrator``) labels every round's
candidates as the demonstrations label them during training (:func:`agents.demonstrations.demonstrated_actions`
on the states the agent reached: DAgger's labelling, Ross et al., AISTATS 2011). Three Markdown tables:

1. **uploads per round**: a row per round, a column per setting: the agent's uploads, mean over runs x seeds,
   and in brackets the rule's on the same states;
2. **agreement** over the rounds of ``--rounds FIRST-LAST``: the share of the candidates the rule selects that the
   agent selects too, and of those it leaves out that the agent leaves out;
3. **feature substitution** over those rounds: the agent's uploads per round when one group of its observation
   features (:data:`FEATURE_GROUPS`) is replaced, candidate by candidate, by that group of a random candidate of
   the same round of the first setting (``trained``: the federation the agent was trained in), the rest of the
   state as reached. A group whose substitution brings a setting's uploads back to the first setting's is a shift
   that moves the agent; the first setting's own column is the control (replacing a group there breaks only its
   correlation with the rest of the state). It is a permutation-importance test across settings (the variable
   importance of Breiman's random forests, Machine Learning 45, 2001), on the agent's greedy action alone: no
   episode is played with the replaced features.

    python -m benchmarks.imitation_gap --runs 'runs/task100-np-val8-demo-k3/seed_*/best.pt' \\
        --reference stale-fastest:k=3 --settings trained 4x 8x --rounds 18-20    # docs/results/learned-agent.md
    python -m benchmarks.imitation_gap --quick                                   # CI size (seconds)

With ``--quick``, two runs of the main job are trained for 3 episodes in the CI-sized federation
(:data:`benchmarks.common.QUICK_FEDERATION`) unless ``OUT/quick_runs`` holds them.
"""

from __future__ import annotations

import sys
from pathlib import Path

if not __package__:  # run as a file, python benchmarks/NAME.py: import this checkout (repo root), as -m does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import argparse
import glob
from dataclasses import dataclass

import numpy as np

from agents.demonstrations import demonstrated_actions, make_demonstrator
from agents.policy import GreedyPolicy
from benchmarks.agent_study import train_quick_runs
from benchmarks.agent_study_groups import learner_config, shared_federation
from benchmarks.agent_study_settings import SETTINGS, setting_config
from fedenv.baselines.base import Policy
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation.compare import policy_config
from fedenv.evaluation.progress import progress_bar
from fedenv.evaluation.rollout import run_episode

VALIDATION_SEEDS = tuple(range(500, 508))
"""The default seeds: ``train_agents.py``'s validation seeds of the studies, never the held-out ones (1000 and up)."""
_HISTORY = ("probing_loss", "probe_latency_hist_", "upload_latency_hist_", "rounds_since_last_upload",
            "slowest_probe_latency")
FEATURE_GROUPS = {
    "history": _HISTORY,
    "global accuracy": ("global_accuracy",),
    "estimates and ranks": ("expected_round_latency", "expected_round_quantile", "probing_loss_quantile",
                            "probe_latency_quantile", "rounds_since_last_upload_quantile"),
    "data size": ("data_size",),
    "history + global accuracy": (*_HISTORY, "global_accuracy"),
    "all": ("",),
}
"""Substitution groups: ``group -> feature-name prefixes`` (a feature is in a group when its name starts with one,
or, for a prefix that names a feature exactly, is it: ``probing_loss`` is not ``probing_loss_quantile``).
``history`` is what a client reported when it last took part and how long ago; ``estimates and ranks`` the
server's per-client estimates and the candidates' ranks among the round's (``observation_context``,
``observation_estimates``); ``all`` every feature, so that column shows how far the first setting's states alone
go. A group with no feature in the agent's layout is left out of the table."""


@dataclass
class Round:
    """One round of one episode: ``run`` (index of the checkpoint), ``round`` (1-based), ``observations``
    ``(n, d)`` of the round's ``n`` candidates, the agent's ``actions`` ``(n,)`` and the rule's ``labels``
    ``(n,)`` (1: upload)."""

    run: int
    round: int
    observations: np.ndarray
    actions: np.ndarray
    labels: np.ndarray


class LabelledPlay(Policy):
    """Plays ``agent`` and records, each round, its candidates' observations, its actions and ``rule``'s labels
    (``rule`` is shown what was played, as a demonstrator is)."""

    def __init__(self, agent: GreedyPolicy, rule: Policy, run: int):
        self.agent, self.rule, self.run, self.name = agent, rule, run, agent.name
        self.probes = agent.probes
        self.rounds: list[Round] = []

    def reset(self, seed: int) -> None:
        self.agent.reset(seed)
        self.rule.reset(seed)
        self.round = 0

    def register_clients(self, profile_duration_s, probing):
        self.agent.register_clients(profile_duration_s, probing)
        self.rule.register_clients(profile_duration_s, probing)

    def act(self, observations, infos):
        self.round += 1
        chosen = self.agent.act(observations, infos)
        agents = list(observations)
        labels = demonstrated_actions(self.rule, agents, observations, infos)
        candidates = [i for i, agent in enumerate(agents) if observations[agent]["action_mask"][1]]
        self.rounds.append(Round(
            self.run, self.round, np.stack([observations[agents[i]]["observation"] for i in candidates]),
            np.array([chosen.get(agents[i], 0) for i in candidates]), labels[candidates]))
        return chosen

    def observe(self, infos):
        self.agent.observe(infos)
        self.rule.observe(infos)


def play(agents: list[GreedyPolicy], reference: str, settings: list[str], seeds: list[int],
         data_root: str | None = None) -> dict[str, list[Round]]:
    """``setting -> rounds`` of every run's episodes on ``seeds`` in that setting, labelled by ``reference``.

    Raises:
        ValueError: runs trained in different federations (:func:`benchmarks.agent_study_groups.shared_federation`),
            a setting that cannot be built (:func:`benchmarks.agent_study_settings.setting_config`) or a reference
            that cannot (:func:`agents.demonstrations.make_demonstrator`).
    """
    federation = shared_federation({"runs": agents})
    configs = {setting: setting_config(federation, setting, data_root) for setting in settings}
    played, envs = {}, {}
    bar = progress_bar(len(settings) * len(agents) * len(seeds), "imitation gap", "episode")
    for setting, config in configs.items():
        played[setting] = []
        for run, agent in enumerate(agents):
            env_config = policy_config(learner_config(config, agent), agent)
            key = env_config.to_json()
            if key not in envs:  # one env per configuration: the runs of a variant share it
                envs[key] = ClientSelectionEnv(env_config)
            env = envs[key]
            recorder = LabelledPlay(agent, make_demonstrator(reference, env_config), run)
            for seed in seeds:
                run_episode(env, recorder, seed)
                bar.update()
            played[setting] += recorder.rounds
    bar.close()
    return played


def group_columns(feature_names: list[str], prefixes: tuple[str, ...]) -> list[int]:
    """Indices of the features of ``feature_names`` in the group of ``prefixes`` (:data:`FEATURE_GROUPS`)."""
    exact = set(prefixes) & set(feature_names)
    return [i for i, name in enumerate(feature_names)
            if name in exact or any(name.startswith(p) and p not in exact for p in prefixes)]


def greedy_uploads(agent: GreedyPolicy, observations: np.ndarray) -> int:
    """How many of one round's candidates (``observations`` ``(n, d)``) ``agent`` selects."""
    names = [f"candidate_{i}" for i in range(len(observations))]
    mask = np.ones(2, dtype=np.int8)
    return sum(agent.act({name: {"observation": row, "action_mask": mask}
                          for name, row in zip(names, observations.astype(np.float32))}, {}).values())


def uploads_table(played: dict[str, list[Round]]) -> dict[str, dict[int, tuple[float, float]]]:
    """``setting -> round -> (agent's mean uploads, rule's mean uploads)`` over runs x seeds."""
    return {setting: {t: (float(np.mean([r.actions.sum() for r in rounds if r.round == t])),
                          float(np.mean([r.labels.sum() for r in rounds if r.round == t])))
                      for t in sorted({r.round for r in rounds})}
            for setting, rounds in played.items()}


def agreement(rounds: list[Round]) -> tuple[float, float]:
    """(share of the rule's selected candidates the agent selects, share of the rule's left-out candidates the
    agent leaves out) over ``rounds``; NaN where the rule selects (leaves out) none."""
    actions, labels = (np.concatenate([getattr(r, name) for r in rounds]) for name in ("actions", "labels"))
    def share(label):
        return float(np.mean(actions[labels == label] == label)) if np.any(labels == label) else float("nan")
    return share(1), share(0)


def substitution(played: dict[str, list[Round]], agents: list[GreedyPolicy], rounds: range,
                 seed: int = 0) -> dict[str, dict[str, float]]:
    """``group -> setting -> the agent's mean uploads per round`` over ``rounds`` with the group's features of
    each candidate replaced by those of a random candidate of the same round of the first setting (``none``:
    as played), every run with its own network.

    Raises:
        ValueError: no round of ``rounds`` was played.
    """
    donor_setting = next(iter(played))
    donors = {t: np.concatenate([r.observations for r in played[donor_setting] if r.round == t]) for t in rounds
              if any(r.round == t for r in played[donor_setting])}
    if not donors:
        raise ValueError(f"--rounds {rounds.start}-{rounds.stop - 1}: no such round was played")
    names = agents[0].feature_names
    table = {"none": {setting: float(np.mean([r.actions.sum() for r in all_rounds if r.round in donors]))
                      for setting, all_rounds in played.items()}}
    rng = np.random.default_rng(seed)
    for group, prefixes in FEATURE_GROUPS.items():
        columns = group_columns(names, prefixes)
        if not columns:
            continue
        table[group] = {}
        for setting, all_rounds in played.items():
            counts = []
            for r in (r for r in all_rounds if r.round in donors):
                replaced = r.observations.copy()
                drawn = donors[r.round][rng.integers(len(donors[r.round]), size=len(replaced))]
                replaced[:, columns] = drawn[:, columns]
                counts.append(greedy_uploads(agents[r.run], replaced))
            table[group][setting] = float(np.mean(counts))
    return table


def markdown(played: dict[str, list[Round]], agents: list[GreedyPolicy], rounds: range, seed: int = 0) -> str:
    """The three tables (module docstring) as Markdown."""
    settings = list(played)

    def header(first: str) -> list[str]:
        return [f"| {first} | " + " | ".join(settings) + " |", "|---" * (len(settings) + 1) + "|"]

    by_round = uploads_table(played)
    lines = ["Uploads per round: the agent's, mean over runs x seeds (the rule's on the same states):", "",
             *header("round")]
    for t in by_round[settings[0]]:
        lines.append(f"| {t} | " + " | ".join(
            f"{by_round[s][t][0]:.2f} ({by_round[s][t][1]:.2f})" if t in by_round[s] else "" for s in settings) + " |")
    lines += ["", f"Agreement with the rule, rounds {rounds.start}-{rounds.stop - 1}:", "", *header("share")]
    shares = {s: agreement([r for r in played[s] if r.round in rounds]) for s in settings}
    lines.append("| of the rule's selected, the agent selects | " + " | ".join(f"{shares[s][0]:.2f}" for s in settings)
                 + " |")
    lines.append("| of the rule's left out, the agent leaves out | " + " | ".join(f"{shares[s][1]:.2f}"
                                                                                 for s in settings) + " |")
    table = substitution(played, agents, rounds, seed)
    lines += ["", f"The agent's uploads per round, rounds {rounds.start}-{rounds.stop - 1}, with a feature group "
              f"replaced by the {settings[0]} setting's (none: as played):", "", *header("features replaced")]
    lines += [f"| {group} | " + " | ".join(f"{row[s]:.2f}" for s in settings) + " |" for group, row in table.items()]
    return "\n".join(lines)


def parse_rounds(text: str) -> range:
    """``FIRST-LAST`` (1-based, inclusive) -> ``range(FIRST, LAST + 1)``.

    Raises:
        ValueError: not two integers ``1 <= FIRST <= LAST``.
    """
    first, sep, last = text.partition("-")
    if not (sep and first.isdigit() and last.isdigit() and 1 <= int(first) <= int(last)):
        raise ValueError(f"--rounds {text!r}: need FIRST-LAST with 1 <= FIRST <= LAST, e.g. 18-20")
    return range(int(first), int(last) + 1)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", metavar="GLOB", help="checkpoints of one variant, one per training run")
    parser.add_argument("--reference", default="stale-fastest:k=3", metavar="POLICY[:OPTION=VALUE,...]",
                        help="the rule that labels the rounds (default: stale-fastest:k=3)")
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=["trained", "4x", "8x"],
                        metavar="SETTING", help="the first is the substitution's donor (default: trained 4x 8x)")
    parser.add_argument("--seeds", nargs="+", type=int, default=list(VALIDATION_SEEDS),
                        help="env seeds (default: 500-507, the studies' validation seeds)")
    parser.add_argument("--rounds", default="18-20", metavar="FIRST-LAST",
                        help="the rounds of the agreement and substitution tables (default: 18-20)")
    parser.add_argument("--substitution-seed", type=int, default=0, help="seed of the donors' draw (default: 0)")
    parser.add_argument("--data-root", help="folder of the datasets a setting reads (fmnist)")
    parser.add_argument("--out", default="results/imitation_gap", help="where --quick keeps its runs")
    parser.add_argument("--quick", action="store_true", help="CI size: two 3-episode runs, settings trained and "
                                                             "4x, seed 500, rounds 2-2")
    args = parser.parse_args(argv)
    if args.quick:
        paths = train_quick_runs(Path(args.out))["main-job"]
        args.settings, args.seeds, args.rounds = ["trained", "4x"], [500], "2-2"
        args.reference = "stale-fastest:k=1,last_rounds=1"
    elif args.runs is None:
        parser.error("give --runs GLOB (or --quick)")
    else:
        paths = sorted(glob.glob(args.runs))
        if not paths:
            parser.error(f"--runs {args.runs!r} matches no file")
    try:
        rounds = parse_rounds(args.rounds)
        agents = [GreedyPolicy.from_checkpoint(path) for path in paths]
        played = play(agents, args.reference, args.settings, args.seeds, args.data_root)
        text = markdown(played, agents, rounds, args.substitution_seed)
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    print(f"{len(paths)} runs x seeds {', '.join(map(str, args.seeds))}, rule {args.reference}:\n")
    print(text)
    return text


if __name__ == "__main__":
    main()
