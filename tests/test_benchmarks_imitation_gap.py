"""benchmarks/imitation_gap.py: the rounds are the agent's own episodes with the rule's labels on them, the
agreement and substitution tables are worked by hand on made-up rounds, and bad input is refused naming it."""

import dataclasses

import numpy as np
import pytest

from agents.policy import GreedyPolicy
from benchmarks import imitation_gap
from benchmarks.agent_study import train_quick_runs
from benchmarks.agent_study_settings import setting_config
from benchmarks.common import QUICK_FEDERATION
from benchmarks.imitation_gap import Round
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.evaluation.rollout import run_episode


@pytest.fixture(scope="module")
def quick_agents(tmp_path_factory):
    paths = train_quick_runs(tmp_path_factory.mktemp("imitation_gap"))["main-job"]
    return [GreedyPolicy.from_checkpoint(path) for path in paths]


def test_the_agent_plays_as_the_plain_loop_plays_it_and_the_rule_labels_as_worked_by_hand(quick_agents):
    played = imitation_gap.play(quick_agents, "stale-fastest:k=1,last_rounds=1", ["trained", "4x"], [500, 501])
    for setting, rounds in played.items():
        config = setting_config(EnvConfig(**QUICK_FEDERATION), setting)
        for run, agent in enumerate(quick_agents):
            env = ClientSelectionEnv(dataclasses.replace(config, probing=agent.probes))
            for seed_index, seed in enumerate((500, 501)):
                alone = run_episode(env, agent, seed).num_selected
                mine = [r for r in rounds if r.run == run][2 * seed_index: 2 * seed_index + 2]
                assert [r.round for r in mine] == [1, 2]
                assert [int(r.actions.sum()) for r in mine] == alone
                # 3 candidates: k = 1 in the first round, every candidate but the slowest (drop = 1) in the last
                assert [int(r.labels.sum()) for r in mine] == [1, 2]
                assert all(r.observations.shape == (3, len(agent.feature_names)) for r in mine)


class ThresholdAgent:
    """Uploads a candidate whose feature ``x`` exceeds 0.5."""

    feature_names = ["x", "x_quantile", "shared"]

    def act(self, observations, infos):
        return {name: int(o["observation"][0] > 0.5) for name, o in observations.items()}


def made_up_rounds():
    return {"trained": [Round(0, 1, np.array([[0.9, 0, 1], [0.8, 0, 1]]), np.array([1, 1]), np.array([1, 0]))],
            "8x": [Round(0, 1, np.array([[0.1, 0, 1], [0.2, 0, 1], [0.7, 0, 1]]), np.array([0, 0, 1]),
                         np.array([1, 1, 0]))]}


def test_substitution_and_agreement_are_worked_by_hand(monkeypatch):
    monkeypatch.setattr(imitation_gap, "FEATURE_GROUPS", {"x": ("x",), "shared": ("shared",), "nothing": ("y",)})
    table = imitation_gap.substitution(made_up_rounds(), [ThresholdAgent()], range(1, 2))
    # as played: 2 of 2 in trained, 1 of 3 at 8x; every donor's x exceeds 0.5, so with x replaced all upload
    assert table == {"none": {"trained": 2.0, "8x": 1.0}, "x": {"trained": 2.0, "8x": 3.0},
                     "shared": {"trained": 2.0, "8x": 1.0}}  # a group with no feature is left out
    # trained: the rule selects 1, the agent too (1/1); leaves out 1, the agent does not (0/1)
    assert imitation_gap.agreement(made_up_rounds()["trained"]) == (1.0, 0.0)
    # 8x: of the rule's 2 selected the agent selects none; of its 1 left out the agent selects it
    assert imitation_gap.agreement(made_up_rounds()["8x"]) == (0.0, 0.0)
    with pytest.raises(ValueError, match="--rounds 4-5: no such round"):
        imitation_gap.substitution(made_up_rounds(), [ThresholdAgent()], range(4, 6))


def test_a_group_takes_exact_names_and_prefixes():
    names = ["probing_loss", "probing_loss_quantile", "probe_latency_hist_0", "probe_latency_hist_1", "data_size"]
    assert imitation_gap.group_columns(names, ("probing_loss", "probe_latency_hist_")) == [0, 2, 3]
    assert imitation_gap.group_columns(names, ("",)) == [0, 1, 2, 3, 4]


def test_the_quick_run_prints_the_three_tables(tmp_path, capsys):
    text = imitation_gap.main(["--quick", "--out", str(tmp_path)])
    assert "| round | trained | 4x |" in text and "| 2 | " in text
    assert "| of the rule's selected, the agent selects | " in text
    assert "| none | " in text and "| all | " in text
    assert text in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    ([], "give --runs GLOB"),
    (["--runs", "no/such/*.pt"], "matches no file"),
])
def test_bad_input_is_refused_naming_it(argv, message, capsys):
    with pytest.raises(SystemExit):
        imitation_gap.main(argv)
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("text", ["3-1", "0-2", "18", "a-b"])
def test_bad_rounds_are_refused_naming_them(text):
    with pytest.raises(ValueError, match=f"--rounds '{text}'"):
        imitation_gap.parse_rounds(text)
    assert imitation_gap.parse_rounds("18-20") == range(18, 21)
