"""The BenchMARL task builds the TorchRL environment from EnvConfig fields."""

import pytest

pytest.importorskip("benchmarl")
torch = pytest.importorskip("torch")


def test_task_builds_the_environment_with_one_group_and_the_config_fields():
    from fedenv.integrations.benchmarl import FedEnvTask

    task = FedEnvTask.CLIENT_SELECTION.get_task(config={"num_clients": 3, "clients_per_round": 3, "num_rounds": 2,
                                                        "device": "cpu"})
    env = task.get_env_fun(num_envs=1, continuous_actions=False, seed=0, device="cpu")()
    assert task.group_map(env) == {"agents": ["client_0", "client_1", "client_2"]}
    assert task.max_steps(env) == 2
    assert set(task.observation_spec(env)["agents"].keys()) == {"observation"}
    assert "state" in task.state_spec(env)
    assert not task.supports_continuous_actions() and task.supports_discrete_actions()


def test_serial_env_copies_play_different_reproducible_federations():
    from torchrl.envs import SerialEnv

    from fedenv.integrations.benchmarl import FedEnvTask

    task = FedEnvTask.CLIENT_SELECTION.get_task(config={"num_clients": 3, "clients_per_round": 3, "num_rounds": 2,
                                                        "device": "cpu"})

    def first_observations(seed):
        env = SerialEnv(2, task.get_env_fun(num_envs=2, continuous_actions=False, seed=seed, device="cpu"))
        return env.reset()["agents", "observation", "observation"]

    observations = first_observations(0)
    assert not torch.allclose(observations[0], observations[1])
    assert torch.equal(observations, first_observations(0))


def test_serial_env_step_infos_at_the_episode_boundary_are_the_finished_rounds():
    from torchrl.envs import SerialEnv

    from fedenv.env import ClientSelectionEnv
    from fedenv.integrations.benchmarl import FedEnvTask
    from fedenv.vector import federation_seeds

    config = {"num_clients": 3, "clients_per_round": 3, "num_rounds": 2, "device": "cpu"}
    task = FedEnvTask.CLIENT_SELECTION.get_task(config=config)
    env = SerialEnv(2, task.get_env_fun(num_envs=2, continuous_actions=False, seed=5, device="cpu"))
    rollout = env.rollout(3, policy=lambda td: td.set(("agents", "action"), torch.ones_like(
        td["agents", "action_mask"][..., 1]).long()), break_when_any_done=False)
    info = rollout[:, 1]["next", "agents", "info"]
    # SerialEnv calls the env function once for its metadata before building its two copies: calls 1 and 2
    for k, seed in enumerate(federation_seeds(5, 3)[1:]):
        plain = ClientSelectionEnv(**config)
        plain.reset(seed=seed)
        plain.reset()  # TorchRL seeds with a reset, and its rollout resets again: the seed's second episode
        for _ in range(2):
            _, _, _, _, infos = plain.step({agent: 1 for agent in plain.agents})
        assert info["round"][k].tolist() == [2, 2, 2]
        assert info["validation_accuracy"][k, 0].item() == pytest.approx(infos["client_0"]["validation_accuracy"],
                                                                          abs=1e-6)
