"""The select-all baselines' settings do what their papers' settings do: FedProx's proximal term moves
the local model, FedAdp's learning rate decays per round."""

import dataclasses

import numpy as np
import torch

from fedenv.baselines.select_all import FedAdpPolicy, FedProxPolicy
from fedenv.config import EnvConfig
from fedenv.data import load_dataset
from fedenv.engine import LocalTrainingConfig, train_together
from fedenv.engine.local_sgd import train_batched
from fedenv.engine.reference import train_reference
from fedenv.engine.schedule import Schedule, make_schedule
from fedenv.models import build_model
from fedenv.simulator import FederationSimulator


def flat(params: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.cat([p.reshape(p.shape[0], -1) for p in params.values()], dim=1)[0].double()


def test_fedprox_default_mu_pulls_the_local_model_back_by_its_proximal_term():
    dataset = load_dataset("mnist5k")
    model = build_model("mlp", dataset.input_shape, dataset.num_classes, seed=3)
    defaults = EnvConfig()
    mu = FedProxPolicy.env_overrides["fedprox_mu"]
    fedavg = LocalTrainingConfig(defaults.batch_size, defaults.lr)
    fedprox = dataclasses.replace(fedavg, fedprox_mu=mu)
    schedule = make_schedule([np.arange(640)], 1, defaults.batch_size, [torch.Generator().manual_seed(5)], False)
    global_params = {n: p.detach().clone() for n, p in model.named_parameters()}
    start = {n: p.unsqueeze(0) for n, p in global_params.items()}
    zeros = {n: torch.zeros_like(p) for n, p in start.items()}
    # FedAvg's trajectory step by step, and the proximal pull it would get to first order in mu:
    # FedProx's step t adds -lr mu (w_t - w_global), so after the round the models differ by about
    # -lr mu sum_{t >= 1} (w_t - w_global).
    params, pull = start, torch.zeros_like(flat(start))
    for step in range(schedule.index.shape[0]):
        pull += defaults.lr * mu * (flat(params) - flat(start))
        one_step = Schedule(schedule.index[step : step + 1], schedule.valid[step : step + 1])
        params = train_batched(model, params, zeros, global_params, dataset.train_x, dataset.train_y, one_step,
                               fedavg).params
    proximal = train_batched(model, start, zeros, global_params, dataset.train_x, dataset.train_y, schedule,
                             fedprox).params
    difference = flat(proximal) - flat(params)
    assert torch.linalg.norm(difference) > 0.5 * torch.linalg.norm(pull)
    assert torch.dot(difference, -pull) > 0.9 * torch.linalg.norm(difference) * torch.linalg.norm(pull)
    # measurable: at least 2% of the round's update (20 steps at lr 0.05, mu 0.1: ~ lr mu 20 / 2 = 5%)
    assert torch.linalg.norm(difference) > 0.02 * torch.linalg.norm(flat(params) - flat(start))


def serve_recording(process, requests: list):
    """Drive a simulator process, recording each request with what it started from."""
    try:
        request = next(process)
        while True:
            fed = request.federation
            requests.append((request, [g.get_state() for g in request.generators], fed.global_params, fed.config))
            request = process.send(train_together([request])[0])
    except StopIteration as stop:
        return stop.value


def test_fedadp_round_t_trains_with_lr_times_its_decay_to_the_power_t():
    decay = FedAdpPolicy.env_overrides["lr_decay"]
    config = EnvConfig(num_clients=4, clients_per_round=2, num_rounds=4, device="cpu", test_samples=100,
                       lr_decay=decay, aggregation="fedadp").validate()
    simulator = FederationSimulator(config)
    requests = []
    serve_recording(simulator.reset_process(seed=3), requests)
    for _ in range(3):
        serve_recording(simulator.play_round_process(np.ones(config.num_clients, dtype=bool)), requests)
        serve_recording(simulator.begin_round_process(), requests)
    request, states, global_params, used = requests[-1]  # round 3's probing epoch
    assert simulator.round == 3 and request.start is None
    fed, k = request.federation, len(request.clients)
    result = simulator._probe_result

    def reference(lr):
        generators = [torch.Generator().set_state(state) for state in states]
        schedule = make_schedule([fed.client_indices[c] for c in request.clients], 1, config.batch_size,
                                 generators, fed.drop_last)
        start = {n: p.unsqueeze(0).expand(k, *p.shape).clone() for n, p in global_params.items()}
        zeros = {n: torch.zeros_like(p) for n, p in start.items()}
        local = LocalTrainingConfig(config.batch_size, lr)
        return train_reference(fed.model, start, zeros, global_params, fed.train_x, fed.train_y, schedule, local)

    assert used.lr == config.lr * decay**3
    decayed, constant = reference(config.lr * decay**3), reference(config.lr)
    for name, value in result.params.items():
        assert torch.allclose(value, decayed.params[name], atol=1e-6, rtol=0), name
    assert max(float((result.params[n] - constant.params[n]).abs().max()) for n in result.params) > 1e-4
