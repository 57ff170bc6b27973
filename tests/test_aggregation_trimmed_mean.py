"""The coordinate-wise trimmed mean and median (fedenv.aggregation.trimmed_mean), against hand-worked
values and scipy's trim_mean / numpy's median, and inside an episode."""

import numpy as np
import pytest
import torch
from scipy import stats

from fedenv.aggregation.trimmed_mean import Median, TrimmedMean, trimmed_mean
from fedenv.config import EnvConfig
from fedenv.env import ClientSelectionEnv
from fedenv.testing import random_round
from tests.helpers import capture_uploads


def test_hand_worked_trimmed_means_and_medians():
    column = torch.tensor([[1.0], [2.0], [3.0], [4.0], [100.0]])
    assert trimmed_mean(column, 1).item() == pytest.approx(3.0)  # (2 + 3 + 4) / 3: the outlier is cut
    assert trimmed_mean(column, 0).item() == pytest.approx(22.0)  # the plain mean
    assert trimmed_mean(column, 2).item() == pytest.approx(3.0)  # the median of five
    assert trimmed_mean(column[:4], 1).item() == pytest.approx(2.5)  # median of four: mean of the two middle
    counts = torch.tensor([[3], [4], [10]])  # integer statistics are averaged as floats, rounded back
    assert trimmed_mean(counts, 1).tolist() == [4] and trimmed_mean(counts, 0).tolist() == [6]
    with pytest.raises(ValueError, match="cannot cut 2 of 4"):
        trimmed_mean(column[:4], 2)


@pytest.mark.parametrize("beta", [0.0, 0.1, 0.2, 0.3, 0.45])
@pytest.mark.parametrize("k", [1, 2, 5, 8])
def test_trimmed_mean_is_scipys_trim_mean_and_median_numpys(beta, k):
    sizes, uploads = random_round(k, num_clients=8, uploads=k)
    options = {"trimmed-mean": {"beta": beta}}
    trimmed = TrimmedMean(sizes, EnvConfig(aggregation="trimmed-mean", aggregation_options=options))
    median = Median(sizes, EnvConfig(aggregation="median")).aggregate(uploads)
    result = trimmed.aggregate(uploads)
    for name, stacked in uploads.params.items():
        values = stacked.double().numpy()
        np.testing.assert_allclose(result.params[name].numpy(), stats.trim_mean(values, beta, axis=0), rtol=1e-6)
        np.testing.assert_allclose(median.params[name].numpy(), np.median(values, axis=0), rtol=1e-6)
    assert result.kept_rows.tolist() == list(range(k)) and np.isnan(result.weights).all()


def test_beta_out_of_range_is_refused_with_the_range():
    with pytest.raises(ValueError, match=r"aggregation rule 'trimmed-mean' option beta=0.5 must be in \[0, 0.5\)"):
        EnvConfig(aggregation="trimmed-mean", aggregation_options={"trimmed-mean": {"beta": 0.5}}).validate()
    with pytest.raises(ValueError, match=r"aggregation rule 'median' takes no option 'beta'; it takes: none"):
        EnvConfig(aggregation="median", aggregation_options={"median": {"beta": 0.1}}).validate()


def test_the_median_rule_runs_an_episode_and_sets_the_global_model_to_the_median():
    env = ClientSelectionEnv(EnvConfig(aggregation="median", num_clients=3, clients_per_round=3, num_rounds=2,
                                       device="cpu", test_samples=100))
    env.reset(seed=0)
    federation = env.simulator.federation
    seen = capture_uploads(federation)
    _, _, _, _, infos = env.step({a: 1 for a in env.agents})
    for name, p in federation.global_params.items():
        assert torch.equal(p, seen["uploads"].params[name].median(dim=0).values), name  # K = 3: the middle value
    assert all(infos[a]["kept"] for a in env.possible_agents)
