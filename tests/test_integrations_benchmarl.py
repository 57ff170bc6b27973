"""The BenchMARL task builds the TorchRL environment from EnvConfig fields."""

import pytest

pytest.importorskip("benchmarl")


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
