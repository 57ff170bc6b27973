"""The shared Q-networks (agents/networks.py): shapes, permutation equivariance, the candidate pool, and the
set network against a plain per-agent loop."""

from __future__ import annotations

import pytest
import torch

from agents.config import VDNConfig
from agents.networks import Q_NETWORKS, DeepSetsQNetwork, build_q_network, input_columns, output_layer
from agents.trainer import Trainer
from tests.helpers import tiny_config

D = 3


def networks() -> list:
    """Every registered Q-network, built for d = 3 with two hidden layers of 8."""
    torch.manual_seed(0)
    return [(name, build_q_network(name, D, (8, 8))) for name in Q_NETWORKS]


def inputs(b=4, k=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    candidate = torch.ones(b, k)
    candidate[:, 0] = 0.0  # client 0 is no candidate
    return torch.rand(b, k, D, generator=g), candidate


@pytest.mark.parametrize("name,network", networks())
def test_values_follow_their_client_when_the_clients_are_reordered(name, network):
    obs, candidate = inputs()
    q = network(obs, candidate)
    assert q.shape == (4, 5, 2)
    order = torch.tensor([3, 0, 4, 1, 2])
    torch.testing.assert_close(network(obs[:, order], candidate[:, order]), q[:, order])


@pytest.mark.parametrize("name,network", networks())
def test_a_non_candidates_observation_changes_no_candidates_values(name, network):
    obs, candidate = inputs()
    changed = obs.clone()
    changed[:, 0] += 5.0
    torch.testing.assert_close(network(changed, candidate)[:, 1:], network(obs, candidate)[:, 1:])


def test_the_set_network_equals_a_loop_over_agents_with_the_pool_worked_by_hand():
    torch.manual_seed(1)
    network = DeepSetsQNetwork(D, (6, 5))
    obs, candidate = inputs(b=1, k=4, seed=2)
    q = network(obs, candidate)[0]
    embeddings = [network.phi(obs[0, n]) for n in range(4)]
    members = [e for e, c in zip(embeddings, candidate[0]) if c > 0]
    mean = sum(members) / len(members)
    maximum = torch.stack([torch.stack(members)[:, j].max() for j in range(6)])
    for n in range(4):
        torch.testing.assert_close(q[n], network.rho(torch.cat([embeddings[n], mean, maximum])))


def test_the_set_networks_read_the_other_candidates_and_the_mlp_does_not():
    obs, candidate = inputs()
    changed = obs.clone()
    changed[:, 1] += 1.0  # another candidate's observation
    for name, network in networks():
        moved = (network(changed, candidate)[:, 2:] - network(obs, candidate)[:, 2:]).abs().max()
        assert bool(moved > 1e-4) is (name != "mlp"), name


@pytest.mark.parametrize("name", [n for n in Q_NETWORKS if n != "mlp"])
def test_one_set_network_serves_any_number_of_candidates(name):
    """Mean, max and attention over a set are those over the set repeated: a federation of twice the clients
    with every candidate doubled gives each of them the values it had."""
    torch.manual_seed(0)
    network = build_q_network(name, D, (8, 8))
    obs, candidate = inputs(k=4)
    doubled = network(obs.repeat(1, 2, 1), candidate.repeat(1, 2))
    torch.testing.assert_close(doubled[:, :4], network(obs, candidate))
    torch.testing.assert_close(doubled[:, 4:], network(obs, candidate))


@pytest.mark.parametrize("name,network", networks())
def test_a_round_without_candidates_gives_finite_values_and_one_agent_takes_no_batch_dimension(name, network):
    obs, candidate = inputs()
    assert torch.isfinite(network(obs, torch.zeros(4, 5))).all()
    torch.testing.assert_close(network(obs[2], candidate[2]), network(obs, candidate)[2])


def test_the_set_networks_learn_a_value_set_by_the_slowest_candidate_which_the_mlp_cannot():
    """Target ``Q_n(., 1) = max over candidates of feature 0`` (a round's latency is a maximum): no function
    of ``o_n`` alone fits it, the set networks' pools do."""
    losses = {}
    for name in Q_NETWORKS:
        torch.manual_seed(0)
        network = build_q_network(name, D, (16, 16))
        optimiser = torch.optim.Adam(network.parameters(), lr=1e-2)
        g = torch.Generator().manual_seed(1)
        for _ in range(400):
            obs = torch.rand(64, 5, D, generator=g)
            candidate = (torch.rand(64, 5, generator=g) < 0.7).float()
            candidate[:, 0] = 1.0
            target = obs[..., 0].masked_fill(candidate <= 0, 0.0).amax(dim=1, keepdim=True).expand(-1, 5)
            error = (network(obs, candidate)[..., 1] - target) * candidate
            loss = (error ** 2).sum() / candidate.sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
        losses[name] = float(loss.detach())
    assert all(losses[name] < 0.2 * losses["mlp"] for name in Q_NETWORKS if name != "mlp"), losses


def test_an_attention_width_that_the_heads_do_not_divide_is_refused():
    with pytest.raises(ValueError, match="hidden\\[0\\]=10 must be a multiple of its 4 heads"):
        build_q_network("attention", D, (10, 8))


def test_an_unknown_network_is_refused_with_the_registered_names():
    with pytest.raises(ValueError, match=f"q_network='gnn' is not known; allowed: {', '.join(Q_NETWORKS)}$"):
        VDNConfig(q_network="gnn").validate()


def test_fine_tuning_refuses_a_checkpoint_of_another_network():
    source = Trainer(tiny_config(), VDNConfig(q_network="deepsets"), episodes=1)
    document = {**source.policy_payload(), "vdn_config": source.vdn_config}
    tuned = Trainer(tiny_config(), VDNConfig(), episodes=1)
    with pytest.raises(ValueError, match="Q-network is 'deepsets', this run's 'mlp'"):
        tuned.initialise_from(document)


@pytest.mark.parametrize("name", list(Q_NETWORKS))
def test_a_network_on_selected_inputs_is_the_plain_network_on_those_columns(name):
    columns = [0, 2]
    torch.manual_seed(0)
    selected = build_q_network(name, D, (8, 8), columns)
    plain = build_q_network(name, len(columns), (8, 8))
    plain.load_state_dict({key.removeprefix("network."): value for key, value in selected.state_dict().items()})
    obs, candidate = inputs()
    expected = plain(obs[..., columns], candidate)
    assert torch.allclose(selected(obs, candidate), expected)
    changed = obs.clone()
    changed[..., 1] = torch.rand(changed[..., 1].shape)  # the column it does not read
    assert torch.allclose(selected(changed, candidate), expected)
    assert all(key.startswith("network.") for key in selected.state_dict())  # the columns are not weights


def test_input_columns_follow_the_layout_and_name_what_is_not_in_it():
    layout = ["probing_loss", "data_size", "round_fraction", "global_accuracy"]
    assert input_columns(layout, ()) is None
    assert input_columns(layout, ("round_fraction", "probing_loss")) == [0, 2]
    with pytest.raises(ValueError, match=r"\['round_index'\] are not features of the observation; its features: "
                                         r"probing_loss, data_size, round_fraction, global_accuracy"):
        input_columns(layout, ("round_fraction", "round_index"))
    with pytest.raises(ValueError, match=r"columns \[1, 3\] must be one or more of 0..2"):
        build_q_network("mlp", 3, (8,), [1, 3])


@pytest.mark.parametrize("columns", [None, [0, 2]])
@pytest.mark.parametrize("name", list(Q_NETWORKS))
def test_the_output_layer_is_the_one_that_writes_the_values(name, columns):
    torch.manual_seed(0)
    network = build_q_network(name, D, (8, 8), columns)
    obs, candidate = inputs()
    assert network(obs, candidate).abs().min() > 0  # random weights: no value is 0 by chance
    layer = output_layer(network)
    with torch.no_grad():  # zero it: every value is 0, which zeroing any earlier layer would not give (biases)
        layer.weight.zero_()
        layer.bias.zero_()
    assert torch.equal(network(obs, candidate), torch.zeros(4, 5, 2))
    with pytest.raises(ValueError, match=r"ReLU has no nn\.Linear layer"):
        output_layer(torch.nn.ReLU())
