"""TorchRL glue: the wrapped environment passes TorchRL's spec check and keeps every info key."""

from fedenv.config import EnvConfig

TINY = EnvConfig(num_clients=3, clients_per_round=3, num_rounds=3, local_epochs=1, batch_size=64,
                 partition="iid", val_fraction=0.9)


def test_torchrl_wrapper_passes_check_env_specs_and_keeps_every_info_key():
    from torchrl.envs.utils import check_env_specs

    from fedenv.env import INFO_KEYS
    from fedenv.integrations.torchrl import torchrl_env

    env = torchrl_env(TINY, seed=0)
    check_env_specs(env)
    assert set(env.observation_spec["agents", "info"].keys()) == set(INFO_KEYS)
    rollout = env.rollout(3)
    assert rollout["next", "agents", "info", "accuracy"].shape == (3, 3)
    assert rollout["next", "truncated"][-1].all()
