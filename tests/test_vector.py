import numpy as np
import pytest
import torch

import fedenv
from agents.config import VDNConfig
from agents.trainer import train_vdn
from fedenv.config import EnvConfig
from fedenv.vector import VectorClientSelectionEnv
from tests.helpers import tiny_config

CONFIG = EnvConfig(num_clients=5, clients_per_round=4, num_rounds=4, local_epochs=2, momentum=0.5, fedprox_mu=0.01)


def actions_for(agents, round_index, offset):
    return {a: int((i + round_index + offset) % 2 == 0) for i, a in enumerate(agents)}


# ResNet-18: BatchNorm buffers per client and per federation; tiny clients (xclass gives 8 samples each) and
# a validation split of 80 samples (2 % of each class; scored every round, it costs the most with ResNet-18)
BATCHNORM = tiny_config(model="resnet18", local_epochs=2, batch_size=8, partition="xclass",
                        partition_options={"xclass": {"noniid_clients": 1, "samples": 8}},
                        test_samples=20, val_fraction=0.02, momentum=0.5, fedprox_mu=0.01)


@pytest.mark.parametrize("config, seeds", [(CONFIG, [3, 11, 29]), (BATCHNORM, [3, 11])], ids=["mlp", "resnet18"])
def test_vectorised_federations_equal_separate_envs(config, seeds):
    vector = VectorClientSelectionEnv(config, num_envs=len(seeds))
    together, weights = [vector.reset(seeds)], []
    for t in range(config.num_rounds):
        together.append(vector.step([actions_for(vector.possible_agents, t, k) for k in range(len(seeds))]))
        weights.append([{name: tensor.clone() for name, tensor in env.simulator.federation.global_params.items()}
                        for env in vector.envs])
    for k, seed in enumerate(seeds):
        alone = fedenv.parallel_env(config)
        observations, infos = alone.reset(seed=seed)
        assert infos == together[0][k][1]
        for name in observations:
            assert np.allclose(observations[name]["observation"], together[0][k][0][name]["observation"], atol=1e-6)
        for t in range(config.num_rounds):
            output = alone.step(actions_for(alone.possible_agents, t, k))
            joint = together[t + 1][k]
            assert output[1]["client_0"] == pytest.approx(joint[1]["client_0"], abs=1e-9)
            assert output[2] == joint[2] and output[3] == joint[3]
            for name in output[0]:
                assert np.allclose(output[0][name]["observation"], joint[0][name]["observation"], atol=1e-6)
                assert output[4][name] == pytest.approx(joint[4][name])
            # float32: a different number of clients changes the convolutions' summation order, so after the
            # first round the global weights differ by rounding only (measured: under 1e-8). In later rounds
            # BatchNorm over 8-sample batches amplifies that in ResNet-18's weights (about 0.3 in size; after
            # two rounds measured 5e-5 on one machine and 5e-4 on another, whose kernels round differently)
            tolerance = 1e-6 if config.model == "mlp" or t == 0 else 2e-3
            for name, tensor in alone.simulator.federation.global_params.items():
                assert torch.allclose(tensor, weights[t][k][name], atol=tolerance), (t, name)
        for name, tensor in alone.simulator.federation.global_buffers.items():
            assert torch.allclose(tensor.double(), vector.envs[k].simulator.federation.global_buffers[name].double(),
                                  atol=tolerance), name
        if config.model == "resnet18":  # the buffers did move: two rounds of running statistics
            assert int(alone.simulator.federation.global_buffers["bn1.num_batches_tracked"]) > 0


def test_skipped_federation_is_left_alone_and_bad_input_is_rejected():
    vector = VectorClientSelectionEnv(CONFIG, num_envs=2)
    vector.reset([1, 2])
    outputs = vector.step([None, {"client_0": 1}])
    assert outputs[0] is None and vector.envs[0].simulator.round == 0 and vector.envs[1].simulator.round == 1
    with pytest.raises(ValueError, match="client_1"):
        vector.step([{"client_1": 7}, None])
    with pytest.raises(ValueError, match="need 2 seeds"):
        vector.reset([1])


def test_training_with_several_envs_plays_the_same_episodes_as_one_env():
    tiny = tiny_config(num_rounds=3, local_epochs=1, batch_size=64, partition="iid", val_fraction=0.9)
    # no learning and no exploration: actions depend on the observations only
    config = VDNConfig(learning_starts=10_000, exploration_initial_eps=0.0, exploration_final_eps=0.0, n_step=1)
    one, sequential = train_vdn(tiny, config, episodes=5, progress=False, num_envs=1)
    three, side_by_side = train_vdn(tiny, config, episodes=5, progress=False, num_envs=3)
    assert three.episode == 5 and three.steps == one.steps == 15 and len(three.buffer) == 15
    key = lambda s: (round(s.team_return, 9), round(s.final_accuracy, 9), round(s.total_latency_s, 6))  # noqa: E731
    assert [key(s) for s in side_by_side] == [key(s) for s in sequential]
    assert sorted(three.buffer.reward[:15].tolist()) == pytest.approx(sorted(one.buffer.reward[:15].tolist()))
