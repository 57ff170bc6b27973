import numpy as np
import pytest
import torch

from fedenv.engine import LocalTrainingConfig, TrainRequest, train_together
from tests.test_engine_local_sgd import CONFIGS, generators, round_inputs


@pytest.mark.parametrize("config", CONFIGS)
def test_requests_of_two_federations_served_together_equal_each_served_alone(config):
    first, _, _, _ = round_inputs("mlp", config, num_clients=4)
    second, _, _, _ = round_inputs("mlp", config, num_clients=4)
    second.train_x, second.train_y = first.train_x, first.train_y  # one copy of the data, as in a vector env
    with torch.no_grad():
        for p in second.global_params.values():
            p.mul_(0.5)  # a different global model (the start and the FedProx anchor)

    def requests():  # fresh generators each time: they fix the minibatch order
        return [TrainRequest(first, np.array([0, 2]), 2, generators(2)),
                TrainRequest(second, np.array([3, 1, 0]), 1, generators(3, base=7))]

    together = train_together(requests())
    alone = [train_together([request])[0] for request in requests()]
    for joint, single in zip(together, alone):
        assert joint.samples.tolist() == single.samples.tolist()
        for name in single.params:
            assert torch.allclose(joint.params[name], single.params[name], atol=1e-6), name
    continued = train_together([TrainRequest(first, np.array([0, 2]), 1, generators(2), start=alone[0])])[0]
    assert not torch.equal(continued.params["net.1.bias"], alone[0].params["net.1.bias"])


def test_federations_with_other_optimiser_settings_are_not_trained_together():
    first, _, _, _ = round_inputs("mlp", CONFIGS[0], num_clients=2)
    other, _, _, _ = round_inputs("mlp", LocalTrainingConfig(batch_size=16, lr=0.1), num_clients=2)
    requests = [TrainRequest(first, np.array([0]), 1, generators(1)),
                TrainRequest(other, np.array([0]), 1, generators(1))]
    with pytest.raises(ValueError, match="must share training data and optimiser settings"):
        train_together(requests)
