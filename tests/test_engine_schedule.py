import numpy as np
import pytest
import torch

from fedenv.engine.schedule import join_schedules, make_schedule


def generators(n, base=0):
    return [torch.Generator().manual_seed(base + i) for i in range(n)]


def test_schedule_visits_each_sample_once_per_epoch():
    clients = [np.arange(10), np.arange(100, 103)]
    schedule = make_schedule(clients, epochs=2, batch_size=4, generators=generators(2))
    assert schedule.index.shape == (6, 2, 4)  # 2 epochs x ceil(10 / 4) steps for the larger client
    for k, indices in enumerate(clients):
        seen = schedule.index[:, k][schedule.valid[:, k]].tolist()
        assert sorted(seen) == sorted(indices.tolist() * 2)
    assert schedule.valid[2:, 1].sum() == 0  # the small client idles after its 2 single-batch epochs


def test_drop_last_leaves_out_partial_batches():
    schedule = make_schedule([np.arange(10)], epochs=1, batch_size=4, generators=generators(1), drop_last=True)
    assert schedule.index.shape == (2, 1, 4) and bool(schedule.valid.all())  # 10 = 4 + 4 + 2 left out


def test_a_clients_minibatches_do_not_depend_on_other_clients():
    a = make_schedule([np.arange(20), np.arange(50, 60)], 1, 5,
                      [torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)])
    b = make_schedule([np.arange(50, 60)], 1, 5, [torch.Generator().manual_seed(2)])
    assert torch.equal(a.index[:2, 1], b.index[:, 0])


def test_one_generator_per_client_is_required():
    with pytest.raises(ValueError, match="need one generator per client: 2 clients, 1 generators"):
        make_schedule([np.arange(3), np.arange(3)], 1, 2, generators(1))


def test_joined_schedules_put_clients_side_by_side_padding_the_shorter():
    long = make_schedule([np.arange(8)], 1, 2, generators(1))  # 4 steps
    short = make_schedule([np.arange(10, 12), np.arange(20, 24)], 1, 2, generators(2, base=5))  # 2 steps
    joined = join_schedules([long, short])
    assert joined.index.shape == (4, 3, 2)
    assert torch.equal(joined.index[:, 0], long.index[:, 0])
    assert torch.equal(joined.index[:2, 1:], short.index) and torch.equal(joined.valid[:2, 1:], short.valid)
    assert not joined.valid[2:, 1:].any() and not joined.index[2:, 1:].any()
