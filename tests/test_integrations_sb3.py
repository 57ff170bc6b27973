"""Stable-Baselines3 glue: the vector env trains PPO, reports truncation and episode statistics, and keeps the
action mask for MaskablePPO."""

import numpy as np

from fedenv.config import EnvConfig
from tests.helpers import strict_json_loads

TINY = EnvConfig(num_clients=3, clients_per_round=3, num_rounds=3, local_epochs=1, batch_size=64,
                 partition="iid", val_fraction=0.9)


def test_c10_ppo_with_seed_truncation_flag_and_episode_statistics(tmp_path):
    from stable_baselines3 import PPO
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from fedenv.integrations.sb3 import sb3_vec_env

    venv = sb3_vec_env(TINY, num_envs=2)
    assert venv.num_envs == 6
    model = PPO("MlpPolicy", venv, seed=0, n_steps=9, batch_size=18, n_epochs=1, tensorboard_log=str(tmp_path))
    model.learn(total_timesteps=216)  # 12 episodes of each federation: a few hundred agent steps
    run = next(tmp_path.iterdir())
    accumulator = EventAccumulator(str(run))
    accumulator.Reload()
    assert "rollout/ep_rew_mean" in accumulator.Tags()["scalars"]
    venv.seed(5)
    first = venv.reset()
    venv.seed(5)
    assert np.array_equal(first, venv.reset())  # seeding reaches the federations
    for round_index in range(3):
        _, rewards, dones, infos = venv.step(np.ones(6, dtype=np.int64))
        assert dones.all() == (round_index == 2)
    assert all(info["TimeLimit.truncated"] is True and "terminal_observation" in info for info in infos)
    # one team reward per federation
    assert np.allclose(rewards[:3], rewards[0]) and np.allclose(rewards[3:], rewards[3])


def test_flat_observation_keeps_the_mask_for_maskable_ppo():
    from fedenv.integrations.sb3 import sb3_vec_env

    venv = sb3_vec_env(TINY.__class__(**{**TINY.to_dict(), "clients_per_round": 2}), num_envs=1)
    observations = venv.reset()
    masks = venv.env_method("action_masks")
    assert np.array_equal(np.stack(masks), observations[:, -2:] > 0.5)
    assert sum(m[1] for m in masks) == 2 and all(m[0] for m in masks)


def plain_episode(config, seed, rounds):
    """A plain env's observations at reset and infos after ``rounds`` steps with every action 1."""
    from fedenv.env import ClientSelectionEnv
    from fedenv.integrations.flat import flatten_observations

    env = ClientSelectionEnv(config)
    observations, infos = env.reset(seed=seed)
    start = np.stack(list(flatten_observations(observations, "append").values()))
    for _ in range(rounds):
        _, _, _, _, infos = env.step({agent: 1 for agent in env.agents})
    return start, infos


def test_copies_of_the_vec_env_play_different_federations():
    from fedenv.integrations.sb3 import sb3_vec_env
    from fedenv.vector import federation_seeds

    venv = sb3_vec_env(TINY, num_envs=2)
    unseeded = venv.reset()  # PPO(seed=None) resets without a seed
    assert not np.allclose(unseeded[:3], unseeded[3:])
    venv.seed(7)
    seeded = venv.reset()
    for k, seed in enumerate(federation_seeds(7, 2)):
        assert np.allclose(seeded[3 * k:3 * (k + 1)], plain_episode(TINY, seed, 0)[0], atol=1e-6)


def test_last_step_infos_are_the_finished_rounds_and_reset_infos_are_kept_apart():
    from fedenv.integrations.sb3 import sb3_vec_env
    from fedenv.vector import federation_seeds

    venv = sb3_vec_env(TINY, num_envs=1)
    venv.seed(4)
    venv.reset()
    for _ in range(TINY.num_rounds):
        _, _, dones, infos = venv.step(np.ones(3, dtype=np.int64))
    assert dones.all()
    _, expected = plain_episode(TINY, federation_seeds(4, 1)[0], TINY.num_rounds)
    for i, agent in enumerate(("client_0", "client_1", "client_2")):
        assert infos[i]["round"] == TINY.num_rounds
        assert infos[i]["validation_accuracy"] == expected[agent]["validation_accuracy"]
        assert "test_accuracy" not in infos[i]  # for reports only: kept apart
        assert infos[i]["wall_clock_s"] == expected[agent]["wall_clock_s"]
        assert venv.unwrapped.reset_infos[i]["round"] == 0
    assert venv.unwrapped.episode_reports == [[{"test_accuracy": expected["client_0"]["test_accuracy"]}]]


def decision_points(config, seeds, rounds):
    """The observations of a plain env at reset and after each of ``rounds - 1`` rounds with every action 1."""
    from fedenv.env import ClientSelectionEnv

    env = ClientSelectionEnv(config)
    points = []
    for seed in seeds:
        observations, _ = env.reset(seed=seed)
        points.append(observations)
        for _ in range(rounds - 1):
            observations, *_ = env.step({agent: 1 for agent in env.agents})
            points.append(observations)
    return points


def test_a_policy_trained_under_vecnormalize_decides_as_trained_after_save_and_load(tmp_path):
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import VecNormalize

    from fedenv.integrations.flat import flatten_observations
    from fedenv.integrations.sb3 import SB3Policy, sb3_vec_env

    venv = VecNormalize(sb3_vec_env(TINY, num_envs=1), norm_reward=False)
    model = PPO("MlpPolicy", venv, seed=0, n_steps=9, batch_size=9, n_epochs=1)
    model.learn(total_timesteps=108)
    SB3Policy(model, "PPO", "append", TINY).save(tmp_path / "ppo")
    assert strict_json_loads((tmp_path / "ppo" / "policy.json").read_text())["obs_normalization"] == "vecnormalize.pkl"
    loaded = SB3Policy.load(tmp_path / "ppo")
    trained, from_raw, after_load = [], [], []
    for observations in decision_points(TINY, seeds=range(4), rounds=3):  # 4 x 3 rounds x 3 clients
        flat = flatten_observations(observations, "append")
        batch = np.stack([flat[agent] for agent in observations])
        trained += model.predict(venv.normalize_obs(batch), deterministic=True)[0].tolist()  # as it trained
        from_raw += model.predict(batch, deterministic=True)[0].tolist()
        after_load += [loaded.act(observations, {})[agent] for agent in observations]
    assert len(trained) == 36
    assert from_raw != trained  # the statistics matter for this model: without them it decides otherwise
    assert after_load == trained


def test_progress_callback_prints_each_episodes_return_and_reported_test_accuracy(capsys):
    from stable_baselines3 import PPO

    from fedenv.integrations.sb3 import sb3_progress_callback, sb3_vec_env

    venv = sb3_vec_env(TINY, num_envs=1)
    model = PPO("MlpPolicy", venv, seed=0, n_steps=TINY.num_rounds, batch_size=9, n_epochs=1, device="cpu")
    model.learn(2 * TINY.num_rounds * venv.num_envs, callback=sb3_progress_callback(2, every=1))
    lines = capsys.readouterr().out.splitlines()
    reports = venv.get_attr("episode_reports", [0])[0][0]
    assert len(lines) == len(reports) == 2
    for k, (line, report) in enumerate(zip(lines, reports, strict=True)):
        assert line.startswith(f"sb3: episode {k + 1}/2, team return ")
        assert line.endswith(f", test accuracy {report['test_accuracy']:.3f} (training, exploring)")
