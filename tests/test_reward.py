import math

import pytest

from fedenv.reward import team_reward, utility


def test_exp64_utility_values_by_hand():
    assert utility(0.0) == 0.0 and utility(1.0) == pytest.approx(1.0)
    assert utility(0.5) == pytest.approx((8.0 - 1.0) / 63.0)  # 64 ** 0.5 = 8
    assert utility(0.5, "linear") == 0.5
    with pytest.raises(ValueError, match="allowed: exp64, linear"):
        utility(0.5, "log")


def test_team_reward_by_hand():
    # U(0.5) - U(0) = 7/63; minus 0.1 * 10 s; minus 0.2 * 2 MB
    value = team_reward(0.5, 0.0, 10.0, 2.0, (1.0, 0.1, 0.2))
    assert value == pytest.approx(7 / 63 - 1.0 - 0.4)
    assert math.isclose(team_reward(0.3, 0.3, 0.0, 0.0, (1.0, 1.0, 1.0)), 0.0)
