"""TorchRL glue: the wrapped environment passes TorchRL's spec check and keeps every info key a learner may
read (all but the test accuracy, which goes to the reports)."""

import pytest

from fedenv.config import EnvConfig

TINY = EnvConfig(num_clients=3, clients_per_round=3, num_rounds=3, local_epochs=1, batch_size=64,
                 partition="iid", val_fraction=0.9)


def test_torchrl_wrapper_passes_check_env_specs_and_keeps_every_info_key_but_the_test_accuracy():
    from torchrl.envs.utils import check_env_specs

    from fedenv.env import INFO_KEYS
    from fedenv.integrations.torchrl import torchrl_env

    env = torchrl_env(TINY, seed=0)
    check_env_specs(env)
    assert set(env.observation_spec["agents", "info"].keys()) == set(INFO_KEYS) - {"test_accuracy"}
    rollout = env.rollout(3)
    assert rollout["next", "agents", "info", "validation_accuracy"].shape == (3, 3)
    assert rollout["next", "truncated"][-1].all()


def test_episode_end_keeps_the_finished_rounds_infos():
    from fedenv.env import ClientSelectionEnv
    from fedenv.integrations.torchrl import torchrl_env

    env = torchrl_env(TINY, seed=3)
    rollout = env.rollout(TINY.num_rounds + 1, policy=lambda td: td.set(("agents", "action"), td[
        "agents", "action_mask"][..., 1].long()), break_when_any_done=False)
    plain = ClientSelectionEnv(TINY)
    plain.reset(seed=3)
    plain.reset()  # TorchRL seeds with a reset, and its rollout resets again: the seed's second episode
    for _ in range(TINY.num_rounds):
        _, _, _, _, infos = plain.step({agent: 1 for agent in plain.agents})
    last = rollout[TINY.num_rounds - 1]["next", "agents", "info"]
    assert last["round"].tolist() == [TINY.num_rounds] * 3
    assert last["validation_accuracy"][0].item() == pytest.approx(infos["client_0"]["validation_accuracy"], abs=1e-6)
    assert env._env.episode_reports[-1]["test_accuracy"] == pytest.approx(infos["client_0"]["test_accuracy"], abs=1e-6)
    assert rollout[TINY.num_rounds]["agents", "info", "round"].tolist() == [0, 0, 0]  # the next episode's reset
