"""FedCA's subset search (fedenv.aggregation.fedca) on logits built by hand: two good models, each
narrowly wrong on one sample, and a biased model that always predicts class 0."""

import pytest
import torch

from fedenv.aggregation.fedca import FEDCA_EXHAUSTIVE_LIMIT, fedca_subset


def biased_case():
    labels = torch.tensor([0, 1, 2, 3])
    eye = torch.eye(4)
    good_a = eye * 2.0
    good_a[3] = torch.tensor([0.0, 0.0, 1.0, 0.9])  # wrong on sample 3, narrowly
    good_b = eye * 2.0
    good_b[0] = torch.tensor([0.9, 0.0, 0.0, 1.0])  # wrong on sample 0, narrowly
    biased = torch.zeros(4, 4)
    biased[:, 0] = 10.0  # always predicts class 0
    return torch.stack([good_a, good_b, biased]), labels


@pytest.mark.parametrize("score", ["acc", "ce"])
def test_fedca_filters_the_biased_model(score):
    logits, labels = biased_case()
    assert fedca_subset(logits, labels, score).tolist() == [0, 1]  # together both good models are right 4/4


def test_fedca_greedy_search_above_the_limit_picks_one_of_each_good_model_and_stops():
    logits, labels = biased_case()
    many = torch.cat([logits[:2].repeat(6, 1, 1), logits[2:]])  # good_a at even rows, good_b at odd, biased last
    assert len(many) > FEDCA_EXHAUSTIVE_LIMIT
    # Step 1: good_a and good_b score the same alone (mirror images), the first (row 0) wins the tie.
    # Step 2: averaging in good_b fixes sample 3; another good_a changes nothing; the biased model hurts.
    # Step 3: the cross-entropy of a mixture is convex in its share, and minimal at 1/2 by symmetry, so a
    # third good model does not improve the score and the search stops.
    assert fedca_subset(many, labels, "ce").tolist() == [0, 1]
