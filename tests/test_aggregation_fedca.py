import numpy as np
import pytest
import torch

from fedenv.aggregation import FedCA, Uploads
from fedenv.config import EnvConfig


def uploads_with_logits(logits, labels, sizes, total, num_clients):
    calls = []

    def validation_logits():
        calls.append(1)
        return logits

    k = len(sizes)
    uploads = Uploads(np.arange(k), {"w": torch.zeros(k, 1)}, {}, {"w": torch.zeros(1)}, np.asarray(sizes, float),
                      total, num_clients, validation_logits, labels)
    return uploads, calls


@pytest.mark.parametrize("score", ["acc", "ce"])
def test_fedca_keeps_the_subset_that_scores_best_and_weights_it_as_fedpdp(score):
    labels = torch.tensor([0, 1])
    right = torch.tensor([[3.0, 0.0], [0.0, 3.0]])  # right on both samples
    wrong = torch.tensor([[0.0, 9.0], [9.0, 0.0]])  # confidently wrong on both: any average with it is wrong
    uploads, calls = uploads_with_logits(torch.stack([right, wrong, right]), labels, [10, 20, 30], 150.0, 6)
    rule = FedCA(np.full(6, 20.0), EnvConfig(aggregation="fedca", aggregation_options={"fedca": {"score": score}}))
    assert rule.needs_validation
    kept, weights = rule.weights(uploads)
    assert calls == [1]
    assert kept.tolist() == [0, 2]
    # FedPdp over S_opt, renormalised: (n_k / 150) * 6 / 2 / sum = n_k / (10 + 30)
    assert weights == pytest.approx([10 / 40, 30 / 40])
    options = {"fedca": {"score": score, "unnormalised": True}}
    literal = FedCA(np.full(6, 20.0), EnvConfig(aggregation="fedca", aggregation_options=options))
    kept, weights = literal.weights(uploads)
    # the paper's Eq. 5 as written: p_k |S| / |S_opt| = (n_k / 150) * 6 / 2, summing to 0.8
    assert kept.tolist() == [0, 2]
    assert weights == pytest.approx([10 / 150 * 3, 30 / 150 * 3])


def test_fedca_rejects_an_unknown_score():
    with pytest.raises(ValueError, match="aggregation rule 'fedca' option score='f1' is not known; allowed: acc, ce"):
        FedCA(np.ones(2), EnvConfig(aggregation="fedca", aggregation_options={"fedca": {"score": "f1"}}))
